// SPDX-License-Identifier: Apache-2.0
//
// ConfigSection (common/config_section.h) over one TOML table: the modules'
// section readers run on it, and every problem becomes one line naming the
// file, the line and the key (common/toml_reader.h). Include only from .cc
// files that link tarmac_toml.
#pragma once

#include <toml++/toml.h>

#include "common/config_section.h"
#include "common/toml_reader.h"

namespace tarmac::config {

class TomlSection : public ConfigSection {
 public:
  // `prefix` names the table in messages ("leases", "report.gpu_hour_cost_by_model").
  TomlSection(const toml::table& table, std::string prefix, Errors* errors);

  bool Has(std::string_view key) override;
  void Fail(std::string_view key, std::string_view what, std::string_view at = {}) override;
  void String(std::string_view key, std::string* out) override { reader_.String(key, out); }
  bool IsWord(std::string_view key, std::string_view word) override {
    const toml::node* n = reader_.Find(key);
    return n != nullptr && n->is_string() && n->as_string()->get() == word;
  }
  void Bool(std::string_view key, bool* out) override { reader_.Bool(key, out); }
  void Integer(std::string_view key, int64_t* out, int64_t min, int64_t max) override {
    reader_.Integer(key, out, min, max);
  }
  void Number(std::string_view key, double* out, double min, double max) override {
    reader_.Number(key, out, min, max);
  }
  void Bytes(std::string_view key, int64_t* out) override { reader_.Bytes(key, out); }
  void Interval(std::string_view key, std::chrono::milliseconds min, std::chrono::milliseconds max,
                std::chrono::milliseconds* out) override;
  void OneOf(std::string_view key, std::initializer_list<std::string_view> allowed,
             std::string* out) override;
  void Strings(std::string_view key, std::vector<std::string>* out) override { reader_.Strings(key, out); }
  std::unique_ptr<ConfigSection> Table(std::string_view key, std::string_view what) override;
  std::vector<std::string> Keys() const override;

  // Reports every key no reader asked for.
  void RejectUnknown() { reader_.RejectUnknown(); }

 private:
  Reader reader_;
};

}  // namespace tarmac::config
