// SPDX-License-Identifier: Apache-2.0
#include "leases/process_control.h"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/pidfd.h"
#include "common/proc_files.h"

namespace tarmac::leases {
namespace {

class ProcProcessControl : public ProcessControl {
 public:
  explicit ProcProcessControl(std::string proc_root) : root_(std::move(proc_root)) {}

  std::optional<ProcessIdentity> Identify(int64_t pid) override {
    if (pid <= 0) return std::nullopt;
    std::string dir = fmt::format("{}/{}", root_, pid);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
    std::string text;
    if (!ReadSmallFile(dir + "/stat", &text)) return std::nullopt;
    std::optional<ProcStat> ps = ParseProcStat(text);
    if (!ps || HasExited(*ps)) return std::nullopt;  // Exited, not yet reaped.
    return ProcessIdentity{pid, static_cast<int64_t>(st.st_uid), ps->start_ticks, ps->parent_pid, ps->name};
  }

  Status Signal(const sched::ProcessRef& ref, int64_t uid, int signal) override {
    if (ref.pid <= 0) return Status::NotFound("no process");
    // Pin the process instance first, then verify it, then signal through
    // the pin: a PID recycled in between cannot be hit.
    int fd = PidfdOpen(ref.pid);
    if (fd < 0 && errno == ESRCH) return Status::NotFound(fmt::format("pid {} has exited", ref.pid));
    std::optional<ProcessIdentity> now = Identify(ref.pid);
    Status verdict = Status::OK();
    if (!now) {
      verdict = Status::NotFound(fmt::format("pid {} has exited", ref.pid));
    } else if (now->start_ticks != ref.start_ticks) {
      verdict = Status::NotFound(fmt::format("pid {} now names another process (started at tick {}, not {})",
                                             ref.pid, now->start_ticks, ref.start_ticks));
    } else if (uid >= 0 && now->uid != uid) {
      verdict =
          Status::PermissionDenied(fmt::format("pid {} belongs to uid {}, not {}", ref.pid, now->uid, uid));
    }
    if (verdict.ok()) {
      int rc = fd >= 0 ? static_cast<int>(::syscall(SYS_pidfd_send_signal, fd, signal, nullptr, 0))
                       : ::kill(static_cast<pid_t>(ref.pid), signal);
      if (rc != 0) {
        verdict =
            errno == ESRCH
                ? Status::NotFound(fmt::format("pid {} has exited", ref.pid))
                : Status::PermissionDenied(fmt::format("signal pid {}: {}", ref.pid, std::strerror(errno)));
      }
    }
    if (fd >= 0) ::close(fd);
    return verdict;
  }

  std::vector<ProcessIdentity> LeaseProcesses(const std::string& token, int64_t uid,
                                              int64_t min_start_ticks) override {
    std::vector<ProcessIdentity> found;
    if (token.empty()) return found;
    DIR* dir = ::opendir(root_.c_str());
    if (dir == nullptr) return found;
    std::string marker = fmt::format("{}={}", kLeaseTokenEnv, token);
    while (dirent* e = ::readdir(dir)) {
      char* end = nullptr;
      long long pid = std::strtoll(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      std::optional<ProcessIdentity> id = Identify(pid);
      if (!id || (uid >= 0 && id->uid != uid) || id->start_ticks < min_start_ticks) continue;
      std::string env;
      if (!ReadSmallFile(fmt::format("{}/{}/environ", root_, pid), &env, 1 << 20)) continue;
      for (size_t at = 0; at < env.size();) {
        size_t nul = env.find('\0', at);
        size_t len = (nul == std::string::npos ? env.size() : nul) - at;
        if (len == marker.size() && env.compare(at, len, marker) == 0) {
          found.push_back(*id);
          break;
        }
        if (nul == std::string::npos) break;
        at = nul + 1;
      }
    }
    ::closedir(dir);
    return found;
  }

 private:
  std::string root_;
};

}  // namespace

std::unique_ptr<ProcessControl> MakeProcessControl(std::string proc_root) {
  return std::make_unique<ProcProcessControl>(std::move(proc_root));
}

}  // namespace tarmac::leases
