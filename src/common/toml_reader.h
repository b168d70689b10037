// SPDX-License-Identifier: Apache-2.0
//
// Typed reading of TOML tables with errors that name the file, the line and
// the key, shared by the scenario parser and the config loader. toml++ parses
// the syntax (with line numbers, built without exceptions); a Reader wraps
// one table, converts values (numbers, sizes such as "80GiB", durations such
// as "30s"), checks ranges, and reports every key it was not asked for as
// unknown. Header-only, like toml++ itself; include only from .cc files that
// link tarmac_toml.
#pragma once

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/closest_name.h"
#include "common/units.h"

namespace tarmac {

// Collects every error, each as "SOURCE:LINE: key 'KEY': what".
class Errors {
 public:
  explicit Errors(std::string_view source) : source_(source) {}
  void Add(int line, std::string_view key, std::string_view what) {
    if (key.empty()) {
      all_.push_back(fmt::format("{}:{}: {}", source_, line, what));
    } else {
      all_.push_back(fmt::format("{}:{}: key '{}': {}", source_, line, key, what));
    }
  }
  bool any() const { return !all_.empty(); }
  // The first error: the root cause when later ones follow from it.
  const std::string& first() const { return all_.front(); }
  const std::vector<std::string>& all() const { return all_; }

 private:
  std::string source_;
  std::vector<std::string> all_;
};

inline int LineOf(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

// Reads typed keys out of one table and reports unknown keys.
class Reader {
 public:
  Reader(const toml::table& table, std::string prefix, Errors* errors)
      : table_(table), prefix_(std::move(prefix)), errors_(errors) {}

  std::string Key(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
  }

  const toml::node* Find(std::string_view key) {
    seen_.emplace_back(key);
    return table_.get(key);
  }

  void Fail(const toml::node& node, std::string_view key, std::string_view what) {
    errors_->Add(LineOf(node), Key(key), what);
  }

  void String(std::string_view key, std::string* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (!n->is_string()) return Fail(*n, key, "expected a string");
    *out = n->as_string()->get();
  }

  void Bool(std::string_view key, bool* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (!n->is_boolean()) return Fail(*n, key, "expected true or false");
    *out = n->as_boolean()->get();
  }

  // A number as a person writes it: 1000000, not 1e+06.
  static std::string Plain(double v) {
    if (v == static_cast<double>(static_cast<int64_t>(v))) return fmt::format("{}", static_cast<int64_t>(v));
    return fmt::format("{}", v);
  }

  template <typename Int>
  void Integer(std::string_view key, Int* out, int64_t min, int64_t max) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (!n->is_integer()) return Fail(*n, key, "expected an integer");
    int64_t v = n->as_integer()->get();
    if (v < min || v > max) {
      return Fail(*n, key, fmt::format("must be from {} to {}", min, max));
    }
    *out = static_cast<Int>(v);
  }

  void Number(std::string_view key, double* out, double min, double max) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    double v = 0;
    if (n->is_integer()) {
      v = static_cast<double>(n->as_integer()->get());
    } else if (n->is_floating_point()) {
      v = n->as_floating_point()->get();
    } else {
      return Fail(*n, key, "expected a number");
    }
    if (!(v >= min && v <= max)) {
      return Fail(*n, key, fmt::format("must be from {} to {}", Plain(min), Plain(max)));
    }
    *out = v;
  }

  // A size: an integer (bytes) or a string such as "80GiB".
  void Bytes(std::string_view key, int64_t* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (n->is_integer()) {
      if (n->as_integer()->get() < 0) return Fail(*n, key, "must not be negative");
      *out = n->as_integer()->get();
      return;
    }
    if (!n->is_string()) return Fail(*n, key, "expected a size such as \"80GiB\"");
    Result<int64_t> bytes = ParseBytes(n->as_string()->get());
    if (!bytes.ok()) return Fail(*n, key, bytes.status().message());
    *out = bytes.value();
  }

  // A duration: an integer (seconds) or a string such as "30s", "10m".
  void Duration(std::string_view key, std::optional<std::chrono::milliseconds>* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    if (n->is_integer()) {
      if (n->as_integer()->get() < 0) return Fail(*n, key, "must not be negative");
      *out = std::chrono::seconds(n->as_integer()->get());
      return;
    }
    if (!n->is_string()) return Fail(*n, key, "expected a duration such as \"30s\"");
    Result<std::chrono::milliseconds> d = ParseDuration(n->as_string()->get());
    if (!d.ok()) return Fail(*n, key, d.status().message());
    *out = d.value();
  }

  // An array of strings.
  void Strings(std::string_view key, std::vector<std::string>* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return;
    const toml::array* a = n->as_array();
    if (a == nullptr) return Fail(*n, key, "expected an array of strings");
    std::vector<std::string> values;
    for (const toml::node& item : *a) {
      if (!item.is_string()) return Fail(*n, key, "expected an array of strings");
      values.push_back(item.as_string()->get());
    }
    *out = std::move(values);
  }

  const toml::table& table() const { return table_; }
  Errors* errors() const { return errors_; }

  void RejectUnknown() {
    for (const auto& [key, node] : table_) {
      if (std::find(seen_.begin(), seen_.end(), key.str()) == seen_.end()) {
        Fail(node, key.str(), "unknown key" + DidYouMean(key.str(), seen_));
      }
    }
  }

 private:
  const toml::table& table_;
  std::string prefix_;
  Errors* errors_;
  std::vector<std::string> seen_;
};

}  // namespace tarmac
