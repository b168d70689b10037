// SPDX-License-Identifier: Apache-2.0
#include "doctor/doctor_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tarmac::doctor {
namespace {

std::string Upper(const char* s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string Paint(bool use_color, Severity s, const std::string& text) {
  if (!use_color) return text;
  const char* code = s == Severity::kCritical ? "\033[31m" : s == Severity::kWarning ? "\033[33m" : "\033[32m";
  return code + text + "\033[0m";
}

// `text` with every line after the first indented by `indent`.
std::string Indent(const std::string& text, const std::string& indent) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += indent;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  // No line of spaces alone.
  std::string clean;
  size_t start = 0;
  while (start <= out.size()) {
    size_t end = out.find('\n', start);
    std::string line = out.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.find_first_not_of(' ') == std::string::npos) line.clear();
    clean += line;
    if (end == std::string::npos) break;
    clean += '\n';
    start = end + 1;
  }
  return clean;
}

}  // namespace

std::string RenderText(const DoctorResult& r, bool use_color) {
  int critical = 0, warning = 0;
  for (const Finding& f : r.findings) {
    critical += f.severity == Severity::kCritical ? 1 : 0;
    warning += f.severity == Severity::kWarning ? 1 : 0;
  }
  std::string out = fmt::format("tarmac doctor on {}: {} GPU{}, {}\n", r.hostname, r.gpu_count,
                                r.gpu_count == 1 ? "" : "s",
                                r.through_agent ? "readings from the agent" : "read directly (no agent)");
  std::string verdict = critical + warning == 0
                            ? "no problems found"
                            : fmt::format("{} critical, {} warning{}", critical, warning, warning == 1 ? "" : "s");
  out += fmt::format("verdict: {}\n", Paint(use_color, r.worst, verdict));
  int n = 0;
  for (Question q : kQuestions) {
    auto v = r.verdicts.find(q);
    if (v == r.verdicts.end()) continue;
    out += fmt::format("\n{}. {}  {}\n", ++n, QuestionTitle(q),
                       Paint(use_color, v->second, Upper(SeverityName(v->second))));
    for (const Finding& f : r.findings) {
      if (f.question != q) continue;
      out += fmt::format("  {} {}\n", Paint(use_color, f.severity, fmt::format("{:<8}", Upper(SeverityName(f.severity)))),
                         f.summary);
      if (!f.evidence.empty()) out += fmt::format("           evidence: {}\n", Indent(f.evidence, "             "));
      out += fmt::format("           meaning:  {}\n", f.meaning);
      out += fmt::format("           next:     {}\n", f.action);
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
    for (const Skipped& s : r.skipped) out += fmt::format("  {}: {}\n", s.check, s.why);
  }
  return out;
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
      findings.push_back({{"check", f.check},
                          {"severity", SeverityName(f.severity)},
                          {"gpu", f.gpu ? nlohmann::json(*f.gpu) : nlohmann::json(nullptr)},
                          {"summary", f.summary},
                          {"evidence", f.evidence},
                          {"meaning", f.meaning},
                          {"action", f.action}});
    }
    j["questions"].push_back(
        {{"id", QuestionName(q)}, {"title", QuestionTitle(q)}, {"severity", SeverityName(v->second)}, {"findings", findings}});
  }
  j["passed"] = r.passed;
  j["skipped"] = nlohmann::json::array();
  for (const Skipped& s : r.skipped) j["skipped"].push_back({{"check", s.check}, {"why", s.why}});
  return j.dump(2) + "\n";
}

}  // namespace tarmac::doctor
