// SPDX-License-Identifier: Apache-2.0
//
// Writes the Prometheus text exposition format (version 0.0.4): one
// # HELP and # TYPE per family, its samples right after, label values and
// help text escaped, and no NaN or infinity (such a sample is left out:
// absent, never a made-up number). Pure; one writer per scrape.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tarmac::metrics {

using Labels = std::vector<std::pair<std::string_view, std::string>>;

// `labels` and one more.
inline Labels With(Labels labels, std::string_view key, std::string value) {
  labels.emplace_back(key, std::move(value));
  return labels;
}

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

class Exposition {
 public:
  // Starts a family. `type`: "gauge", "counter" or "info"-style gauges.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // A sample of the current family (`name` may carry a suffix, e.g. _total
  // is part of the family name already).
  void Sample(std::string_view name, const Labels& labels, double value);
  const std::string& text() const { return out_; }

  static std::string EscapeLabelValue(std::string_view value);

 private:
  std::string out_;
};

}  // namespace tarmac::metrics
