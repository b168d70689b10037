// SPDX-License-Identifier: Apache-2.0
#include "cli/sibling_program.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "cli/completion.h"
#include "common/exit_codes.h"
#include "common/run_program.h"

namespace tarmac::cli {

namespace {

// Where `program` may be: next to tarmac (a build tree, tarmacd), else in
// the package's libexec folder (/usr/libexec/tarmac for /usr/bin/tarmac).
std::array<std::string, 2> SiblingPaths(const std::string& program) {
  char self[4096] = {};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
  dir = dir.substr(0, dir.rfind('/'));
  return {dir + "/" + program, dir.substr(0, dir.rfind('/')) + "/libexec/tarmac/" + program};
}

}  // namespace

std::string SiblingCompletionEntries(const std::string& program) {
  for (const std::string& path : SiblingPaths(program)) {
    if (::access(path.c_str(), X_OK) != 0) continue;
    Result<std::pair<std::string, int>> r =
        RunProgram({path, kCompletionEntriesFlag}, std::chrono::seconds(5));
    return r.ok() && r.value().second == 0 ? r.value().first : std::string();
  }
  return "";
}

int ExecSibling(const std::string& program, std::vector<std::string> argv) {
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const auto [path, libexec] = SiblingPaths(program);
  ::execv(path.c_str(), args.data());
  if (errno == ENOENT) ::execv(libexec.c_str(), args.data());
  return ExitWith(Status::NotFound(fmt::format("cannot run {}: {}", path, std::strerror(errno)),
                                   fmt::format("{} is installed next to tarmac or in {}", program, libexec)));
}

}  // namespace tarmac::cli
