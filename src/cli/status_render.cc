// SPDX-License-Identifier: Apache-2.0
#include "cli/status_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "common/terminal_text.h"
#include "common/text_wrap.h"
#include "common/units.h"
#include "node/gpu_marks.h"
#include "node/health_verdict.h"

namespace tarmac::cli {
namespace {

constexpr const char* kReset = "\033[0m";
constexpr const char* kBold = "\033[1m";
constexpr const char* kRed = "\033[31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kGreen = "\033[32m";
constexpr const char* kDim = "\033[2m";

class Painter {
 public:
  explicit Painter(bool enabled) : enabled_(enabled) {}
  std::string operator()(const char* color, std::string_view text) const {
    if (!enabled_) return std::string(text);
    return fmt::format("{}{}{}", color, text, kReset);
  }

 private:
  bool enabled_;
};

std::string Percent(std::optional<double> ratio) {
  if (!ratio) return "-";
  return fmt::format("{:.0f}%", *ratio * 100);
}

// ECC health worth a glance: uncorrected errors since the driver loaded,
// rows waiting for a remap (a reset applies it) or that failed to remap.
std::string EccNote(const node::GpuSample& s) {
  std::vector<std::string> parts;
  if (s.ecc.volatile_uncorrected.value_or(0) > 0) {
    parts.push_back(fmt::format("ECC {} uncorrected", *s.ecc.volatile_uncorrected));
  }
  if (s.remapped_rows && s.remapped_rows->has_failure) parts.push_back("row remap FAILED");
  if (s.remapped_rows && s.remapped_rows->is_pending) parts.push_back("row remap pending (reset the GPU)");
  std::string out = fmt::format("{}", fmt::join(parts, ", "));
  return out;
}

// PCIe bytes per second, as the reader or the agent computed them
// (node/counter_rate.h).
std::string PcieThroughput(const node::GpuView& g) {
  if (!g.pcie_tx_bytes_per_second || !g.pcie_rx_bytes_per_second) return {};
  return fmt::format("PCIe tx {}/s rx {}/s", FormatBytes(static_cast<int64_t>(*g.pcie_tx_bytes_per_second)),
                     FormatBytes(static_cast<int64_t>(*g.pcie_rx_bytes_per_second)));
}

// "backfill lease 3 (alice), yielding", "Slurm job 42 lease 5 (erin)",
// "lease 4 (bob), lent to backfill lease 9 (alice)".
std::string LeaseNote(const node::GpuLease& l) {
  std::string kind;
  if (l.kind == node::LeaseKind::kBackfill || l.kind == node::LeaseKind::kPod) {
    kind = std::string(node::LeaseKindName(l.kind)) + " ";
  } else if (l.kind == node::LeaseKind::kSlurm) {
    kind = "Slurm job " + ForTerminal(l.slurm_job) + " ";
  }
  std::string lent =
      l.lent_to != 0 ? fmt::format(", lent to backfill lease {} ({})", l.lent_to, ForTerminal(l.lent_to_user))
                     : "";
  return fmt::format("{}lease {} ({}){}{}", kind, l.id, ForTerminal(l.user),
                     l.is_revoking ? ", yielding" : "", lent);
}

std::string Gib(int64_t bytes) { return fmt::format("{:.1f}", static_cast<double>(bytes) / (1 << 30)); }

std::string Memory(const node::GpuView& g) {
  const node::GpuSample& s = g.sample;
  std::optional<int64_t> total = s.memory_total_bytes ? s.memory_total_bytes : g.info.memory_total_bytes;
  if (!s.memory_used_bytes || !total) return "-";
  return fmt::format("{} / {} GiB", Gib(*s.memory_used_bytes), Gib(*total));
}

std::string Power(const node::GpuSample& s) {
  if (!s.power_milliwatts) return "-";
  if (!s.power_limit_milliwatts) return fmt::format("{:.0f} W", *s.power_milliwatts / 1000.0);
  return fmt::format("{:.0f} / {:.0f} W", *s.power_milliwatts / 1000.0, *s.power_limit_milliwatts / 1000.0);
}

std::string Temperature(const node::GpuSample& s) {
  if (!s.temperature_celsius) return "-";
  return fmt::format("{:.0f}C", *s.temperature_celsius);
}

std::string ClockText(const node::GpuSample& s) {
  if (!s.sm_clock_hertz) return "-";
  return fmt::format("{} MHz", *s.sm_clock_hertz / 1000000);
}

// `line` cut to `width` columns (0: as it is), "..." marking the cut; a
// colour left open by the cut is closed.
std::string Fit(const std::string& line, int width) {
  if (width <= 0 || TextColumns(line) <= static_cast<size_t>(width)) return line;
  std::string out;
  size_t columns = 0;
  bool has_color = false;
  for (size_t i = 0; i < line.size();) {
    if (line[i] == '\033') {
      size_t end = line.find('m', i);
      if (end == std::string::npos) break;
      out += line.substr(i, end - i + 1);
      has_color = true;
      i = end + 1;
      continue;
    }
    size_t len = 1;
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c >= 0xf0)
      len = 4;
    else if (c >= 0xe0)
      len = 3;
    else if (c >= 0xc0)
      len = 2;
    if (columns + 1 > static_cast<size_t>(width) - 3) break;
    out += line.substr(i, len);
    ++columns;
    i += len;
  }
  return out + "..." + (has_color ? "\033[0m" : "");
}

// The model as the narrow screen shows it: "H100 80GB HBM3".
std::string ShortName(const std::string& name, int width) {
  if (width > 0 && name.rfind("NVIDIA ", 0) == 0) return name.substr(7);
  return name;
}

// Throttle reasons in short words for the narrow screen.
std::string ThrottleWords(const std::vector<std::string>& reasons, int width) {
  std::vector<std::string> words;
  for (const std::string& r : reasons) {
    std::string w = ForTerminal(r);
    if (width > 0) {
      w = r.find("thermal") != std::string::npos ? "thermal"
          : r == "sw_power_cap"                  ? "power cap"
          : r == "hw_power_brake_slowdown"       ? "power brake"
          : r == "hw_slowdown"                   ? "hw slowdown"
                                                 : r;
    }
    if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  }
  std::string out = fmt::format("{}", fmt::join(words, ","));
  return out;
}

// `text` in at most `width` bytes, "..." marking a cut, which never falls
// inside a UTF-8 character.
std::string Cut(std::string text, size_t width) {
  if (text.size() <= width) return text;
  size_t keep = width <= 3 ? width : width - 3;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xc0) == 0x80) --keep;
  return text.substr(0, keep) + (width <= 3 ? "" : "...");
}

