// SPDX-License-Identifier: Apache-2.0
#include "cli/web_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/lease_exit.h"
#include "common/host_name.h"
#include "common/json_fields.h"
#include "ipc/unix_server.h"

namespace tarmac::cli {
namespace {

// "http://HOST:PORT/" (or https) split; false when it is not that form.
bool SplitUrl(const std::string& url, std::string* scheme, std::string* host, std::string* port) {
  size_t end = url.find("://");
  if (end == std::string::npos || url.empty() || url.back() != '/') return false;
  *scheme = url.substr(0, end);
  if (*scheme != "http" && *scheme != "https") return false;
  std::string authority = url.substr(end + 3, url.size() - end - 4);
  size_t colon = authority.rfind(':');
  if (colon == std::string::npos) return false;
  *host = authority.substr(0, colon);
  *port = authority.substr(colon + 1);
  return !host->empty() && !port->empty();
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace

CLI::App* AddWebCommand(CLI::App* app, WebOptions* options, GlobalOptions* global) {
  CLI::App* cmd = app->add_subcommand(
      "web",
      "Where the agent's web console is: its address, and the SSH tunnel that reaches it from your "
      "machine (docs/web.md)");
  cmd->add_flag("--json", options->json, "url, local_url, tunnel and token_required as JSON");
  AddSocketOption(cmd, global);
  return cmd;
}

nlohmann::json WebJson(const nlohmann::json& http, const std::string& host) {
  std::string url;
  bool token_required = false;
  JsonFields f(http, "hello.http", JsonFields::kSkipWrongTypes);
  f.Optional("url", &url);
  f.Optional("token_required", &token_required);
  std::string scheme, bound, port;
  nlohmann::json out = {{"url", url}, {"token_required", token_required}, {"tunnel", nullptr}};
  if (!SplitUrl(url, &scheme, &bound, &port)) return out;
  if (bound == "0.0.0.0" || bound == "[::]") {
    // Every address: reachable by this machine's name.
    out["url"] = fmt::format("{}://{}:{}/", scheme, host, port);
    out["local_url"] = fmt::format("{}://127.0.0.1:{}/", scheme, port);
  } else {
    out["local_url"] = url;
  }
  if (IsLoopback(bound)) {
    out["tunnel"] =
        fmt::format("ssh -N -L {}:{}:{} {}", port, bound == "[::1]" ? "[::1]" : bound, port, host);
  }
  return out;
}

std::string RenderWeb(const nlohmann::json& http, const std::string& host) {
  nlohmann::json w = WebJson(http, host);
  std::string out = fmt::format("The web console: {}\n", w["url"].get<std::string>());
  if (w["tunnel"].is_string()) {
    out += fmt::format(
        "It listens on loopback only. From your own machine, open a tunnel:\n  {}\nthen open {} there.\n",
        w["tunnel"].get<std::string>(), w["local_url"].get<std::string>());
  }
  if (w["token_required"].get<bool>()) {
    out +=
        "It asks for the token in the agent's [http] auth file (the page has a login; scripts send "
        "Authorization: Bearer TOKEN).\n";
  }
  return out;
}

int RunWeb(const GlobalOptions& global, const WebOptions& options) {
  ipc::Request hello;
  hello.method = "hello";
  Result<nlohmann::json> answer = ipc::CallAgent(global.socket, hello, std::chrono::seconds(5));
  if (!answer.ok()) {
    std::fprintf(stderr, "tarmac: web: the console is served by the agent, which did not answer: %s\n%s\n",
                 answer.status().ToString().c_str(), kAgentHint);
    return kExitNoAgent;
  }
  const nlohmann::json& http = answer.value().contains("http") ? answer.value()["http"] : nlohmann::json();
  if (!http.is_object()) {
    std::fprintf(stderr,
                 "tarmac: web: the agent serves no HTTP ([http] listen = \"off\", or an agent older than the "
                 "console)\n");
    return kExitError;
  }
  std::string host = HostName();
  std::string text = options.json ? WebJson(http, host).dump(2) + "\n" : RenderWeb(http, host);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace tarmac::cli
