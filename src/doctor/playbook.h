// SPDX-License-Identifier: Apache-2.0
//
// The playbook: every check in the order of the four questions, which of
// them a run selects (--only, --skip), running them over gathered inputs,
// and the result: findings worst first per question, checks that passed,
// checks skipped and why, and the exit code of the worst severity.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "doctor/checks.h"

namespace tarmac::doctor {

struct CheckInfo {
  const char* name;
  Question question;
  const char* what;  // One line for --help and docs.
  CheckFn run;
};

// Every check, in playbook order.
const std::vector<CheckInfo>& AllChecks();
// The check named `name`; null when there is none.
const CheckInfo* FindCheck(std::string_view name);

struct Selection {
  std::set<std::string> only;  // Checks or questions; empty: all.
  std::set<std::string> skip;  // Checks or questions.
};

// kInvalidArgument naming an unknown check or question, with the known ones.
Status ValidateSelection(const Selection& selection);
bool IsSelected(const CheckInfo& check, const Selection& selection);
// Whether any selected check is of `question`.
bool IsQuestionSelected(Question question, const Selection& selection);

struct DoctorResult {
  std::string hostname;
  bool through_agent = false;
  size_t gpu_count = 0;
  std::vector<Finding> findings;  // By question, then worst first.
  std::map<Question, Severity> verdicts;
  std::vector<std::string> passed;  // Checks run with nothing above info... nothing to say.
  std::vector<Skipped> skipped;
  Severity worst = Severity::kOk;
};

DoctorResult RunPlaybook(const DoctorInputs& inputs, const Selection& selection);

// Exit codes by worst severity: 0 ok or info, 4 warning, 5 critical.
inline constexpr int kExitDoctorWarning = 4;
inline constexpr int kExitDoctorCritical = 5;
int ExitCodeOf(Severity worst);

}  // namespace tarmac::doctor