std::string CudaVersion(std::optional<int> v) {
  if (!v) return "-";
  return fmt::format("{}.{}", *v / 1000, (*v % 1000) / 10);
}

// One MIG instance's line under its GPU: id, profile, memory, engine
// activity (GPM), lease or pod, idle holders.
std::string RenderMigInstance(const node::GpuView& g, const node::MigInstance& mi, const Painter& paint) {
  std::string memory = "-";
  if (mi.memory_total_bytes && mi.memory_used_bytes) {
    memory = fmt::format("{} / {} GiB", Gib(*mi.memory_used_bytes), Gib(*mi.memory_total_bytes));
  }
  std::vector<std::string> notes;
  if (node::IsMigInstanceIdle(mi, g)) notes.push_back(paint(kYellow, "idle"));
  if (auto l = g.mig_leases.find(mi.uuid); l != g.mig_leases.end()) {
    notes.push_back(paint(kYellow, LeaseNote(l->second)));
  }
  if (auto p = g.mig_allocated_to.find(mi.uuid); p != g.mig_allocated_to.end()) {
    notes.push_back(
        fmt::format("pod {}/{}", ForTerminal(p->second.pod_namespace), ForTerminal(p->second.pod)));
  }
  int holders = 0;
  for (const node::ProcessView& p : g.processes) {
    holders += p.process.gpu_instance_id == mi.gpu_instance_id && node::IsIdleHolding(p, g) ? 1 : 0;
  }
  if (holders > 0)
    notes.push_back(paint(kYellow, fmt::format("{} idle holder{}", holders, holders == 1 ? "" : "s")));
  std::string joined = fmt::format("{}", fmt::join(notes, "  "));
  // The notes before the MIG UUID: on a narrow screen the UUID's tail is
  // what is cut.
  return fmt::format("  {} {:<9} gi {:<2} ci {:<2} {:<18}{:>5}  {}{}{}", paint(kDim, "MIG"),
                     ForTerminal(mi.profile), mi.gpu_instance_id, mi.compute_instance_id, memory,
                     Percent(mi.graphics_engine_active_ratio), joined, joined.empty() ? "" : "  ",
                     paint(kDim, ForTerminal(mi.uuid)));
}

