// SPDX-License-Identifier: Apache-2.0
#include "cli/help_format.h"

namespace tarmac::cli {
namespace {

// "--no-wait{true},--queue{false}" -> "--no-wait,--queue".
std::string WithoutFlagValues(std::string name) {
  for (size_t open = name.find('{'); open != std::string::npos; open = name.find('{')) {
    size_t close = name.find('}', open);
    if (close == std::string::npos) break;
    name.erase(open, close - open + 1);
  }
  return name;
}

}  // namespace

std::string ValueLabel(const std::string& type_name) {
  if (size_t open = type_name.find('{'); open != std::string::npos) {
    size_t close = type_name.find('}', open);
    return type_name.substr(open, close == std::string::npos ? std::string::npos : close - open + 1);
  }
  std::string base = type_name.substr(0, type_name.find(':'));
  std::string word = base == "INT" || base == "UINT" ? "N" : base == "FLOAT" ? "X" : base;
  if (size_t range = type_name.find(" in ["); range != std::string::npos) word += type_name.substr(range);
  return word;
}

std::string HelpFormatter::make_option_name(const CLI::Option* option, bool is_positional) const {
  return WithoutFlagValues(CLI::Formatter::make_option_name(option, is_positional));
}

std::string HelpFormatter::make_option_opts(const CLI::Option* option) const {
  std::string out;
  if (!option->get_option_text().empty()) return " " + option->get_option_text();
  if (option->get_type_size() != 0) {
    if (!option->get_type_name().empty()) out += " " + ValueLabel(option->get_type_name());
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (!option->get_default_str().empty()) out += " (default " + option->get_default_str() + ")";
    if (option->get_required()) out += " (required)";
  }
  if (!option->get_envname().empty()) out += " (env " + option->get_envname() + ")";
  if (!option->get_excludes().empty()) {
    out += " (not with";
    for (const CLI::Option* other : option->get_excludes()) out += " " + WithoutFlagValues(other->get_name());
    out += ")";
  }
  return out;
}

}  // namespace tarmac::cli
