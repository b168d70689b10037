// SPDX-License-Identifier: Apache-2.0
//
// `tarmac completion bash|zsh|fish`: shell completion scripts, generated
// from the same command table `--help` shows, so that they never name a
// command or option tarmac does not take. Commands and their subcommands
// complete by name; options by name per command; choices (`--format
// {table,csv,json}`) by value. Pure but for printing.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace tarmac::cli {

// The script for `shell` ("bash", "zsh" or "fish") over every command of
// `app`; empty for another shell.
std::string CompletionScript(const CLI::App& app, const std::string& shell);

// Adds `completion SHELL`; `shell` receives the name.
CLI::App* AddCompletionCommand(CLI::App* app, std::string* shell);

}  // namespace tarmac::cli
