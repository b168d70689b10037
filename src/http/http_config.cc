// SPDX-License-Identifier: Apache-2.0
#include "http/http_config.h"

namespace tarmac::http {

void ReadHttpSection(ConfigSection& section, HttpOptions* out) {
  std::string listen = out->listen;
  section.String("listen", &listen);
  if (listen != kListenOff) {
    size_t colon = listen.rfind(':');
    bool is_ok = colon != std::string::npos && colon > 0 && colon + 1 < listen.size() &&
                 listen.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
                 listen.size() - colon - 1 <= 5 && std::stoi(listen.substr(colon + 1)) <= 65535;
    if (!is_ok) {
      section.Fail("listen", "expected HOST:PORT or \"off\"");
      return;
    }
  }
  out->listen = listen;
  section.String("auth", &out->auth_file);
  if (section.Has("auth") && !out->auth_file.empty() && out->auth_file[0] != '/') {
    section.Fail("auth", "expected an absolute path to the token file");
  }
  section.Bool("allow_anonymous", &out->allow_anonymous);
}

void ReadWebSection(ConfigSection& section, WebOptions* out) {
  section.Bool("show_command_lines", &out->show_command_lines);
}

}  // namespace tarmac::http
