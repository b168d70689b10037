// SPDX-License-Identifier: Apache-2.0
#include "config/toml_section.h"

#include <fmt/format.h>

#include <algorithm>

namespace tarmac::config {
namespace {

using std::chrono::milliseconds;

// A duration as a person writes it: "100ms", "1m", "30d".
std::string DurationText(milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0 || ms % 1000 != 0) return fmt::format("{}ms", ms);
  int64_t s = ms / 1000;
  if (s % 86400 == 0) return fmt::format("{}d", s / 86400);
  if (s % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

}  // namespace

TomlSection::TomlSection(const toml::table& table, std::string prefix, Errors* errors)
    : reader_(table, std::move(prefix), errors) {}

bool TomlSection::Has(std::string_view key) { return reader_.Find(key) != nullptr; }

void TomlSection::Fail(std::string_view key, std::string_view what, std::string_view at) {
  if (const toml::node* n = reader_.table().get(at.empty() ? key : at)) reader_.Fail(*n, key, what);
}

void TomlSection::Interval(std::string_view key, milliseconds min, milliseconds max, milliseconds* out) {
  std::optional<milliseconds> value;
  reader_.Duration(key, &value);
  if (!value) return;
  if (*value < min || *value > max) {
    Fail(key, fmt::format("must be from {} to {}", DurationText(min), DurationText(max)));
    return;
  }
  *out = *value;
}

void TomlSection::OneOf(std::string_view key, std::initializer_list<std::string_view> allowed,
                        std::string* out) {
  std::string value = *out;
  reader_.String(key, &value);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string names;
    for (std::string_view a : allowed) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", a);
    Fail(key, fmt::format("expected one of {}", names));
    return;
  }
  *out = value;
}

std::unique_ptr<ConfigSection> TomlSection::Table(std::string_view key, std::string_view what) {
  const toml::node* n = reader_.Find(key);
  if (n == nullptr) return nullptr;
  if (!n->is_table()) {
    reader_.Fail(*n, key, fmt::format("expected {}", what));
    return nullptr;
  }
  return std::make_unique<TomlSection>(*n->as_table(), reader_.Key(key), reader_.errors());
}

std::vector<std::string> TomlSection::Keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, node] : reader_.table()) keys.emplace_back(key.str());
  return keys;
}

}  // namespace tarmac::config
