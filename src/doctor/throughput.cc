// SPDX-License-Identifier: Apache-2.0
#include "doctor/throughput.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "common/run_program.h"

namespace tarmac::doctor {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

Result<StorageResult> MeasureStorage(const std::string& dir, int64_t bytes,
                                     std::chrono::milliseconds random_budget) {
  constexpr int64_t kMib = 1 << 20;
  constexpr size_t kBlock = 4096;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(fmt::format("--storage: {}: not a folder", dir));
  }
  StorageResult r;
  r.path = dir;
  r.bytes = std::max<int64_t>(1, bytes / kMib) * kMib;
  std::string path = dir + "/.tarmac-doctor-XXXXXX";
  int fd = ::mkstemp(path.data());
  if (fd < 0)
    return Status::IOError(
        fmt::format("--storage: cannot create a test file in {}: {}", dir, std::strerror(errno)));
  struct Remove {
    std::string path;
    ~Remove() { ::unlink(path.c_str()); }
  } remove{path};
  void* raw = nullptr;
  if (posix_memalign(&raw, kBlock, kMib) != 0) {
    ::close(fd);
    return Status::ResourceExhausted("--storage: no memory for the test buffer");
  }
  std::unique_ptr<char, AlignedFree> buffer(static_cast<char*>(raw));
  std::mt19937_64 rng(42);
  for (int64_t i = 0; i < kMib / 8; ++i) reinterpret_cast<uint64_t*>(buffer.get())[i] = rng();
  // Write (buffered), and make it durable.
  Clock::time_point start = Clock::now();
  for (int64_t done = 0; done < r.bytes; done += kMib) {
    ssize_t n = ::pwrite(fd, buffer.get(), kMib, done);
    if (n != kMib) {
      int e = n < 0 ? errno : ENOSPC;
      ::close(fd);
      if (e == ENOSPC || e == EDQUOT) {
        return Status::ResourceExhausted(fmt::format(
            "--storage: {}: no room for the {} MiB test file (--storage-size sets it)", dir, r.bytes / kMib));
      }
      return Status::IOError(fmt::format("--storage: writing in {}: {}", dir, std::strerror(e)));
    }
  }
  ::fdatasync(fd);
  r.write_mb_per_s = static_cast<double>(r.bytes) / kMib / std::max(1e-9, Seconds(Clock::now() - start));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  // Read it back, past the page cache.
  fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0 && errno == EINVAL) {
    r.is_direct = false;  // tmpfs and some FUSE file systems refuse direct I/O.
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return Status::IOError(fmt::format("--storage: reading {}: {}", path, std::strerror(errno)));
  start = Clock::now();
  for (int64_t done = 0; done < r.bytes;) {
    ssize_t n = ::pread(fd, buffer.get(), kMib, done);
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      return Status::IOError(
          fmt::format("--storage: reading {}: {}", path, n < 0 ? std::strerror(e) : "short file"));
    }
    done += n;
  }
  r.sequential_read_mb_per_s =
      static_cast<double>(r.bytes) / kMib / std::max(1e-9, Seconds(Clock::now() - start));
  if (!r.is_direct) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  int64_t blocks = r.bytes / static_cast<int64_t>(kBlock);
  int64_t reads = 0;
  start = Clock::now();
  Clock::time_point end = start + random_budget;
  while (Clock::now() < end && reads < 200000) {
    int64_t at = static_cast<int64_t>(rng() % static_cast<uint64_t>(blocks)) * static_cast<int64_t>(kBlock);
    if (::pread(fd, buffer.get(), kBlock, at) != static_cast<ssize_t>(kBlock)) break;
    ++reads;
  }
  r.random_read_iops = static_cast<double>(reads) / std::max(1e-9, Seconds(Clock::now() - start));
  ::close(fd);
  return r;
}

Result<NetworkResult> ParseIperfJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption("iperf3: its report is not JSON");
  if (j.contains("error") && j["error"].is_string()) {
    return Status::Unavailable("iperf3: " + j["error"].get<std::string>());
  }
  const nlohmann::json* end = j.contains("end") && j["end"].is_object() ? &j["end"] : nullptr;
  auto bits = [&](const char* key) -> std::optional<double> {
    if (end == nullptr || !end->contains(key) || !(*end)[key].is_object()) return std::nullopt;
    const nlohmann::json& s = (*end)[key];
    if (!s.contains("bits_per_second") || !s["bits_per_second"].is_number()) return std::nullopt;
    double v = s["bits_per_second"].get<double>();
    if (!(v >= 0)) return std::nullopt;
    return v;
  };
  std::optional<double> received = bits("sum_received");
  std::optional<double> sent = bits("sum_sent");
  if (!received && !sent)
    return Status::Corruption("iperf3: its report has no end.sum_received or end.sum_sent");
  NetworkResult r;
  r.receive_gbit_per_s = received.value_or(sent.value_or(0)) / 1e9;
  r.send_gbit_per_s = sent.value_or(received.value_or(0)) / 1e9;
  if (end != nullptr && end->contains("sum_sent") && (*end)["sum_sent"].is_object()) {
    const nlohmann::json& s = (*end)["sum_sent"];
    if (s.contains("retransmits") && s["retransmits"].is_number_integer())
      r.retransmits = s["retransmits"].get<int64_t>();
  }
  return r;
}

Result<NetworkResult> MeasureNetwork(const std::string& server, int seconds) {
  std::string host = server;
  std::vector<std::string> argv = {"iperf3", "-c"};
  std::string port;
  if (size_t colon = server.rfind(':'); colon != std::string::npos && server.find(':') == colon) {
    host = server.substr(0, colon);
    port = server.substr(colon + 1);
  }
  if (host.empty() || host[0] == '-' ||
      (!port.empty() && port.find_first_not_of("0123456789") != std::string::npos)) {
    return Status::InvalidArgument(fmt::format("--network: '{}' is not HOST or HOST:PORT", server));
  }
  argv.push_back(host);
  if (!port.empty()) argv.insert(argv.end(), {"-p", port});
  argv.insert(argv.end(), {"-J", "-t", std::to_string(seconds)});
  Result<std::pair<std::string, int>> ran = RunProgram(argv, std::chrono::seconds(seconds + 10));
  if (!ran.ok()) return ran.status();
  Result<NetworkResult> r = ParseIperfJson(ran.value().first);
  if (!r.ok()) return r.status().WithContext(fmt::format("--network {}", server));
  NetworkResult out = r.value();
  out.server = server;
  return out;
}

}  // namespace tarmac::doctor
