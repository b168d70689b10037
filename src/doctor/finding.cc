// SPDX-License-Identifier: Apache-2.0
#include "doctor/finding.h"

namespace tarmac::doctor {

const char* SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kOk: return "ok";
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "ok";
}

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

const char* QuestionName(Question question) {
  switch (question) {
    case Question::kGpus: return "gpus";
    case Question::kPipeline: return "pipeline";
    case Question::kInterconnect: return "interconnect";
    case Question::kScheduler: return "scheduler";
  }
  return "gpus";
}

const char* QuestionTitle(Question question) {
  switch (question) {
    case Question::kGpus: return "Are the GPUs busy, and healthy?";
    case Question::kPipeline: return "Is the data pipeline feeding them?";
    case Question::kInterconnect: return "Is the interconnect healthy?";
    case Question::kScheduler: return "Is the scheduler telling the truth?";
  }
  return "";
}

}  // namespace tarmac::doctor
