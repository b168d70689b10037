// SPDX-License-Identifier: Apache-2.0
#include "doctor/host_readings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include "common/split.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::doctor {
namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The whitespace-separated fields of `line`.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<int64_t> Int(std::string_view s, int base = 10) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

std::optional<double> LeadingNumber(std::string_view s) {
  s = Trim(s);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::vector<CpuTimes> ParseCpuTimes(std::string_view proc_stat) {
  std::vector<CpuTimes> out;
  for (std::string_view line : Lines(proc_stat)) {
    std::vector<std::string_view> f = Fields(line);
    if (f.size() < 5 || f[0].substr(0, 3) != "cpu") continue;
    CpuTimes t;
    if (f[0].size() > 3) {
      std::optional<int64_t> n = Int(f[0].substr(3));
      if (!n || *n < 0 || *n > 65535) continue;
      t.cpu = static_cast<int>(*n);
    }
    int64_t* slots[] = {&t.user, &t.nice, &t.system, &t.idle, &t.iowait, &t.irq, &t.softirq, &t.steal};
    bool ok = true;
    for (size_t i = 0; i < std::size(slots) && i + 1 < f.size(); ++i) {
      std::optional<int64_t> v = Int(f[i + 1]);
      if (!v || *v < 0 || *v > (int64_t{1} << 60)) {
        ok = false;
        break;
      }
      *slots[i] = *v;
    }
    if (ok) out.push_back(t);
  }
  return out;
}

std::optional<CpuWindow> CompareCpuTimes(const std::vector<CpuTimes>& before,
                                         const std::vector<CpuTimes>& after) {
  std::map<int, CpuTimes> was;
  for (const CpuTimes& t : before) was[t.cpu] = t;
  CpuWindow w;
  bool has_all = false;
  for (const CpuTimes& now : after) {
    auto it = was.find(now.cpu);
    if (it == was.end()) continue;
    const CpuTimes& b = it->second;
    int64_t total = now.Total() - b.Total();
    if (total <= 0) continue;
    double busy =
        std::clamp(static_cast<double>(now.Busy() - b.Busy()) / static_cast<double>(total), 0.0, 1.0);
    if (now.cpu < 0) {
      has_all = true;
      w.ticks = static_cast<double>(total);  // Divided by the CPUs below.
      w.busy_ratio = busy;
      w.iowait_ratio =
          std::clamp(static_cast<double>(now.iowait - b.iowait) / static_cast<double>(total), 0.0, 1.0);
      w.steal_ratio =
          std::clamp(static_cast<double>(now.steal - b.steal) / static_cast<double>(total), 0.0, 1.0);
      continue;
    }
    ++w.cpu_count;
    if (busy >= 0.95) ++w.saturated_cpus;
    if (w.hottest_cpu < 0 || busy > w.hottest_busy_ratio) {
      w.hottest_cpu = now.cpu;
      w.hottest_busy_ratio = busy;
    }
  }
  if (!has_all) return std::nullopt;
  if (w.cpu_count > 0) w.ticks /= w.cpu_count;
  return w;
}

MemInfo ParseMemInfo(std::string_view text) {
  MemInfo m;
  const std::pair<std::string_view, std::optional<int64_t>*> keys[] = {
      {"MemTotal", &m.total_kib},
      {"MemAvailable", &m.available_kib},
      {"SwapTotal", &m.swap_total_kib},
      {"SwapFree", &m.swap_free_kib},
      {"HugePages_Total", &m.hugepages_total},
      {"HugePages_Free", &m.hugepages_free},
      {"Hugepagesize", &m.hugepage_size_kib}};
  for (std::string_view line : Lines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    std::vector<std::string_view> f = Fields(line.substr(colon + 1));
    if (f.empty()) continue;
    std::optional<int64_t> v = Int(f[0]);
    if (!v || *v < 0) continue;
    for (const auto& [name, slot] : keys) {
      if (key == name) *slot = *v;
    }
  }
  return m;
}

std::vector<KernelXid> ParseKernelXids(std::string_view log) {
  std::vector<KernelXid> out;
  for (std::string_view line : Lines(log)) {
    size_t at = line.find("Xid (PCI:");
    if (at == std::string_view::npos) continue;
    KernelXid x;
    // /dev/kmsg: "PRIORITY,SEQ,MICROSECONDS,FLAGS;MESSAGE".
    if (size_t semi = line.find(';'); semi != std::string_view::npos && semi < at) {
      std::vector<std::string_view> head;
      std::string_view prefix = line.substr(0, semi);
      for (size_t i = 0; i <= prefix.size();) {
        size_t comma = prefix.find(',', i);
        head.push_back(
            prefix.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i));
        if (comma == std::string_view::npos) break;
        i = comma + 1;
      }
      if (head.size() >= 3) {
        if (std::optional<int64_t> us = Int(head[2])) x.seconds_since_boot = static_cast<double>(*us) / 1e6;
      }
    } else if (size_t open = line.find('['); open != std::string_view::npos && open < at) {
      // dmesg: "[  123.456789] NVRM: Xid ...".
      x.seconds_since_boot = LeadingNumber(line.substr(open + 1));
    }
    std::string_view rest = line.substr(at + 9);
    size_t close = rest.find(')');
    if (close == std::string_view::npos) continue;
    std::string pci = Lower(Trim(rest.substr(0, close)));
    rest.remove_prefix(close + 1);
    if (rest.substr(0, 1) != ":") continue;
    std::vector<std::string_view> f = Fields(rest.substr(1));
    if (f.empty()) continue;
    std::string_view code = f[0];
    if (!code.empty() && code.back() == ',') code.remove_suffix(1);
    std::optional<int64_t> xid = Int(code);
    if (!xid || *xid < 0 || *xid > 100000) continue;
    x.pci = NormalizePciAddress(pci, false);
    x.xid = *xid;
    x.line =
        std::string(Trim(line.substr(line.find("NVRM") != std::string_view::npos ? line.find("NVRM") : at)));
    out.push_back(std::move(x));
  }
  return out;
}