// What the summary line counts.
struct StatusCounts {
  int idle = 0;
  int holding = 0;
  int problems = 0;
};

// The widths of the GPU table's text columns: narrower under 100 columns,
// so that at 80 every reading keeps its digits and unit.
struct Columns {
  int name = 19;
  int memory = 18;
  int power = 14;
};

Columns ColumnsFor(int width) {
  if (width == 0) return {26, 18, 14};
  if (width < 100) return {15, 17, 12};
  return {};
}

// How one screen is laid out: its options, columns, and (to fit a height)
// each GPU's processes counted on its line rather than listed.
struct Layout {
  const RenderOptions& options;
  Columns columns;
  bool fold_processes = false;
};

// A GPU that cannot be read: its index, name and why, on one line.
std::string UnreadableLine(const node::GpuView& g, const node::GpuMarks& m, const RenderOptions& options,
                           const Painter& paint, const Columns& columns) {
  const int name_width = columns.name;
  const node::GpuSample& s = g.sample;
  const char* what = m.is_lost                                       ? "LOST"
                     : s.health == node::GpuHealth::kNoPermission    ? "NO PERMISSION"
                     : s.health == node::GpuHealth::kDriverNotLoaded ? "NO DRIVER"
                     : s.health == node::GpuHealth::kUnresponsive    ? "UNRESPONSIVE"
                                                                     : "UNREADABLE";
  return Fit(fmt::format("{:<4}{:<{}}{}  {}", g.info.index,
                         Cut(ShortName(g.info.name.empty() ? "?" : ForTerminal(g.info.name), options.width),
                             static_cast<size_t>(name_width - 1)),
                         name_width, paint(kRed, what), ForTerminal(s.error)),
             options.width) +
         "\n";
}

// The notes column of a readable GPU: busy or idle, problems, PCIe
// traffic, lease, idle holders, the recent utilization under --watch.
std::vector<std::string> GpuNotes(const node::GpuView& g, const node::GpuMarks& m,
                                  const RenderOptions& options, const Painter& paint, StatusCounts* counts) {
  const node::GpuSample& s = g.sample;
  std::vector<std::string> notes;
  // A GPU to drain says so first: nothing hands it out (docs/health.md).
  // Its evidence is counted as the problem it is, below.
  if (node::JudgeGpu(g).verdict == node::Verdict::kDrain) notes.push_back(paint(kRed, "DRAIN"));
  if (g.drained)
    notes.push_back(ForTerminal(fmt::format("(drained by {}: {})", g.drained->by, g.drained->reason)));
  if (m.is_idle) {
    ++counts->idle;
    notes.push_back(paint(kYellow, "idle"));
  } else {
    notes.push_back(paint(kGreen, "busy"));
  }
  if (m.is_throttled) {
    ++counts->problems;
    notes.push_back(
        paint(kRed, fmt::format("THROTTLED ({})", ThrottleWords(m.throttle_reasons, options.width))));
  }
  if (m.is_pcie_degraded) {
    ++counts->problems;
    notes.push_back(paint(kRed, fmt::format("PCIe x{} of x{}", *s.pcie_width, *g.info.pcie_width_max)));
  }
  if (g.xid_count > 0 && g.last_xid) {
    ++counts->problems;
    std::string codes;
    for (const auto& [code, count] : g.xid_count_by_code)
      codes += (codes.empty() ? "" : ", ") + std::to_string(code);
    if (codes.empty()) codes = std::to_string(g.last_xid->xid);
    notes.push_back(paint(kRed, "Xid " + codes));
  }
  if (std::string ecc = EccNote(s); !ecc.empty()) {
    ++counts->problems;
    notes.push_back(paint(kRed, ecc));
  }
  if (std::string pcie = PcieThroughput(g); !pcie.empty()) notes.push_back(pcie);
  if (g.lease) notes.push_back(paint(kYellow, LeaseNote(*g.lease)));
  if (!m.idle_holding_pids.empty()) {
    counts->holding += static_cast<int>(m.idle_holding_pids.size());
    notes.push_back(paint(kYellow, fmt::format("{} idle holder{}", m.idle_holding_pids.size(),
                                               m.idle_holding_pids.size() == 1 ? "" : "s")));
  }
  if (options.is_watch && g.recent_utilization_ratio) {
    notes.push_back(paint(kDim, fmt::format("recent {}", Percent(g.recent_utilization_ratio))));
  }
  return notes;
}

