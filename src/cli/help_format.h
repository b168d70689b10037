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

// Options' and commands' descriptions are wrapped at `width` columns (the
// terminal's: cli/main.cc), their continuation lines under the first.
class HelpFormatter : public CLI::Formatter {
 public:
  explicit HelpFormatter(size_t width = 100) : width_(width) {}
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* option) const override;
  std::string make_option(const CLI::Option* option, bool is_positional) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;

 private:
  // One entry: "  NAME" in the left column, the description wrapped beside
  // it (under it when the name is as wide as the column).
  std::string Entry(const std::string& name, const std::string& description) const;

  size_t width_;
};

// `text` with each line longer than `width` wrapped, its continuation lines
// under where its text starts: after its indentation, or in a table row
// (columns apart by two spaces or more) under its last column. Lines that
// fit are kept as they are. Pure; for tests.
std::string WrapLongLines(const std::string& text, size_t width);

// The value of an option as --help shows it, from CLI11's type name
// ("FLOAT:POSITIVE" -> "X", "TEXT:{a,b}" -> "{a,b}", "INT:INT in [1 - 9]"
// -> "N in [1 - 9]"). Pure; for tests.
std::string ValueLabel(const std::string& type_name);

}  // namespace tarmac::cli
