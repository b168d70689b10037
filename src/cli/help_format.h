// SPDX-License-Identifier: Apache-2.0
//
// How `--help` shows an option: its value as a person reads it, not the
// parser's internals. `--watch SECONDS (default 2)` rather than `--watch
// FLOAT:POSITIVE=2`; choices as `{auto,always,never}`; a range as
// `N in [1 - 1024]`; flags without their `{true}` values; the environment
// variable as `(env TARMAC_SOCKET)`.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace tarmac::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* option) const override;
};

// The value of an option as --help shows it, from CLI11's type name
// ("FLOAT:POSITIVE" -> "X", "TEXT:{a,b}" -> "{a,b}", "INT:INT in [1 - 9]"
// -> "N in [1 - 9]"). Pure; for tests.
std::string ValueLabel(const std::string& type_name);

}  // namespace tarmac::cli