// The GPU's row with as many notes as fit on its line; the rest on lines of
// their own under it, indented to the notes column.
std::string GpuLines(const std::string& row, const std::vector<std::string>& notes, int width) {
  std::string out;
  std::string line = row;
  bool is_first = true;
  for (const std::string& note : notes) {
    std::string next = line + (is_first ? "" : "  ") + note;
    if (width > 0 && TextColumns(next) > static_cast<size_t>(width)) {
      std::string done = line;
      while (!done.empty() && done.back() == ' ') done.pop_back();
      out += Fit(done, width) + "\n";
      next = std::string(row.size() < 60 ? row.size() : 8, ' ') + note;
    }
    line = next;
    is_first = false;
  }
  return out + Fit(line, width) + "\n";
}

// One process's line under its GPU (or MIG instance), marked when it holds
// memory without computing.
std::string ProcessLine(const node::GpuView& g, const node::ProcessView& p, const char* indent,
                        const RenderOptions& options, const Painter& paint) {
  std::string mem = p.process.used_memory_bytes ? FormatBytes(*p.process.used_memory_bytes) : "-";
  std::string sm = Percent(p.process.sm_utilization_ratio);
  bool is_holding = node::IsIdleHolding(p, g);
  const bool is_narrow = options.width > 0 && options.width < 100;
  std::string marker = !is_holding ? ""
                       : p.process.gpu_instance_id
                           ? (is_narrow ? "  <- instance idle" : "  <- holds memory, instance idle")
                       : is_narrow ? "  <- idle holder"
                                   : "  <- holds memory at 0% SM";
  std::string head = fmt::format("{}{:>8}  {:<10}{:>10}  {:>4}  ", indent, p.process.pid,
                                 Cut(ForTerminal(p.details.user), 9), mem, sm);
  std::string command = ForTerminal(p.details.command);
  int room = options.width > 0 ? std::max(10, options.width - static_cast<int>(head.size() + marker.size()))
                               : static_cast<int>(command.size());
  std::string line = head + Cut(command, static_cast<size_t>(room)) + marker;
  return Fit(is_holding ? paint(kYellow, line) : line, options.width) + "\n";
}

