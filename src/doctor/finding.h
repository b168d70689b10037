// SPDX-License-Identifier: Apache-2.0
//
// What the doctor says: findings, each under one of the playbook's four
// questions, with a severity, the evidence (numbers), what it means and
// what to do next. Value types; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tarmac::doctor {

enum class Severity { kOk = 0, kInfo = 1, kWarning = 2, kCritical = 3 };

// "ok", "info", "warning", "critical".
const char* SeverityName(Severity severity);

// The playbook's questions, in the order it asks them.
enum class Question { kGpus = 0, kPipeline = 1, kInterconnect = 2, kScheduler = 3 };
inline constexpr Question kQuestions[] = {Question::kGpus, Question::kPipeline, Question::kInterconnect,
                                          Question::kScheduler};

// "gpus", "pipeline", "interconnect", "scheduler".
const char* QuestionName(Question question);
// "Are the GPUs busy, and healthy?", ...
const char* QuestionTitle(Question question);

struct Finding {
  std::string check;                    // The check that found it: "xid", "throttle", ...
  Question question = Question::kGpus;  // Set by the playbook from the check.
  Severity severity = Severity::kInfo;
  std::optional<int> gpu;  // The GPU index it concerns, if one.
  std::string summary;     // One line: "gpu 3 fell off the bus (Xid 79)".
  std::string evidence;    // The numbers behind it.
  std::string meaning;     // What it means.
  std::string action;      // What to do next.
  // The command line of the process it concerns, if one. Only here, never
  // in the texts above (they name the process by its name): a command line
  // may hold a secret, and the web leaves this field out
  // (agent/web_redaction.h).
  std::string command;
};

Finding MakeFinding(std::string check, Severity severity, std::optional<int> gpu, std::string summary,
                    std::string evidence, std::string meaning, std::string action);

// A check that did not run, and why ("needs root", "--quick", "--skip").
struct Skipped {
  std::string check;
  std::string why;
};

}  // namespace tarmac::doctor