std::string NormalizePciAddress(std::string_view address, bool with_function) {
  std::string a = Lower(Trim(address));
  // Domain: as many hex digits as given, kept to its last four.
  size_t colon = a.find(':');
  if (colon != std::string::npos && a.find(':', colon + 1) != std::string::npos && colon > 4) {
    a = a.substr(colon - 4);
  }
  if (!with_function) {
    if (size_t dot = a.rfind('.'); dot != std::string::npos) a = a.substr(0, dot);
  }
  return a;
}

std::vector<PciGpu> ScanPciGpus(const HostFiles& host) {
  std::vector<PciGpu> out;
  const std::string base = "/sys/bus/pci/devices/";
  for (const std::string& name : host.List(base)) {
    std::string dir = base + name + "/";
    std::optional<std::string> vendor = host.Read(dir + "vendor", 64);
    std::optional<std::string> cls = host.Read(dir + "class", 64);
    if (!vendor || !cls || Lower(Trim(*vendor)) != nvidia::kPciVendorId) continue;
    std::string c = Lower(Trim(*cls));
    // 0x0300xx: VGA controller; 0x0302xx: 3D controller. (Audio and NVSwitch functions are not GPUs.)
    if (c.rfind("0x0300", 0) != 0 && c.rfind("0x0302", 0) != 0) continue;
    PciGpu g;
    g.address = NormalizePciAddress(name);
    g.driver = host.LinkName(dir + "driver");
    if (std::optional<std::string> numa = host.Read(dir + "numa_node", 64)) {
      std::optional<int64_t> n = Int(Trim(*numa));
      if (n && *n >= 0) g.numa_node = static_cast<int>(*n);
    }
    if (std::optional<std::string> s = host.Read(dir + "current_link_speed", 64))
      g.link_speed_gts = LeadingNumber(*s);
    if (std::optional<std::string> s = host.Read(dir + "max_link_speed", 64))
      g.max_link_speed_gts = LeadingNumber(*s);
    if (std::optional<std::string> s = host.Read(dir + "current_link_width", 64)) {
      if (std::optional<int64_t> v = Int(Trim(*s)); v && *v > 0 && *v <= 64)
        g.link_width = static_cast<int>(*v);
    }
    if (std::optional<std::string> s = host.Read(dir + "max_link_width", 64)) {
      if (std::optional<int64_t> v = Int(Trim(*s)); v && *v > 0 && *v <= 64)
        g.max_link_width = static_cast<int>(*v);
    }
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

// CPUs a cgroup limit file allows: cpu.max ("QUOTA PERIOD" or "max PERIOD")
// or v1's quota and period (-1: none).
std::optional<double> CpusOf(std::optional<int64_t> quota, std::optional<int64_t> period) {
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

void ReadCpuLimit(const HostFiles& host, std::string_view proc_cgroup, ProcessFacts* f) {
  std::string v2, v1;
  for (std::string_view line : Lines(proc_cgroup)) {
    if (line.rfind("0::", 0) == 0) v2 = std::string(line.substr(3));
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (controllers == "cpu,cpuacct" || controllers == "cpu" || controllers == "cpuacct,cpu") {
      v1 = std::string(controllers) + "|" + path;
    }
    if (controllers == "devices") {
      if (std::optional<std::string> list =
              host.Read("/sys/fs/cgroup/devices" + (path == "/" ? "" : path) + "/devices.list")) {
        std::vector<std::string> rules;
        for (std::string_view rule : Lines(*list)) {
          if (!Trim(rule).empty()) rules.emplace_back(Trim(rule));
        }
        f->device_rules = rules;
      }
    }
  }
  // From the process's own cgroup up to the root: the tightest limit holds.
  auto walk = [&](const std::string& base, const std::string& path, auto read) {
    std::string p = path;
    while (true) {
      if (std::optional<double> cpus = read(base + (p == "/" ? "" : p))) {
        if (!f->cpu_limit || *cpus < *f->cpu_limit) f->cpu_limit = cpus;
      }
      if (p.empty() || p == "/") break;
      size_t slash = p.rfind('/');
      p = slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
    }
  };
  if (!v2.empty() && host.Exists("/sys/fs/cgroup/cgroup.controllers")) {
    f->cgroup = v2;
    walk("/sys/fs/cgroup", v2, [&](const std::string& dir) -> std::optional<double> {
      std::optional<std::string> max = host.Read(dir + "/cpu.max", 256);
      if (!max) return std::nullopt;
      std::vector<std::string_view> fields = Fields(*max);
      if (fields.size() < 2 || fields[0] == "max") return std::nullopt;
      return CpusOf(Int(fields[0]), Int(fields[1]));
    });
  } else if (!v1.empty()) {
    std::string controllers = v1.substr(0, v1.find('|'));
    f->cgroup = v1.substr(v1.find('|') + 1);
    walk("/sys/fs/cgroup/" + controllers, f->cgroup, [&](const std::string& dir) -> std::optional<double> {
      std::optional<std::string> quota = host.Read(dir + "/cpu.cfs_quota_us", 64);
      std::optional<std::string> period = host.Read(dir + "/cpu.cfs_period_us", 64);
      if (!quota || !period) return std::nullopt;
      return CpusOf(Int(Trim(*quota)), Int(Trim(*period)));
    });
  }
}

}  // namespace

ProcessFacts ReadProcessFacts(const HostFiles& host, int64_t pid) {
  ProcessFacts f;
  std::string dir = fmt::format("/proc/{}/", pid);
  if (std::optional<std::string> cgroup = host.Read(dir + "cgroup", 1 << 16)) ReadCpuLimit(host, *cgroup, &f);
  if (std::optional<std::string> status = host.Read(dir + "status", 1 << 16)) {
    for (std::string_view line : Lines(*status)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) f.cpus_allowed = std::string(Trim(line.substr(18)));
    }
  }
  if (std::optional<std::string> env = host.Read(dir + "environ", 1 << 20)) {
    f.is_environment_readable = true;
    std::string_view name = nvidia::kVisibleDevicesVariable;
    for (std::string_view entry : SplitAt(*env, '\0')) {
      if (entry.size() > name.size() && entry.substr(0, name.size()) == name && entry[name.size()] == '=') {
        f.cuda_visible_devices = std::string(entry.substr(name.size() + 1));
      }
    }
  }
  return f;
}

ContainerFacts ReadContainerFacts(const HostFiles& host) {
  ContainerFacts c;
  auto installed = [&](const std::string& name) {
    for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/usr/sbin/", "/bin/"}) {
      if (host.Exists(dir + name)) return true;
    }
    return false;
  };
  for (const char* runtime : {"docker", "containerd", "podman"}) {
    if (installed(runtime)) c.runtimes.push_back(runtime);
  }
  c.has_nvidia_toolkit = installed("nvidia-container-runtime") || installed("nvidia-ctk");
  auto names_nvidia = [&](const std::string& path) {
    std::optional<std::string> text = host.Read(path);
    return text && text->find("nvidia") != std::string::npos;
  };
  if (names_nvidia("/etc/docker/daemon.json")) c.configured_for.push_back("docker");
  if (names_nvidia("/etc/containerd/config.toml")) c.configured_for.push_back("containerd");
  for (const char* dir : {"/etc/cdi/", "/var/run/cdi/"}) {
    for (const std::string& name : host.List(dir)) {
      if (name.find("nvidia") != std::string::npos) {
        c.configured_for.push_back("cdi");
        return c;
      }
    }
  }
  return c;
}

}  // namespace tarmac::doctor
