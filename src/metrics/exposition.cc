// SPDX-License-Identifier: Apache-2.0
#include "metrics/exposition.h"

#include <fmt/format.h>

#include <cmath>

namespace tarmac::metrics {

std::string Exposition::EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// Appends `value` escaped; most values need no escape and are appended whole.
void AppendEscaped(std::string_view value, std::string* out) {
  if (value.find_first_of("\\\"\n") == std::string_view::npos) {
    out->append(value);
    return;
  }
  out->append(Exposition::EscapeLabelValue(value));
}

}  // namespace

void Exposition::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_.append("# HELP ").append(name).append(" ");
  if (help.find_first_of("\\\n") == std::string_view::npos) {
    out_.append(help);  // Most help needs no escape.
  } else {
    for (char c : help) out_.append(c == '\\' ? "\\\\" : c == '\n' ? "\\n" : std::string_view(&c, 1));
  }
  out_.append("\n# TYPE ").append(name).append(" ").append(type).append("\n");
}

void Exposition::Sample(std::string_view name, const Labels& labels, double value) {
  if (!std::isfinite(value)) return;
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [key, v] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += key;
      out_ += "=\"";
      AppendEscaped(v, &out_);
      out_ += '"';
    }
    out_ += '}';
  }
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    fmt::format_to(std::back_inserter(out_), " {}\n", static_cast<int64_t>(value));
  } else {
    fmt::format_to(std::back_inserter(out_), " {}\n", value);
  }
}

}  // namespace tarmac::metrics
