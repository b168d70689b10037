// SPDX-License-Identifier: Apache-2.0
#include "top/top_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>

#include "common/units.h"
#include "node/gpu_marks.h"
#include "node/health_verdict.h"
#include "top/process_table.h"

namespace tarmac::top {
namespace {

constexpr int kFullWidth = 120;

Style Colored(const TopUi& ui, Color color, bool bold = false) {
  return Style{ui.is_color ? color : Color::kDefault, bold, false, false};
}

// Green, yellow, red by how full.
Color LevelColor(double ratio) {
  return ratio >= 0.9 ? Color::kRed : ratio >= 0.6 ? Color::kYellow : Color::kGreen;
}

// "[|||||     ]", `width` wide; the fill coloured by level.
void Bar(Screen* s, const TopUi& ui, int row, int col, int width, std::optional<double> ratio) {
  if (width < 3) return;
  s->Put(row, col, "[");
  s->Put(row, col + width - 1, "]");
  int inner = width - 2;
  if (!ratio) {
    s->Put(row, col + 1, Fit("n/a", inner), Style{Color::kDefault, false, false, true});
    return;
  }
  double r = std::clamp(*ratio, 0.0, 1.0);
  int fill = static_cast<int>(std::lround(r * inner));
  s->Fill(row, col + 1, fill, "|", Colored(ui, LevelColor(r)));
}

// The recent utilization as one character per reading, newest at the right.
void Graph(Screen* s, const TopUi& ui, int row, int col, int width, const std::vector<double>& series) {
  static const char* kBlocks[] = {"▁", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char* kAscii[] = {"_", "_", ".", ":", ":", "-", "=", "+", "#"};
  int n = std::min<int>(width, static_cast<int>(series.size()));
  int start = col + width - n;
  s->Fill(row, col, width - n, ui.is_unicode ? "·" : ".", Style{Color::kDefault, false, false, true});
  for (int i = 0; i < n; ++i) {
    double v = std::clamp(series[series.size() - static_cast<size_t>(n) + static_cast<size_t>(i)], 0.0, 1.0);
    int level = static_cast<int>(std::lround(v * 8));
    s->Put(row, start + i, ui.is_unicode ? kBlocks[level] : kAscii[level], Colored(ui, LevelColor(v)));
  }
}

std::optional<double> AsDouble(const std::optional<int64_t>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

std::string ShortModel(std::string name) {
  for (const char* prefix : {"NVIDIA ", "Tesla "}) {
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  }
  return name;
}

// The health and state marks of GPU `g`, each with its colour (the marks
// `tarmac status` computes, node/gpu_marks.h).
std::vector<std::pair<std::string, Color>> MarksOf(const node::GpuView& g) {
  std::vector<std::pair<std::string, Color>> m;
  node::GpuHealth health = g.sample.health;
  if (health != node::GpuHealth::kOk) {
    m.push_back({health == node::GpuHealth::kLost           ? "LOST"
                 : health == node::GpuHealth::kUnresponsive ? "HUNG"
                                                            : "ERR",
                 Color::kRed});
  }
  if (health == node::GpuHealth::kOk && node::JudgeGpu(g).verdict == node::Verdict::kDrain)
    m.push_back({"DRAIN", Color::kRed});  // Nothing hands it out (docs/health.md).
  node::GpuMarks marks = node::MarkGpu(g);
  if (!marks.idle_holding_pids.empty()) {
    m.push_back({"HELD-IDLE", Color::kMagenta});
  } else if (marks.is_idle) {
    m.push_back({"IDLE", Color::kBlue});
  }
  if (g.xid_count > 0 && g.last_xid) m.push_back({fmt::format("XID{}", g.last_xid->xid), Color::kRed});
  if (g.sample.ecc.volatile_uncorrected.value_or(0) > 0) m.push_back({"ECC", Color::kRed});
  if (marks.is_pcie_degraded)
    m.push_back({fmt::format("PCIe-x{}", g.sample.pcie_width.value_or(0)), Color::kYellow});
  const std::vector<bool>& links = g.sample.nvlink_active;
  if (std::find(links.begin(), links.end(), false) != links.end()) m.push_back({"NVLINK", Color::kYellow});
  if (marks.is_throttled) m.push_back({"THROTTLE", Color::kYellow});
  return m;
}

// "lease 3 root 52m" for a lease (time left from the leases list).
std::string HolderText(const node::GpuLease& lease, const TopData& data) {
  std::string out = fmt::format("lease {} {}", lease.id, lease.user);
  if (!lease.slurm_job.empty()) out = "slurm " + lease.slurm_job;
  if (lease.is_backfill()) out += " backfill";
  for (const sched::LeaseShown& l : data.leases) {
    if (l.lease.id != lease.id || !l.lease.ends_at || data.now_unix <= 0) continue;
    out += " " + ShortDuration(sched::UnixTimeBase().ToUnix(*l.lease.ends_at) - data.now_unix);
  }
  return out;
}

std::string HolderOfGpu(const node::GpuView& g, const TopData& data) {
  if (g.lease) return HolderText(*g.lease, data);
  if (g.allocated_to) return "pod " + g.allocated_to->pod_namespace + "/" + g.allocated_to->pod;
  return "";
}

// One GPU's line. Returns the row after it (and its MIG instances').
// Where a GPU line's graph landed, for the time axis under it.
struct GraphSpan {
  int col = 0;
  int width = 0;
};

// A GPU's second line, when the screen has rows to spare: its clocks and
// P-state, PCIe traffic, video engines and, under MIG, engine activity;
// under the graph, its time axis ("-2m" at the oldest column, "now").
void GpuDetailLine(Screen* s, const node::GpuView& g, int row, GraphSpan graph, double step_seconds) {
  const node::GpuSample& x = g.sample;
  auto rate = [](const std::optional<double>& bytes_per_second) {
    return bytes_per_second ? ShortBytes(*bytes_per_second) + "/s" : std::string("-");
  };
  auto ratio = [](const std::optional<double>& r) {
    return r ? fmt::format("{:.0f}%", 100 * *r) : std::string("-");
  };
  std::string text =
      fmt::format("    {}  SM {}  PCIe tx {} rx {}  enc {} dec {}",
                  x.performance_state ? fmt::format("P{}", *x.performance_state) : std::string("P-"),
                  x.sm_clock_hertz ? fmt::format("{} MHz", *x.sm_clock_hertz / 1000000) : std::string("-"),
                  rate(g.pcie_tx_bytes_per_second), rate(g.pcie_rx_bytes_per_second),
                  ratio(x.encoder_utilization_ratio), ratio(x.decoder_utilization_ratio));
  if (!x.mig_instances.empty() && x.graphics_engine_active_ratio)
    text += "  engines " + ratio(x.graphics_engine_active_ratio);
  Style dim{Color::kDefault, false, false, true};
  int room = graph.width > 0 ? std::min(s->width(), graph.col - 1) : s->width();
  s->Put(row, 0, Fit(text, room), dim);
  if (graph.width < 12) return;
  std::string oldest = "-" + ShortDuration(graph.width * step_seconds);
  s->Put(row, graph.col, oldest, dim);
  s->Fill(row, graph.col + Columns(oldest), graph.width - Columns(oldest) - 3, "-", dim);
  s->Put(row, graph.col + graph.width - 3, "now", dim);
}

int GpuLine(Screen* s, const TopData& data, const TopUi& ui, const node::GpuView& g, int row, int last_row,
            bool with_details) {
  int w = s->width();
  bool full = w >= kFullWidth;
  int index = g.info.index;
  int name_width = full ? 18 : 10;
  int col = s->Put(row, 0, fmt::format("{:>2} ", index), Style{Color::kDefault, true, false, false});
  col = s->Put(row, col,
               fmt::format("{:<{}} ", Fit(ShortModel(g.info.name.empty() ? "?" : g.info.name), name_width),
                           name_width));
  int bar = full ? 16 : 8;
  std::optional<double> util = g.sample.utilization_gpu_ratio;
  Bar(s, ui, row, col, bar, util);
  col += bar;
  col = s->Put(row, col, util ? fmt::format("{:>4.0f}% ", 100 * *util) : "   -% ");
  std::optional<double> used = AsDouble(g.sample.memory_used_bytes);
  std::optional<double> total = AsDouble(g.sample.memory_total_bytes);
  std::optional<double> mem;
  if (used && total && *total > 0) mem = *used / *total;
  Bar(s, ui, row, col, bar, mem);
  col += bar;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  std::string memory = !(used && total) ? "-"
                       : full           ? ShortBytes(*used) + "/" + ShortBytes(*total)
                                        : fmt::format("{:.0f}/{:.0f}G", *used / kGiB, *total / kGiB);
  col = s->Put(row, col, fmt::format(" {:>{}} ", memory, full ? 11 : 7));
  std::optional<double> power = AsDouble(g.sample.power_milliwatts);
  std::optional<double> limit = AsDouble(g.sample.power_limit_milliwatts);
  col = s->Put(
      row, col,
      fmt::format("{:>8} ", power ? fmt::format("{:.0f}/{:.0f}W", *power / 1000, limit.value_or(0) / 1000)
                                  : std::string("-")));
  std::optional<double> temp = g.sample.temperature_celsius;
  Style temp_style = temp && *temp >= 85 ? Colored(ui, Color::kRed, true) : Style{};
  col = s->Put(row, col, temp ? fmt::format("{:>2.0f}C ", *temp) : " -C ", temp_style);
  // What is left: the graph, then marks and holder.
  std::string holder = HolderOfGpu(g, data);
  std::vector<std::pair<std::string, Color>> marks = MarksOf(g);
  int tail = Columns(holder) + 1;
  for (const auto& [text, color] : marks) tail += Columns(text) + 1;
  int graph = w - col - std::min(tail, full ? 40 : 24) - 1;
  GraphSpan span;
  if (graph >= 8) {
    auto it = data.series.find(index);
    Graph(s, ui, row, col, graph, it != data.series.end() ? it->second : std::vector<double>{});
    span = {col, graph};
    col += graph + 1;
  }
  for (const auto& [text, color] : marks) col = s->Put(row, col, text + " ", Colored(ui, color, true));
  s->Put(row, col, Fit(holder, w - col));
  ++row;
  if (with_details && row <= last_row) GpuDetailLine(s, g, row++, span, data.series_step_seconds);
  // MIG instances, under their GPU.
  for (const node::MigInstance& m : g.sample.mig_instances) {
    if (row > last_row) break;
    std::optional<double> mu = AsDouble(m.memory_used_bytes);
    std::optional<double> mt = AsDouble(m.memory_total_bytes);
    auto lease = g.mig_leases.find(m.uuid);
    std::string text =
        fmt::format("   {} MIG {:<8} GI {:<2} {:>11}  {}", ui.is_unicode ? "└" : "`-", m.profile,
                    m.gpu_instance_id, mu && mt ? ShortBytes(*mu) + "/" + ShortBytes(*mt) : "-",
                    lease != g.mig_leases.end() ? HolderText(lease->second, data) : "");
    s->Put(row++, 0, Fit(text, w));
  }
  return row;
}

struct Column {
  SortKey key;
  int width;
  bool is_right;
};

std::string CellText(const TopProcess& p, SortKey key, int depth, bool is_unicode) {
  switch (key) {
    case SortKey::kPid:
      return std::to_string(p.pid);
    case SortKey::kUser:
      return p.user;
    case SortKey::kGpu:
      return p.mig.empty() ? std::to_string(p.gpu) : fmt::format("{}/{}", p.gpu, p.mig);
    case SortKey::kGpuMemory:
      return p.gpu_memory_bytes ? ShortBytes(*p.gpu_memory_bytes) : "-";
    case SortKey::kSm:
      return p.sm_ratio ? fmt::format("{:.0f}", 100 * *p.sm_ratio) : "-";
    case SortKey::kCpu:
      return p.cpu_ratio ? fmt::format("{:.1f}", 100 * *p.cpu_ratio) : "-";
    case SortKey::kHostMemory:
      return p.host_memory_bytes ? ShortBytes(static_cast<double>(*p.host_memory_bytes)) : "-";
    case SortKey::kElapsed:
      return p.elapsed_seconds ? ShortDuration(*p.elapsed_seconds) : "-";
    case SortKey::kName: {
      std::string indent;
      for (int i = 0; i < depth; ++i) indent += "  ";
      if (depth > 0) indent += is_unicode ? "└ " : "`-";
      return indent + p.name;
    }
  }
  return "";
}

void Box(Screen* s, int top, int left, int height, int width, const std::vector<std::string>& lines,
         const TopUi& ui) {
  std::string h = ui.is_unicode ? "─" : "-";
  for (int r = 0; r < height; ++r) {
    s->Fill(top + r, left, width, " ");
    bool edge = r == 0 || r == height - 1;
    if (edge) {
      s->Fill(top + r, left, width, h);
      s->Put(top + r, left, ui.is_unicode ? (r == 0 ? "┌" : "└") : "+");
      s->Put(top + r, left + width - 1, ui.is_unicode ? (r == 0 ? "┐" : "┘") : "+");
    } else {
      s->Put(top + r, left, ui.is_unicode ? "│" : "|");
      s->Put(top + r, left + width - 1, ui.is_unicode ? "│" : "|");
    }
  }
  for (size_t i = 0; i < lines.size() && static_cast<int>(i) < height - 2; ++i) {
    s->Put(top + 1 + static_cast<int>(i), left + 2, Fit(lines[i], width - 4));
  }
}

void Overlays(Screen* s, const TopData& data, const TopUi& ui, const std::vector<ProcessRow>& rows) {
  std::vector<std::string> lines;
  if (ui.overlay == Overlay::kHelp) {
    lines = {"tarmac top: keys",
             "",
             "up/down, j/k, PgUp/PgDn, Home/End  select a process (or click it)",
             "s  sort by the next column    r  reverse the order",
             "click a column's title        sort by it",
             "/  filter (name, command, user, holder, PID); Enter keeps, Esc clears",
             "t  tree: processes under their parents",
             "k  SIGTERM the selected process   K  SIGKILL it (yours; any as root)",
             "e  its full command and GPU variables",
             "?  this help    Esc  close    q  quit",
             "",
             "Marks: IDLE (under 5 %), HELD-IDLE (memory held at 0 % SM), LOST, HUNG,",
             "XIDn, ECC, PCIe-xN (downtrained), NVLINK (a link down), THROTTLE."};
  } else if (ui.overlay == Overlay::kDetails) {
    int row = RowOf(rows, ui.selected_pid);
    if (row < 0) return;
    const TopProcess& p = *rows[static_cast<size_t>(row)].process;
    lines = {fmt::format("PID {}  user {}  GPU {}{}  {}", p.pid, p.user, p.gpu,
                         p.mig.empty() ? "" : "/" + p.mig, p.holder.empty() ? "no lease" : p.holder),
             "command:"};
    std::string command = p.command.empty() ? p.name : p.command;
    int width = std::min(s->width() - 8, 110);
    for (size_t i = 0; i < command.size() && lines.size() < 12; i += static_cast<size_t>(width)) {
      lines.push_back("  " + command.substr(i, static_cast<size_t>(width)));
    }
    lines.push_back("GPU variables in its environment:");
    if (data.details_pid != p.pid) {
      lines.push_back("  (reading…)");
    } else if (!data.details_env_error.empty()) {
      lines.push_back("  " + data.details_env_error);
    } else if (data.details_env.empty()) {
      lines.push_back("  none");
    } else {
      for (const std::string& v : data.details_env) lines.push_back("  " + v);
    }
    lines.push_back("");
    lines.push_back("Esc closes");
  } else if (ui.overlay == Overlay::kConfirm) {
    int row = RowOf(rows, ui.selected_pid);
    if (row < 0) return;
    const TopProcess& p = *rows[static_cast<size_t>(row)].process;
    lines = {fmt::format("Send {} to PID {} ({}, user {})?",
                         ui.confirm_signal == SIGKILL ? "SIGKILL" : "SIGTERM", p.pid, p.name, p.user),
             "y: send it    any other key: cancel"};
  } else {
    return;
  }
  int width = 0;
  for (const std::string& l : lines) width = std::max(width, Columns(l) + 4);
  width = std::min(width, s->width());
  int height = std::min(static_cast<int>(lines.size()) + 2, s->height());
  Box(s, std::max(0, (s->height() - height) / 2), std::max(0, (s->width() - width) / 2), height, width, lines,
      ui);
}

// For a terminal without UTF-8: the few characters the screen uses in
// ASCII, anything else (a process's name) as '?'.
void AsciiOnly(Screen* s) {
  for (int r = 0; r < s->height(); ++r) {
    for (int c = 0; c < s->width(); ++c) {
      const Cell& cell = s->At(r, c);
      if (cell.glyph.size() == 1) continue;
      std::string_view ascii = cell.glyph == "…" ? "~" : cell.glyph == "·" ? "|" : "?";
      s->Put(r, c, ascii, cell.style);
    }
  }
}

}  // namespace

std::string ShortBytes(double bytes) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  if (bytes >= 100 * kGiB) return fmt::format("{:.0f}G", bytes / kGiB);
  if (bytes >= kGiB) return fmt::format("{:.1f}G", bytes / kGiB);
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.0f}M", bytes / (1024.0 * 1024));
  if (bytes > 0) return fmt::format("{:.0f}K", std::max(1.0, bytes / 1024));
  return "0";
}

std::string ShortDuration(double seconds) {
  if (seconds < 0) seconds = 0;
  if (seconds < 120) return fmt::format("{:.0f}s", seconds);
  if (seconds < 7200) return fmt::format("{:.0f}m", seconds / 60);
  if (seconds < 172800) return fmt::format("{:.0f}h", seconds / 3600);
  return fmt::format("{:.0f}d", seconds / 86400);
}

namespace {

// The header line, and STALE at its right when the data is old.
void RenderHeader(const TopData& data, const TopUi& ui, size_t gpu_count, Screen* s) {
  int w = s->width();
  std::string head = !data.has_data
                         ? std::string("tarmac top")
                         : fmt::format("tarmac top · {} · {} · {} · {} queued · {}",
                                       data.status.hostname.empty() ? "?" : data.status.hostname,
                                       Counted(static_cast<int64_t>(gpu_count), "GPU"),
                                       Counted(static_cast<int64_t>(data.leases.size()), "lease"),
                                       data.queue.size(), data.is_agent ? "agent" : "NVML directly");
  int col = s->Put(0, 0, Fit(head, w), Style{Color::kDefault, true, false, false});
  if (data.is_stale || !data.has_data) {
    std::string stale = data.has_data
                            ? fmt::format("STALE {:.0f}s: {}", data.age_seconds, data.stale_why)
                            : (data.stale_why.empty() ? "waiting for the first reading…" : data.stale_why);
    int at = std::max(col + 1, w - Columns(stale));
    s->Put(0, at, Fit(stale, w - at), Colored(ui, Color::kRed, true));
  }
}

// The process panel's header row at `row`, its columns noted in `layout`.
void RenderProcessHeader(const std::vector<Column>& columns, int holder_width, bool full, const TopUi& ui,
                         int row, Screen* s, Layout* layout) {
  int col = 0;
  Style header{Color::kDefault, true, true, false};
  s->Fill(row, 0, s->width(), " ", header);
  for (const Column& c : columns) {
    std::string title = SortKeyTitle(c.key);
    if (c.key == ui.sort) title += ui.is_descending ? "v" : "^";
    layout->columns.push_back({col, c.key});
    s->Put(row, col,
           c.is_right ? fmt::format("{:>{}} ", title, c.width) : fmt::format("{:<{}} ", title, c.width),
           header);
    col += c.width + 1;
  }
  s->Put(row, col, fmt::format("{:<{}} ", "HOLDER", holder_width), header);
  layout->columns.push_back({col + holder_width + 1, SortKey::kName});
  s->Put(row, col + holder_width + 1,
         std::string(ui.sort == SortKey::kName ? (ui.is_descending ? "NAMEv" : "NAME^") : "NAME") +
             (full ? "  COMMAND" : "") + (ui.is_tree ? "  [tree: children under their parents]" : ""),
         header);
}

// The process rows from `layout->process_first_row`, scrolled to keep the
// selection in view.
void RenderProcessRows(const TopData& data, const TopUi& ui, const std::vector<ProcessRow>& rows,
                       const std::vector<Column>& columns, int holder_width, bool full, Screen* s,
                       Layout* layout) {
  int w = s->width();
  int row = layout->process_first_row;
  int selected = RowOf(rows, ui.selected_pid);
  int scroll = std::clamp(ui.scroll, 0, std::max(0, static_cast<int>(rows.size()) - layout->process_rows));
  if (selected >= 0 && selected < scroll) scroll = selected;
  if (selected >= scroll + layout->process_rows) scroll = selected - layout->process_rows + 1;
  layout->scroll = scroll;
  if (rows.empty()) {
    s->Put(row, 1,
           data.processes.empty() ? "no GPU processes" : "no process matches the filter '" + ui.filter + "'",
           Style{Color::kDefault, false, false, true});
  }
  for (int i = 0; i < layout->process_rows && scroll + i < static_cast<int>(rows.size()); ++i) {
    const ProcessRow& r = rows[static_cast<size_t>(scroll + i)];
    const TopProcess& p = *r.process;
    layout->shown_pids.push_back(p.pid);
    int c = 0;
    for (const Column& column : columns) {
      std::string text = Fit(CellText(p, column.key, 0, ui.is_unicode), column.width);
      c = s->Put(row, c,
                 column.is_right ? fmt::format("{:>{}} ", text, column.width)
                                 : fmt::format("{:<{}} ", text, column.width));
    }
    c = s->Put(row, c, fmt::format("{:<{}} ", Fit(p.holder, holder_width), holder_width));
    if (p.is_idle_holding) c = s->Put(row, c, "HELD-IDLE ", Colored(ui, Color::kMagenta, true));
    std::string name = CellText(p, SortKey::kName, r.depth, ui.is_unicode);
    if (full && !p.command.empty()) name += "  " + p.command;
    s->Put(row, c, Fit(name, w - c));
    if (scroll + i == selected) s->Restyle(row, 0, w, Style{Color::kDefault, false, true, false});
    ++row;
  }
}

// Up to three leases and the queue's head, in the rows above `events_row`.
void RenderLeases(const TopData& data, int leases_rows, int events_row, Screen* s) {
  int w = s->width();
  int lr = events_row - leases_rows;
  s->Put(lr++, 0, fmt::format("Leases ({}) and queue ({})", data.leases.size(), data.queue.size()),
         Style{Color::kDefault, true, false, false});
  const sched::TimeBase base = sched::UnixTimeBase();
  for (size_t i = 0; i < data.leases.size() && lr < events_row - (data.queue.empty() ? 0 : 1); ++i) {
    const sched::LeaseShown& shown = data.leases[i];
    const sched::Lease& l = shown.lease;
    std::string left = "no end";
    if (l.ends_at && data.now_unix > 0)
      left = ShortDuration(base.ToUnix(*l.ends_at) - data.now_unix) + " left";
    s->Put(lr++, 0,
           Fit(fmt::format("  {} {} {} GPU {} · {}{}", l.id, l.user, sched::LeaseKindName(l),
                           fmt::join(l.gpus, ","), left,
                           shown.idle_seconds > 0 ? " · idle " + ShortDuration(shown.idle_seconds) : ""),
               w));
  }
  if (!data.queue.empty() && lr < events_row) {
    const sched::PendingShown& q = data.queue[0];
    s->Put(lr, 0,
           Fit(fmt::format("  queue: {} waiting; first {} ({}): {}", data.queue.size(), q.pending.owner.user,
                           q.pending.id, q.reason),
               w));
  }
}

// The latest event, and the footer: the filter being typed, a message, or the keys.
void RenderFooter(const TopData& data, const TopUi& ui, bool full, Screen* s) {
  int w = s->width(), footer = s->height() - 1, events_row = s->height() - 2;
  if (!data.last_event.empty())
    s->Put(events_row, 0, Fit(data.last_event, w), Style{Color::kDefault, false, false, true});
  if (ui.is_editing_filter) {
    s->Put(footer, 0, Fit("Filter: " + ui.filter + "_   (Enter keeps it, Esc clears it)", w),
           Style{Color::kDefault, true, false, false});
  } else if (!ui.message.empty()) {
    s->Put(footer, 0, Fit(ui.message, w), Colored(ui, Color::kYellow, true));
  } else {
    std::string keys = full ? "q quit  ↑↓ select  s sort  r reverse  / filter  t tree  k SIGTERM  K SIGKILL  "
                              "e details  ? help"
                            : "q quit ↑↓ sel s sort r rev / filter t tree k TERM K KILL e info ? help";
    if (!ui.is_unicode) keys.replace(keys.find("↑↓"), std::string("↑↓").size(), "up/dn");
    if (!ui.filter.empty()) keys = "[filter: " + ui.filter + "]  " + keys;
    s->Put(footer, 0, Fit(keys, w), Style{Color::kDefault, false, false, true});
  }
}

}  // namespace

Layout RenderTop(const TopData& data, const TopUi& ui, Screen* s) {
  Layout layout;
  int w = s->width(), h = s->height();
  if (w < 20 || h < 6) {
    s->Put(0, 0, "tarmac top: the terminal is too small");
    return layout;
  }
  bool full = w >= kFullWidth;
  const std::vector<node::GpuView>& gpus = data.status.gpus;
  RenderHeader(data, ui, gpus.size(), s);
  int row = 1;
  // GPU panel: at most half of what is left, so processes keep room.
  int gpu_last = std::max(row + 1, row + (h - 6) / 2);
  // A tall screen (as 200x50) gives each GPU a second line when all fit.
  int gpu_lines = 0;
  for (const node::GpuView& g : gpus) gpu_lines += 1 + static_cast<int>(g.sample.mig_instances.size());
  bool with_details = full && row + gpu_lines + static_cast<int>(gpus.size()) <= gpu_last + 1;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (row > gpu_last) {
      s->Put(row - 1, 0,
             Fit(fmt::format("   … {} more GPUs (a taller terminal shows them)", gpus.size() - i), w),
             Style{Color::kDefault, false, false, true});
      break;
    }
    row = GpuLine(s, data, ui, gpus[i], row, gpu_last, with_details);
  }
  // Leases and queue, when there are any and room.
  int events_row = h - 2;
  int leases_rows = 0;
  if (!data.leases.empty() || !data.queue.empty()) {
    // Three leases, more on a tall screen.
    size_t lease_room = static_cast<size_t>(std::max(3, (h - 24) / 3));
    leases_rows = std::min<int>(
        static_cast<int>(std::min(data.leases.size(), lease_room)) + (data.queue.empty() ? 0 : 1) + 1,
        std::max(0, events_row - row - 6));
  }
  // Process panel.
  std::vector<ProcessRow> rows = VisibleProcesses(data.processes, ui);
  layout.total_rows = static_cast<int>(rows.size());
  std::vector<Column> columns = {
      {SortKey::kPid, 7, true},       {SortKey::kUser, 9, false}, {SortKey::kGpu, full ? 10 : 5, false},
      {SortKey::kGpuMemory, 6, true}, {SortKey::kSm, 4, true},    {SortKey::kCpu, 6, true}};
  if (full) columns.push_back({SortKey::kHostMemory, 6, true});
  columns.push_back({SortKey::kElapsed, 5, true});
  int holder_width = full ? 22 : 11;
  layout.process_header_row = row;
  RenderProcessHeader(columns, holder_width, full, ui, row, s, &layout);
  layout.process_first_row = row + 1;
  layout.process_rows = std::max(0, events_row - leases_rows - layout.process_first_row);
  RenderProcessRows(data, ui, rows, columns, holder_width, full, s, &layout);
  if (leases_rows > 0) RenderLeases(data, leases_rows, events_row, s);
  RenderFooter(data, ui, full, s);
  Overlays(s, data, ui, rows);
  if (!ui.is_unicode) AsciiOnly(s);
  return layout;
}

}  // namespace tarmac::top
