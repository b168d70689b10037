// SPDX-License-Identifier: Apache-2.0
//
// `tarmac top`'s screen rendered into a virtual terminal at 80x24 and
// 200x50, and its keys and clicks, on a status shaped as the agent gives it.
#include "top/top_view.h"

#include <gtest/gtest.h>

#include <csignal>
#include <regex>

#include "node/node_json.h"
#include "top/process_table.h"
#include "top/top_keys.h"

namespace tarmac::top {
namespace {

using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024 * 1024;

json Process(int64_t pid, const std::string& user, double gib, double sm, const std::string& name,
             int64_t parent = 1) {
  return {{"pid", pid},
          {"uid", 1000},
          {"user", user},
          {"name", name},
          {"command", "/usr/bin/" + name + " --train"},
          {"parent_pid", parent},
          {"used_memory_bytes", static_cast<int64_t>(gib * kGiB)},
          {"sm_utilization_ratio", sm},
          {"is_idle_holding", sm == 0 && gib > 0}};
}

TopData Lab() {
  TopData d;
  d.has_data = true;
  d.is_agent = true;
  d.now_unix = 1000;
  json gpus = json::array();
  for (int i = 0; i < 4; ++i) {
    json g = {{"index", i},
              {"name", "NVIDIA H100 80GB HBM3"},
              {"health", "ok"},
              {"utilization_gpu_ratio", i == 0 ? 0.95 : 0.0},
              {"memory_used_bytes", static_cast<int64_t>((i == 0   ? 40
                                                          : i == 1 ? 20
                                                                   : 0) *
                                                         kGiB)},
              {"memory_total_bytes", static_cast<int64_t>(80 * kGiB)},
              {"power_milliwatts", 350000},
              {"power_limit_milliwatts", 700000},
              {"temperature_celsius", i == 0 ? 88 : 40},
              {"is_idle", i != 0},
              {"processes", json::array()}};
    if (i == 0) {
      g["processes"] = {Process(100, "alice", 30, 0.9, "train"),
                        Process(101, "alice", 10, 0.5, "worker", 100)};
      g["lease"] = {{"id", 3}, {"user", "alice"}, {"kind", "run"}};
    }
    if (i == 1) g["processes"] = {Process(200, "bob", 20, 0, "notebook")};
    if (i == 3) g["xid_errors"] = {{"count", 2}, {"last_xid", 79}};
    if (i == 2) {
      g["mig_enabled"] = true;
      g["mig_instances"] = {{{"profile", "3g.40gb"},
                             {"gpu_instance_id", 1},
                             {"uuid", "MIG-a"},
                             {"memory_used_bytes", static_cast<int64_t>(5 * kGiB)},
                             {"memory_total_bytes", static_cast<int64_t>(40 * kGiB)},
                             {"pids", {300}},
                             {"lease", {{"id", 9}, {"user", "dana"}, {"kind", "reservation"}}}}};
      g["processes"] = {Process(300, "dana", 5, 0.2, "mig-job")};
      g["processes"][0]["gpu_instance_id"] = 1;
    }
    gpus.push_back(g);
  }
  // As the agent's status says it, decoded as top decodes it.
  d.status = node::NodeFromJson({{"version", 1}, {"host", "gpu-node-7"}, {"gpus", gpus}}).value();
  sched::LeaseShown lease;
  lease.lease.id = 3;
  lease.lease.user = "alice";
  lease.lease.gpus = {0};
  lease.lease.ends_at = sched::UnixTimeBase().FromUnix(1000 + 3120);
  d.leases = {lease};
  d.series[0] = std::vector<double>(100, 0.9);
  d.series[1] = {0.0, 0.5, 1.0};
  d.processes = ProcessesFromStatus(d.status);
  d.last_event = "12:00:01 lease 3 granted to alice";
  return d;
}

TEST(TopViewTest, EightyByTwentyFourShowsEveryGpuProcessAndTheKeys) {
  TopData data = Lab();
  TopUi ui;
  Screen screen(80, 24);
  Layout layout = RenderTop(data, ui, &screen);
  std::string text = screen.Text();
  EXPECT_NE(screen.Line(0).find("tarmac top · gpu-node-7 · 4 GPUs · 1 lease · 0 queued · agent"),
            std::string::npos)
      << text;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(screen.Line(1 + i).rfind(" " + std::to_string(i) + " H100 80GB", 0), 0u) << text;
  EXPECT_NE(screen.Line(1).find("95%"), std::string::npos) << text;
  EXPECT_NE(screen.Line(1).find("40/80G"), std::string::npos) << text;
  EXPECT_NE(screen.Line(1).find("lease 3 alice 52m"), std::string::npos) << text;
  EXPECT_NE(screen.Line(2).find("HELD-IDLE"), std::string::npos) << text;
  EXPECT_NE(screen.Line(3).find("IDLE"), std::string::npos) << text;
  EXPECT_NE(screen.Line(5).find("XID79"), std::string::npos) << text;
  EXPECT_NE(screen.Line(5).find("DRAIN"), std::string::npos) << text;  // Fallen off the bus.
  EXPECT_EQ(screen.Line(2).find("DRAIN"), std::string::npos) << text;
  // Every line fits the terminal.
  for (int r = 0; r < 24; ++r) EXPECT_LE(Columns(screen.Line(r)), 80) << r;
  // Processes, biggest GPU memory first, the selected (first) reversed.
  // GPU 2's MIG instance under it, with its holder.
  EXPECT_NE(screen.Line(4).find("MIG 3g.40gb"), std::string::npos) << text;
  EXPECT_NE(screen.Line(4).find("lease 9 dana"), std::string::npos) << text;
  EXPECT_NE(screen.Line(5).rfind(" 3 H100", 0), std::string::npos) << text;
  ASSERT_EQ(layout.shown_pids, (std::vector<int64_t>{100, 200, 101, 300}));
  EXPECT_NE(screen.Line(layout.process_header_row).find("GMEMv"), std::string::npos) << text;
  std::string first = screen.Line(layout.process_first_row);
  EXPECT_NE(first.find("100 alice"), std::string::npos) << text;
  EXPECT_NE(first.find("30.0G"), std::string::npos) << text;
  EXPECT_TRUE(screen.At(layout.process_first_row, 0).style.reverse);
  EXPECT_FALSE(screen.At(layout.process_first_row + 1, 0).style.reverse);
  EXPECT_NE(screen.Line(layout.process_first_row + 1).find("HELD-IDLE notebook"), std::string::npos) << text;
  EXPECT_NE(text.find("Leases (1) and queue (0)"), std::string::npos) << text;
  EXPECT_NE(screen.Line(22).find("lease 3 granted"), std::string::npos) << text;
  EXPECT_NE(screen.Line(23).find("q quit"), std::string::npos) << text;
  // The hot GPU's temperature in red; without colour, none.
  ui.is_color = false;
  Screen plain(80, 24);
  RenderTop(data, ui, &plain);
  for (int r = 0; r < 24; ++r) {
    for (int c = 0; c < 80; ++c) EXPECT_EQ(plain.At(r, c).style.color, Color::kDefault);
  }
}

TEST(TopViewTest, TwoHundredColumnsAddHostMemoryCommandsAndALongerGraph) {
  TopData data = Lab();
  data.processes[0].host_memory_bytes = 3LL << 30;
  TopUi ui;
  Screen narrow(80, 24), wide(200, 50);
  RenderTop(data, ui, &narrow);
  Layout layout = RenderTop(data, ui, &wide);
  EXPECT_NE(wide.Line(layout.process_header_row).find("HMEM"), std::string::npos);
  EXPECT_NE(wide.Line(layout.process_header_row).find("COMMAND"), std::string::npos);
  EXPECT_NE(wide.Line(layout.process_first_row).find("/usr/bin/train --train"), std::string::npos)
      << wide.Text();
  EXPECT_NE(wide.Line(layout.process_first_row).find("3.0G"), std::string::npos) << wide.Text();
  EXPECT_EQ(narrow.Line(2).find("/usr/bin/train"), std::string::npos);
  // The graph: GPU 0 is busy all along, GPU 1 has three readings.
  auto count = [](const std::string& line, const std::string& glyph) {
    size_t n = 0;
    for (size_t at = line.find(glyph); at != std::string::npos; at = line.find(glyph, at + glyph.size())) ++n;
    return n;
  };
  EXPECT_GT(count(wide.Line(1), "▇"), count(narrow.Line(1), "▇"));
  EXPECT_GE(count(wide.Line(1), "▇"), 40u) << wide.Line(1);
  // 50 rows: each GPU has a second line (clocks, PCIe, video engines), so
  // GPU 1 is on row 3; 24 rows have none to spare.
  EXPECT_NE(wide.Line(2).find("PCIe tx"), std::string::npos) << wide.Text();
  EXPECT_NE(wide.Line(2).find("enc "), std::string::npos) << wide.Text();
  // The graph's time axis, under it: its oldest column's age, then now
  // (one reading a second: so many columns, so many seconds).
  data.series_step_seconds = 60;
  Screen minutes(200, 50);
  RenderTop(data, ui, &minutes);
  std::string axis = minutes.Line(2);
  EXPECT_NE(axis.find("now"), std::string::npos) << axis;
  // Some 100 columns of a minute each: "-100m----…----now".
  EXPECT_TRUE(std::regex_search(axis, std::regex(R"(-[0-9]+m-+now)"))) << "[" << axis << "]";
  EXPECT_EQ(narrow.Text().find("PCIe tx"), std::string::npos) << narrow.Text();
  EXPECT_EQ(count(wide.Line(3), "█"), 1u) << wide.Line(3);
  EXPECT_EQ(count(wide.Line(3), "▄"), 1u) << wide.Line(3);
  // The tree view says it is on.
  TopUi tree = ui;
  tree.is_tree = true;
  Screen treed(200, 50);
  Layout tree_layout = RenderTop(data, tree, &treed);
  EXPECT_NE(treed.Line(tree_layout.process_header_row).find("[tree"), std::string::npos)
      << treed.Line(tree_layout.process_header_row);
  EXPECT_EQ(wide.Line(layout.process_header_row).find("[tree"), std::string::npos);
  // ASCII for terminals without UTF-8.
  ui.is_unicode = false;
  Screen ascii(200, 50);
  RenderTop(data, ui, &ascii);
  for (unsigned char c : ascii.Text()) {
    if (c >= 0x80) {
      // The header's separators are the only UTF-8 left... none allowed.
      ADD_FAILURE() << "a non-ASCII byte in the ASCII layout: " << ascii.Text();
      break;
    }
  }
}

TEST(TopViewTest, StaleDataSaysSoAndAHostileNameIsShownAsText) {
  TopData data = Lab();
  data.is_stale = true;
  data.age_seconds = 12;
  data.stale_why = "the agent does not answer";
  data.processes[0].name = "evil\x1b[2Jname";
  TopUi ui;
  Screen screen(100, 30);
  RenderTop(data, ui, &screen);
  EXPECT_NE(screen.Line(0).find("STALE 12s: the agent does not answer"), std::string::npos) << screen.Line(0);
  EXPECT_EQ(screen.Text().find('\x1b'), std::string::npos);
  EXPECT_NE(screen.Text().find("evil?[2Jname"), std::string::npos) << screen.Text();
  TopData empty;
  Screen waiting(80, 24);
  RenderTop(empty, ui, &waiting);
  EXPECT_NE(waiting.Line(0).find("waiting for the first reading"), std::string::npos) << waiting.Line(0);
}

TEST(TopKeysTest, SortFilterTreeSelectAndSignal) {
  TopData data = Lab();
  TopUi ui;
  Screen screen(80, 24);
  Layout layout = RenderTop(data, ui, &screen);
  // Down twice selects the third row; up once the second.
  HandleKey(kKeyDown, data, layout, &ui);
  HandleKey(kKeyDown, data, layout, &ui);
  EXPECT_EQ(ui.selected_pid, 101);
  HandleKey(kKeyUp, data, layout, &ui);
  EXPECT_EQ(ui.selected_pid, 200);
  // Reverse: smallest GPU memory first.
  HandleKey('r', data, layout, &ui);
  layout = RenderTop(data, ui, &screen);
  EXPECT_EQ(layout.shown_pids, (std::vector<int64_t>{300, 101, 200, 100}));
  // A click on PID's title sorts by PID; again, the other way.
  HandleClick(layout.process_header_row, 1, layout, &ui);
  EXPECT_EQ(ui.sort, SortKey::kPid);
  layout = RenderTop(data, ui, &screen);
  EXPECT_EQ(layout.shown_pids, (std::vector<int64_t>{300, 200, 101, 100}));
  HandleClick(layout.process_header_row, 1, layout, &ui);
  layout = RenderTop(data, ui, &screen);
  EXPECT_EQ(layout.shown_pids, (std::vector<int64_t>{100, 101, 200, 300}));
  // A click on a row selects it.
  HandleClick(layout.process_first_row + 2, 10, layout, &ui);
  EXPECT_EQ(ui.selected_pid, 200);
  // Filter: typed, kept with Enter, shown in the footer.
  HandleKey('/', data, layout, &ui);
  for (char c : std::string("ALI")) HandleKey(c, data, layout, &ui);
  EXPECT_TRUE(ui.is_editing_filter);
  HandleKey(kKeyEnter, data, layout, &ui);
  layout = RenderTop(data, ui, &screen);
  EXPECT_EQ(layout.shown_pids, (std::vector<int64_t>{100, 101}));
  EXPECT_NE(screen.Line(23).find("[filter: ALI]"), std::string::npos) << screen.Line(23);
  HandleKey(kKeyEscape, data, layout, &ui);
  EXPECT_TRUE(ui.filter.empty());
  // Tree: the worker under its parent.
  HandleKey('t', data, layout, &ui);
  layout = RenderTop(data, ui, &screen);
  std::vector<ProcessRow> rows = VisibleProcesses(data.processes, ui);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].process->pid, 100);
  EXPECT_EQ(rows[1].process->pid, 101);
  EXPECT_EQ(rows[1].depth, 1);
  EXPECT_NE(screen.Text().find("└ worker"), std::string::npos) << screen.Text();
  // k asks first; only y sends, and to the selected process.
  ui.selected_pid = 101;
  EXPECT_EQ(HandleKey('k', data, layout, &ui).action, TopAction::kNone);
  EXPECT_EQ(ui.overlay, Overlay::kConfirm);
  layout = RenderTop(data, ui, &screen);
  EXPECT_NE(screen.Text().find("Send SIGTERM to PID 101 (worker, user alice)?"), std::string::npos)
      << screen.Text();
  KeyOutcome no = HandleKey('n', data, layout, &ui);
  EXPECT_EQ(no.action, TopAction::kNone);
  EXPECT_EQ(ui.message, "cancelled");
  HandleKey('K', data, layout, &ui);
  KeyOutcome yes = HandleKey('y', data, layout, &ui);
  EXPECT_EQ(yes.action, TopAction::kSignal);
  EXPECT_EQ(yes.pid, 101);
  EXPECT_EQ(yes.signal, SIGKILL);
  // e opens the details and asks the driver for the environment.
  KeyOutcome details = HandleKey('e', data, layout, &ui);
  EXPECT_EQ(details.action, TopAction::kReadDetails);
  data.details_pid = 101;
  data.details_env = {"CUDA_VISIBLE_DEVICES=0"};
  RenderTop(data, ui, &screen);
  EXPECT_NE(screen.Text().find("CUDA_VISIBLE_DEVICES=0"), std::string::npos) << screen.Text();
  HandleKey('x', data, layout, &ui);
  EXPECT_EQ(ui.overlay, Overlay::kNone);
  HandleKey('?', data, layout, &ui);
  RenderTop(data, ui, &screen);
  EXPECT_NE(screen.Text().find("tarmac top: keys"), std::string::npos);
  EXPECT_EQ(HandleKey('q', data, layout, &ui).action, TopAction::kQuit);
}

