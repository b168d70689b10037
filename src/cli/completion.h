// SPDX-License-Identifier: Apache-2.0
//
// `tarmac completion bash|zsh|fish`: shell completion scripts, generated
// from the same command table `--help` shows, so that they never name a
// command or option tarmac does not take. Commands and their subcommands
// complete by name; options by name per command; choices (`--format
// {table,csv,json}`) by value. Pure but for printing.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

namespace tarmac::cli {

// The script for `shell` ("bash", "zsh" or "fish") over every command of
// `app`, and of the programs `tarmac` hands a line to (`tarmac fleet`,
// `tarmac top`): `siblings` maps the command's name to what that program's
// CompletionEntries printed (a sibling that could not be asked is left out
// and keeps only its name). Empty for another shell.
std::string CompletionScript(const CLI::App& app, const std::string& shell,
                             const std::map<std::string, std::string>& siblings = {});

// Every command of `app` as lines for CompletionScript's `siblings`:
// "cmd PATH", "sub PATH NAME DESCRIPTION", "opt PATH --NAME DESCRIPTION",
// "choice PATH --NAME VALUES", fields apart by tabs, PATH "" for `app`
// itself. tarmac-fleet and tarmac-top print it for --completion-entries.
std::string CompletionEntries(const CLI::App& app);

// The option sibling programs answer: `PROGRAM --completion-entries`.
inline constexpr const char* kCompletionEntriesFlag = "--completion-entries";

// Adds `completion SHELL`; `shell` receives the name.
CLI::App* AddCompletionCommand(CLI::App* app, std::string* shell);

}  // namespace tarmac::cli
