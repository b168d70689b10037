// SPDX-License-Identifier: Apache-2.0
#include "doctor/doctor_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/terminal_text.h"
#include "common/text_wrap.h"

namespace tarmac::doctor {
namespace {

std::string Upper(const char* s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string Paint(bool use_color, Severity s, const std::string& text) {
  if (!use_color) return text;
  const char* code = s == Severity::kCritical  ? "\033[31m"
                     : s == Severity::kWarning ? "\033[33m"
                                               : "\033[32m";
  return code + text + "\033[0m";
}

}  // namespace

std::string RenderText(const DoctorResult& r, bool use_color) {
  int critical = 0, warning = 0;
  for (const Finding& f : r.findings) {
    critical += f.severity == Severity::kCritical ? 1 : 0;
    warning += f.severity == Severity::kWarning ? 1 : 0;
  }
  std::string out =
      fmt::format("tarmac doctor on {}: {} GPU{}, {}\n", r.hostname, r.gpu_count, r.gpu_count == 1 ? "" : "s",
                  r.through_agent ? "readings from the agent" : "read directly (no agent)");
  std::string verdict = critical + warning == 0 ? "no problems found"
                                                : fmt::format("{} critical, {} warning{}", critical, warning,
                                                              warning == 1 ? "" : "s");
  out += fmt::format("verdict: {}\n", Paint(use_color, r.worst, verdict));
  int n = 0;
  for (Question q : kQuestions) {
    auto v = r.verdicts.find(q);
    if (v == r.verdicts.end()) continue;
    out += fmt::format("\n{}. {}  {}\n", ++n, QuestionTitle(q),
                       Paint(use_color, v->second, Upper(SeverityName(v->second))));
    for (const Finding& f : r.findings) {
      if (f.question != q) continue;
      // Summaries and evidence quote names a user chose (a process's, a
      // cgroup's): through the one terminal filter.
      out += fmt::format("  {} {}\n",
                         Paint(use_color, f.severity, fmt::format("{:<8}", Upper(SeverityName(f.severity)))),
                         WrapText(ForTerminal(f.summary), 100, 11, 11));
      // Fitted to 100 columns, continuation lines under the text.
      constexpr size_t kWidth = 100;
      constexpr size_t kTextColumn = 21;  // After "           evidence: ".
      if (!f.evidence.empty()) {
        out += fmt::format("           evidence: {}\n",
                           WrapText(ForTerminal(f.evidence), kWidth, kTextColumn, kTextColumn));
      }
      if (!f.command.empty()) {
        out += fmt::format("           command:  {}\n",
                           WrapText(ForTerminal(f.command), kWidth, kTextColumn, kTextColumn));
      }
      out += fmt::format("           meaning:  {}\n", WrapText(f.meaning, kWidth, kTextColumn, kTextColumn));
      out += fmt::format("           next:     {}\n", WrapText(f.action, kWidth, kTextColumn, kTextColumn));
    }
    std::vector<std::string> passed;
    for (const CheckInfo& c : AllChecks()) {
      if (c.question == q && std::find(r.passed.begin(), r.passed.end(), c.name) != r.passed.end()) {
        passed.push_back(c.name);
      }
    }
    if (!passed.empty()) out += fmt::format("  passed: {}\n", fmt::join(passed, ", "));
  }
  if (!r.skipped.empty()) {
    out += "\nnot checked:\n";
    for (const Skipped& s : r.skipped) {
      std::string head = fmt::format("  {}: ", s.check);
      out += head + WrapText(ForTerminal(s.why), 100, head.size(), 4) + "\n";
    }
  }
  return out;
}

nlohmann::json FindingToJson(const Finding& f) {
  nlohmann::json j = {{"check", f.check},
                      {"severity", SeverityName(f.severity)},
                      {"gpu", f.gpu ? nlohmann::json(*f.gpu) : nlohmann::json(nullptr)},
                      {"summary", f.summary},
                      {"evidence", f.evidence},
                      {"meaning", f.meaning},
                      {"action", f.action}};
  if (!f.command.empty()) j["command"] = f.command;
  return j;
}

std::string RenderJson(const DoctorResult& r) {
  nlohmann::json j;
  j["hostname"] = r.hostname;
  j["through_agent"] = r.through_agent;
  j["gpu_count"] = r.gpu_count;
  j["severity"] = SeverityName(r.worst);
  j["questions"] = nlohmann::json::array();
  for (Question q : kQuestions) {
    auto v = r.verdicts.find(q);
    if (v == r.verdicts.end()) continue;
    nlohmann::json findings = nlohmann::json::array();
    for (const Finding& f : r.findings) {
      if (f.question != q) continue;
      findings.push_back(FindingToJson(f));
    }
    j["questions"].push_back({{"id", QuestionName(q)},
                              {"title", QuestionTitle(q)},
                              {"severity", SeverityName(v->second)},
                              {"findings", findings}});
  }
  j["passed"] = r.passed;
  j["skipped"] = nlohmann::json::array();
  for (const Skipped& s : r.skipped) j["skipped"].push_back({{"check", s.check}, {"why", s.why}});
  return j.dump(2) + "\n";
}

}  // namespace tarmac::doctor
