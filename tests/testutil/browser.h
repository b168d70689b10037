// SPDX-License-Identifier: Apache-2.0
//
// Headless Chromium, as tests use it to look at tarmac's pages: the DOM after
// the page's own scripts ran (layout measured by the browser itself), and a
// screenshot. Chromium comes from Debian (scripts/install-deps); it runs with
// a private profile, no sandbox (tests may run as root), and none of its
// background network traffic.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

#include "testutil/testutil.h"

namespace tarmac::testing {

// The Chromium binary, or "" when none is installed.
inline std::string ChromiumPath() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

inline std::vector<std::string> ChromiumArgs(const std::string& profile_dir) {
  return {ChromiumPath(),
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--hide-scrollbars",
          "--user-data-dir=" + profile_dir};
}

// The page's DOM, serialized after its scripts ran (stdout of --dump-dom).
inline RunResult ChromiumDumpDom(const std::string& url, const std::string& profile_dir) {
  std::vector<std::string> argv = ChromiumArgs(profile_dir);
  argv.push_back("--dump-dom");
  argv.push_back(url);
  return RunCommand(argv, {});
}

// Writes a PNG of the page at `width` x `height` CSS pixels to `png_path`.
inline RunResult ChromiumScreenshot(const std::string& url, const std::string& png_path, int width,
                                    int height, const std::string& profile_dir) {
  std::vector<std::string> argv = ChromiumArgs(profile_dir);
  argv.push_back("--screenshot=" + png_path);
  argv.push_back("--window-size=" + std::to_string(width) + "," + std::to_string(height));
  argv.push_back(url);
  return RunCommand(argv, {});
}

}  // namespace tarmac::testing
