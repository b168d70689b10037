// SPDX-License-Identifier: Apache-2.0
//
// One section of the agent's config file ([sampler], [store], ...), as the
// module that owns the section reads it. Each module declares its section's
// keys, ranges and defaults once, in its own `Read...Section` function over
// this interface, and knows nothing of the file format: the config loader
// (config/config.h) implements it over TOML and turns every problem into
// "FILE:LINE: key 'section.key': what".
//
// Contract of every reader: a key that is absent leaves *out as it is (the
// default); a key that is present but wrong reports one problem and also
// leaves *out as it is; a key the section's readers never asked for is
// reported as unknown. Not thread-safe; one section is read on one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tarmac {

class ConfigSection {
 public:
  virtual ~ConfigSection() = default;

  // Whether the key is present (the reader functions below also note it as
  // read).
  virtual bool Has(std::string_view key) = 0;
  // Reports a problem with `key`, at the line of `at` (`key` when empty);
  // nothing when that key is absent.
  virtual void Fail(std::string_view key, std::string_view what, std::string_view at = {}) = 0;

  virtual void String(std::string_view key, std::string* out) = 0;
  // Whether the key holds the string `word` ("auto"), for a key that takes
  // a word or a value of another type; reports nothing either way.
  virtual bool IsWord(std::string_view key, std::string_view word) = 0;
  virtual void Bool(std::string_view key, bool* out) = 0;
  virtual void Integer(std::string_view key, int64_t* out, int64_t min, int64_t max) = 0;
  virtual void Number(std::string_view key, double* out, double min, double max) = 0;
  // A size: bytes, or a string such as "80GiB".
  virtual void Bytes(std::string_view key, int64_t* out) = 0;
  // A duration ("30s", "10m" or seconds) from `min` to `max`.
  virtual void Interval(std::string_view key, std::chrono::milliseconds min, std::chrono::milliseconds max,
                        std::chrono::milliseconds* out) = 0;
  // One of `allowed`.
  virtual void OneOf(std::string_view key, std::initializer_list<std::string_view> allowed,
                     std::string* out) = 0;
  virtual void Strings(std::string_view key, std::vector<std::string>* out) = 0;
  // A nested table (KEY = { ... } or [section.key]); null when absent or
  // not a table (then reported as "expected <what>").
  virtual std::unique_ptr<ConfigSection> Table(std::string_view key, std::string_view what) = 0;
  // The keys of this table, sorted.
  virtual std::vector<std::string> Keys() const = 0;
};

// For a duration kept in whole seconds: a part of a second is refused with
// the key, never dropped. Returns whether `value` is whole.
inline bool RequireWholeSeconds(ConfigSection& section, std::string_view key,
                                std::chrono::milliseconds value) {
  if (value % std::chrono::seconds(1) == std::chrono::milliseconds(0)) return true;
  section.Fail(key, "whole seconds only (such as \"90s\" or \"10m\")");
  return false;
}

// Convenience for integer fields of other widths.
template <typename Int>
void ReadInteger(ConfigSection& section, std::string_view key, Int* out, int64_t min, int64_t max) {
  int64_t value = static_cast<int64_t>(*out);
  section.Integer(key, &value, min, max);
  *out = static_cast<Int>(value);
}

}  // namespace tarmac
