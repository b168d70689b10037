// SPDX-License-Identifier: Apache-2.0
//
// `tarmac web`: where the agent's web console is (docs/web.md): its address
// as the running agent says it (`hello`), and the SSH tunnel line that
// reaches it from another machine when it listens on loopback only.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/options.h"

namespace tarmac::cli {

struct WebOptions {
  bool json = false;
};

CLI::App* AddWebCommand(CLI::App* app, WebOptions* options, GlobalOptions* global);

// What `tarmac web` prints for the agent's `http` (hello) on `host`:
// the console's address, how to reach it from elsewhere, and the token.
// Pure.
std::string RenderWeb(const nlohmann::json& http, const std::string& host);
nlohmann::json WebJson(const nlohmann::json& http, const std::string& host);

int RunWeb(const GlobalOptions& global, const WebOptions& options);

}  // namespace tarmac::cli
