// SPDX-License-Identifier: Apache-2.0
#include "doctor/finding.h"

#include "common/enum_names.h"

namespace tarmac::doctor {

namespace {

constexpr std::pair<Severity, const char*> kSeverityNames[] = {{Severity::kOk, "ok"},
                                                               {Severity::kInfo, "info"},
                                                               {Severity::kWarning, "warning"},
                                                               {Severity::kCritical, "critical"}};
constexpr std::pair<Question, const char*> kQuestionNames[] = {{Question::kGpus, "gpus"},
                                                               {Question::kPipeline, "pipeline"},
                                                               {Question::kInterconnect, "interconnect"},
                                                               {Question::kScheduler, "scheduler"}};

}  // namespace

const char* SeverityName(Severity severity) { return EnumName(kSeverityNames, severity); }

Finding MakeFinding(std::string check, Severity severity, std::optional<int> gpu, std::string summary,
                    std::string evidence, std::string meaning, std::string action) {
  Finding f;
  f.check = std::move(check);
  f.severity = severity;
  f.gpu = gpu;
  f.summary = std::move(summary);
  f.evidence = std::move(evidence);
  f.meaning = std::move(meaning);
  f.action = std::move(action);
  return f;
}

const char* QuestionName(Question question) { return EnumName(kQuestionNames, question); }

const char* QuestionTitle(Question question) {
  switch (question) {
    case Question::kGpus:
      return "Are the GPUs busy, and healthy?";
    case Question::kPipeline:
      return "Is the data pipeline feeding them?";
    case Question::kInterconnect:
      return "Is the interconnect healthy?";
    case Question::kScheduler:
      return "Is the scheduler telling the truth?";
  }
  return "";
}

}  // namespace tarmac::doctor