// A readable GPU: its line(s), its MIG instances with their processes,
// then the processes on the whole GPU.
std::string ReadableGpu(const node::GpuView& g, const node::GpuMarks& m, const Layout& layout,
                        const Painter& paint, StatusCounts* counts) {
  const RenderOptions& options = layout.options;
  const Columns& c = layout.columns;
  const node::GpuSample& s = g.sample;
  std::vector<std::string> notes = GpuNotes(g, m, options, paint, counts);
  if (layout.fold_processes && !g.processes.empty()) {
    notes.push_back(
        paint(kDim, fmt::format("{} process{}", g.processes.size(), g.processes.size() == 1 ? "" : "es")));
  }
  std::string util = Percent(s.utilization_gpu_ratio);
  if (!s.utilization_gpu_ratio && s.graphics_engine_active_ratio) {
    util = Percent(s.graphics_engine_active_ratio);  // Under MIG: the engine's activity (GPM).
  }
  std::string row =
      fmt::format("{:<4}{:<{}}{:>5}  {:<{}}{:<{}}{:>5}  {:>9}  ", g.info.index,
                  Cut(ShortName(ForTerminal(g.info.name), options.width), static_cast<size_t>(c.name - 1)),
                  c.name, util, Memory(g), c.memory, Power(s), c.power, Temperature(s), ClockText(s));
  std::string out = GpuLines(row, notes, options.width);
  for (const node::MigInstance& mi : s.mig_instances) {
    out += Fit(RenderMigInstance(g, mi, paint), options.width) + "\n";
    if (layout.fold_processes) continue;
    for (const node::ProcessView& p : g.processes) {
      if (p.process.gpu_instance_id == mi.gpu_instance_id) out += ProcessLine(g, p, "      ", options, paint);
    }
  }
  if (layout.fold_processes) return out;
  bool has_whole_gpu_processes = false;
  for (const node::ProcessView& p : g.processes) has_whole_gpu_processes |= !p.process.gpu_instance_id;
  if (has_whole_gpu_processes) {
    out += paint(
        kDim, fmt::format("    {:>8}  {:<10}{:>10}  {:>4}  {}\n", "PID", "USER", "GPU MEM", "SM", "COMMAND"));
  }
  for (const node::ProcessView& p : g.processes) {
    if (!p.process.gpu_instance_id) out += ProcessLine(g, p, "    ", options, paint);
  }
  return out;
}

}  // namespace

namespace {

std::string RenderScreen(const node::NodeView& node_view, const Layout& layout) {
  const RenderOptions& options = layout.options;
  Painter paint(options.use_color);
  std::string out;
  StatusCounts counts;
  out += fmt::format(
      "{}  {} GPU{} via {}{}  driver {}  CUDA {}\n", paint(kBold, ForTerminal(node_view.hostname)),
      node_view.gpus.size(), node_view.gpus.size() == 1 ? "" : "s", node_view.backend,
      options.is_from_agent ? " (agent)" : "",
      node_view.system.driver_version.empty() ? "-" : ForTerminal(node_view.system.driver_version),
      CudaVersion(node_view.system.cuda_driver_version));
  if (!node_view.backend_error.empty()) {
    out += paint(kRed, fmt::format("GPUs unreadable: {}", ForTerminal(node_view.backend_error))) +
           "\n  the agent keeps serving and re-attaches when the driver is back\n";
  }
  const Columns& c = layout.columns;
  out += paint(kDim, fmt::format("{:<4}{:<{}}{:>5}  {:<{}}{:<{}}{:>5}  {:>9}  {}\n", "GPU", "NAME", c.name,
                                 "UTIL", "MEMORY", c.memory, "POWER", c.power, "TEMP", "SM CLOCK", "NOTES"));
  for (const node::GpuView& g : node_view.gpus) {
    node::GpuMarks m = node::MarkGpu(g);
    if (m.is_unreadable) {
      ++counts.problems;
      out += UnreadableLine(g, m, options, paint, c);
    } else {
      out += ReadableGpu(g, m, layout, paint, &counts);
    }
  }
  out += fmt::format("{} of {} GPUs idle; {} process{} holding memory without computing; {} problem{}\n",
                     counts.idle, node_view.gpus.size(), counts.holding, counts.holding == 1 ? "" : "es",
                     counts.problems, counts.problems == 1 ? "" : "s");
  return out;
}

size_t Lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

std::string RenderStatus(const node::NodeView& node_view, const RenderOptions& options) {
  Layout layout{options, ColumnsFor(options.width)};
  std::string screen = RenderScreen(node_view, layout);
  const size_t height = options.height > 0 ? static_cast<size_t>(options.height) : 0;
  if (height == 0 || Lines(screen) <= height) return screen;
  layout.fold_processes = true;
  screen = RenderScreen(node_view, layout);
  if (Lines(screen) <= height) return screen;
  // Still too tall: the first lines, and how many more there are.
  size_t keep = height - 1, at = 0;
  for (size_t i = 0; i < keep; ++i) at = screen.find('\n', at) + 1;
  return screen.substr(0, at) +
         Fit(fmt::format("... {} more lines: a taller terminal, or tarmac status, shows them",
                         Lines(screen) - keep),
             options.width) +
         "\n";
}

}  // namespace tarmac::cli
