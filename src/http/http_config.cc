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
  for (auto [key, path] : {std::pair{"tls_cert", &out->tls_cert}, std::pair{"tls_key", &out->tls_key}}) {
    section.String(key, path);
    if (section.Has(key) && !path->empty() && (*path)[0] != '/')
      section.Fail(key, "expected an absolute path to a PEM file");
  }
  if (out->tls_cert.empty() != out->tls_key.empty()) {
    section.Fail(out->tls_cert.empty() ? "tls_key" : "tls_cert",
                 "tls_cert and tls_key go together: set both");
  }
}

void ReadWebSection(ConfigSection& section, WebOptions* out) {
  section.Bool("show_command_lines", &out->show_command_lines);
  ReadInteger(section, "max_streams_per_client", &out->max_streams_per_client, 1, 32);
}

}  // namespace tarmac::http