TEST(TopKeysTest, SelectionScrollsAndStaysInRange) {
  TopData data = Lab();
  for (int i = 0; i < 60; ++i) {
    TopProcess p;
    p.pid = 1000 + i;
    p.gpu = 2;
    p.user = "carol";
    p.name = "load";
    p.gpu_memory_bytes = 1e6 * (60 - i);
    data.processes.push_back(p);
  }
  TopUi ui;
  Screen screen(80, 24);
  Layout layout = RenderTop(data, ui, &screen);
  HandleKey(kKeyEnd, data, layout, &ui);
  layout = RenderTop(data, ui, &screen);
  EXPECT_EQ(layout.shown_pids.back(), ui.selected_pid);
  EXPECT_GT(layout.scroll, 0);
  HandleKey(kKeyDown, data, layout, &ui);  // Past the end: stays.
  EXPECT_EQ(ui.selected_pid, layout.shown_pids.back());
  HandleKey(kKeyHome, data, layout, &ui);
  layout = RenderTop(data, ui, &screen);
  EXPECT_EQ(layout.scroll, 0);
  EXPECT_EQ(layout.shown_pids.front(), ui.selected_pid);
  HandleKey(kKeyPageDown, data, layout, &ui);
  EXPECT_EQ(ui.selected_pid, layout.shown_pids[static_cast<size_t>(layout.process_rows - 1)]);
}

}  // namespace
}  // namespace tarmac::top
