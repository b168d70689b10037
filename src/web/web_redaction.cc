// SPDX-License-Identifier: Apache-2.0
#include "web/web_redaction.h"

namespace tarmac::web {

using nlohmann::json;

void DropCommandLines(json* j) {
  if (j->is_object()) {
    j->erase("command");
    for (auto& [key, value] : j->items()) DropCommandLines(&value);
  } else if (j->is_array()) {
    for (json& value : *j) DropCommandLines(&value);
  }
}

void DropCommandLines(report::Report* report) {
  for (store::HeldIdleSession& p : report->top_held_idle) p.command.clear();
}

void RedactAnswer(http::Response* answer) {
  if (answer->stream != nullptr || answer->is_gzip) return;
  if (answer->content_type.rfind("application/json", 0) != 0) return;
  // Most answers were built without a command line: no parse for them.
  if (answer->body.find("\"command\"") == std::string::npos) return;
  json j = json::parse(answer->body, nullptr, false);
  if (j.is_discarded()) {
    // Not JSON after all: nothing of it leaves.
    *answer =
        http::Response{500, "application/json",
                       R"({"error":{"code":"internal","message":"an answer that could not be redacted"}})"
                       "\n"};
    return;
  }
  DropCommandLines(&j);
  answer->body = j.dump() + "\n";
}

void RedactApiRoutes(http::RouteTable* routes, bool show_command_lines) {
  if (show_command_lines) return;
  routes->WrapEach(
      [](const std::string& path, http::RouteTable::Handler handler) -> http::RouteTable::Handler {
        if (path.rfind("/api/", 0) != 0) return handler;
        return [handler = std::move(handler)](const http::Request& asked) {
          http::Response answer = handler(asked);
          RedactAnswer(&answer);
          return answer;
        };
      });
}

}  // namespace tarmac::web
