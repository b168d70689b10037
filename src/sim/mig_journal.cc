// SPDX-License-Identifier: Apache-2.0
#include "sim/mig_journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>

#include "common/safe_file.h"
#include "common/split.h"
#include "sim/mig_layout.h"

namespace tarmac::sim {
namespace {

std::string JournalPath(const std::string& dir) { return dir + "/mig-layouts"; }

// Thousands of changes; a world is a test's or a demo's.
constexpr size_t kMaxJournalBytes = size_t{1} << 20;

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

Status AppendMigLayout(const std::string& dir, std::chrono::milliseconds at, int gpu,
                       const std::vector<MigInstanceSpec>& layout) {
  std::string instances;
  for (const MigInstanceSpec& m : layout) {
    instances +=
        fmt::format("{}{}:{}:{}", instances.empty() ? "" : ",", m.profile, m.gpu_instance_id, m.generation);
    if (m.memory_start >= 0) instances += fmt::format(":{}", m.memory_start);
  }
  std::string line = fmt::format("{} {} {}\n", at.count(), gpu, instances.empty() ? "-" : instances);
  std::string path = JournalPath(dir);
  // The world's folder may be a user's: a link planted at the path is
  // refused (O_NOFOLLOW), a FIFO never blocks (O_NONBLOCK) and is refused
  // with anything else that is not a regular file, and the journal stays
  // bounded.
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(fmt::format("cannot open {}", path), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) + line.size() > kMaxJournalBytes) {
    ::close(fd);
    return Status::IOError(fmt::format("{}: not a regular file of its world, or full", path));
  }
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  int err = errno;
  ::close(fd);
  if (!ok) return Status::IOError(fmt::format("cannot write {}", path), std::strerror(err));
  return Status::OK();
}

int64_t MigJournalSize(const std::string& dir) {
  struct stat st {};
  if (::lstat(JournalPath(dir).c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_size);
}

Result<std::vector<Fault>> ReadMigLayouts(const std::string& dir, const Scenario& scenario) {
  std::string path = JournalPath(dir);
  Result<std::string> text = ReadForeignFile(path, ForeignFileOptions{kMaxJournalBytes});
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) return std::vector<Fault>();
  if (!text.ok()) return text.status();
  return ParseMigLayouts(text.value(), path, scenario);
}

Result<std::vector<Fault>> ParseMigLayouts(std::string_view text, const std::string& name,
                                           const Scenario& scenario) {
  std::vector<Fault> out;
  std::istringstream in{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument(fmt::format("{}:{}: {}", name, number, why), line);
    };
    std::istringstream fields(line);
    std::string at_text, gpu_text, instances;
    if (!(fields >> at_text >> gpu_text >> instances)) return bad("expected '<ms> <gpu> <instances>'");
    Fault f;
    f.kind = FaultKind::kMigReconfigure;
    f.line = number;
    int64_t at_ms = 0;
    if (!ParseNumber(at_text, &at_ms) || !ParseNumber(gpu_text, &f.gpu) || f.gpu < 0 ||
        f.gpu >= static_cast<int>(scenario.gpus.size())) {
      return bad("bad time or GPU index");
    }
    f.at = std::chrono::milliseconds(at_ms);
    if (instances != "-") {
      for (const std::string& item : SplitCommas(instances, Empties::kKeep)) {
        std::vector<std::string> parts;
        std::istringstream pieces(item);
        for (std::string part; std::getline(pieces, part, ':');) parts.push_back(part);
        int id = 0;
        int start = -1;
        int64_t generation = 0;
        MigInstanceSpec m;
        if ((parts.size() != 3 && parts.size() != 4) || !ParseNumber(parts[1], &id) || id < 0 || id > 7 ||
            !ParseNumber(parts[2], &generation) ||
            (parts.size() == 4 && (!ParseNumber(parts[3], &start) || start < 0 || start > 7)) ||
            !MakeMigInstance(scenario.gpus[static_cast<size_t>(f.gpu)], parts[0], id, generation, &m)) {
          return bad(fmt::format("bad instance '{}'", item));
        }
        m.memory_start = start;
        f.mig_instances.push_back(std::move(m));
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace tarmac::sim
