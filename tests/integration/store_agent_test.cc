// SPDX-License-Identifier: Apache-2.0
//
// The history store as the agent writes it: killed mid-write again and
// again, out of space and back, a newer or corrupt database; and the read
// commands over what it wrote.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <random>

#include "store/schema.h"
#include "testutil/agent_fixture.h"
#include "testutil/browser.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

// Measures the report's heatmap as Chromium lays it out, and writes the
// result as JSON into the page (read back with --dump-dom).
constexpr const char* kHeatmapLayoutCheck = R"(<pre id="layout-check"></pre><script>
(() => {
  const svg = document.querySelector("svg.heatmap");
  const box = svg.getBoundingClientRect();
  const rect = (e) => e.getBoundingClientRect();
  const apart = (a, b) => a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
  const times = [...svg.children].filter((e) => e.tagName === "text" && e.getAttribute("font-size") === "11");
  const legend = svg.querySelector("g.legend");
  const legendTexts = legend ? [...legend.querySelectorAll("text")].map(rect) : [];
  let legendOverlaps = 0;
  for (let i = 0; i < legendTexts.length; i++)
    for (let j = i + 1; j < legendTexts.length; j++) legendOverlaps += apart(legendTexts[i], legendTexts[j]) ? 0 : 1;
  const fill = (e) => getComputedStyle(e).fill;
  const swatches = legend ? [...legend.querySelectorAll("rect")].map(fill) : [];
  const held = [...svg.querySelectorAll("rect.held-idle")].map(fill);
  const outside = [...svg.querySelectorAll("text")].filter((t) => rect(t).left < box.left - 0.5 || rect(t).right > box.right + 0.5);
  document.getElementById("layout-check").textContent = JSON.stringify({
    time_labels: times.length,
    time_labels_apart: times.length === 2 && apart(rect(times[0]), rect(times[1])),
    legend_labels: legendTexts.length,
    legend_overlaps: legendOverlaps,
    swatches: swatches,
    held_idle_fills: held,
    text_outside: outside.map((t) => t.textContent),
  });
})();
</script>)";

class StoreAgentTest : public AgentFixture {
 public:
  std::string Db() const { return dir_.path() + "/state/tarmac.db"; }
  std::string FastConfig() { return dir_.Write("agent.toml", "[sampler]\nfast_interval = \"100ms\"\n"); }
  json StoreStatus() {
    ipc::Request hello;
    hello.method = "hello";
    Result<json> r = ipc::CallAgent(Socket(), hello, std::chrono::seconds(2));
    return r.ok() ? r.value()["store"] : json();
  }
  // Newest stored second (journal or packed minutes).
  int64_t NewestStored() {
    Result<std::unique_ptr<store::Db>> db = store::OpenForReading(Db());
    if (!db.ok()) return 0;
    int64_t journal = db.value()->QueryInt("SELECT MAX(t) FROM tick_journal").value().value_or(0);
    int64_t folded = db.value()->QueryInt("SELECT MAX(minute) * 60 FROM gpu_samples").value().value_or(0);
    return std::max(journal, folded);
  }
  // The report as a browser shows it: the two time labels apart, every
  // legend label apart and inside the picture, held idle in its own colour
  // (neither a utilization shade nor "no data") and used for the idle
  // holder's hours; and a screenshot under the build folder to look at.
  void ExpectHeatmapReadsInChromium(std::string page) {
    ASSERT_FALSE(ChromiumPath().empty()) << "no Chromium: scripts/install-deps installs it";
    size_t end = page.rfind("</body>");
    ASSERT_NE(end, std::string::npos);
    std::string checked = dir_.Write("report-checked.html", page.insert(end, kHeatmapLayoutCheck));
    RunResult dom = ChromiumDumpDom("file://" + checked, dir_.path() + "/chromium");
    ASSERT_EQ(dom.exit_code, 0) << dom.err;
    size_t start = dom.out.find("<pre id=\"layout-check\">");
    ASSERT_NE(start, std::string::npos) << dom.out.substr(0, 2000);
    start = dom.out.find('>', start) + 1;
    json layout = json::parse(dom.out.substr(start, dom.out.find("</pre>", start) - start));
    EXPECT_EQ(layout["time_labels"], 2) << layout.dump();
    EXPECT_EQ(layout["time_labels_apart"], true) << layout.dump();
    EXPECT_EQ(layout["legend_labels"], 8) << layout.dump();  // "utilization", 5 levels, held idle, no data.
    EXPECT_EQ(layout["legend_overlaps"], 0) << layout.dump();
    EXPECT_TRUE(layout["text_outside"].empty()) << layout.dump();
    std::vector<std::string> swatches = layout["swatches"];
    ASSERT_EQ(swatches.size(), 7u) << layout.dump();
    std::string held = swatches[5];
    for (size_t i = 0; i < swatches.size(); ++i) {
      if (i == 5) continue;
      EXPECT_NE(swatches[i], held) << "held idle looks like swatch " << i << ": " << layout.dump();
    }
    ASSERT_FALSE(layout["held_idle_fills"].empty())
        << "the idle holder's hour is not marked: " << layout.dump();
    for (const json& f : layout["held_idle_fills"]) EXPECT_EQ(f, held);

    std::string png = BinDir() + "/../test-screenshots/report.png";
    std::filesystem::create_directories(BinDir() + "/../test-screenshots");
    RunResult shot = ChromiumScreenshot("file://" + dir_.path() + "/report.html", png, 1200, 900,
                                        dir_.path() + "/chromium");
    ASSERT_EQ(shot.exit_code, 0) << shot.err;
    std::ifstream image(png, std::ios::binary);
    std::string header(24, '\0');
    image.read(header.data(), 24);
    ASSERT_EQ(header.substr(1, 3), "PNG") << png;
    auto be32 = [&](size_t at) {
      return (uint32_t{static_cast<uint8_t>(header[at])} << 24) |
             (uint32_t{static_cast<uint8_t>(header[at + 1])} << 16) |
             (uint32_t{static_cast<uint8_t>(header[at + 2])} << 8) |
             uint32_t{static_cast<uint8_t>(header[at + 3])};
    };
    EXPECT_EQ(be32(16), 1200u);  // IHDR width and height.
    EXPECT_EQ(be32(20), 900u);
  }
  std::string IntegrityCheck() {
    Result<std::unique_ptr<store::Db>> db = store::Db::Open(Db(), store::Db::Mode::kReadWriteCreate);
    if (!db.ok()) return db.status().ToString();
    Result<store::Stmt> check = db.value()->Prepare("PRAGMA integrity_check");
    if (!check.ok()) return "no answer";
    Result<bool> row = check.value().Step();
    if (!row.ok() || !row.value()) return "no answer";
    return check.value().Text(0);
  }
};

TEST_F(StoreAgentTest, KilledMidWriteAgainAndAgainTheDatabaseStaysWholeAndLosesAtMostTheLastTick) {
  UseScenarioText("[[gpu]]\ncount = 4\n");
  StartLoad("1", {"--memory", "2GiB", "--util", "30"});
  std::string config = FastConfig();
  std::mt19937 rng(42);
  int64_t written_before = 0;
  for (int round = 0; round < 8; ++round) {
    Child* agent = StartAgent({"--config", config});
    std::this_thread::sleep_for(std::chrono::milliseconds(1100 + rng() % 700));
    json store = StoreStatus();
    ASSERT_TRUE(store.is_object()) << ReadLog();
    int64_t kill_second =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    agent->KillAndWait(SIGKILL);
    EXPECT_EQ(IntegrityCheck(), "ok") << "round " << round;
    // Stored up to the second before the kill, or the one before that if a
    // tick was in flight.
    EXPECT_GE(NewestStored(), kill_second - 2) << "round " << round;
    EXPECT_GT(store["ticks_written"].get<int64_t>(), 0);
    written_before += store["ticks_written"].get<int64_t>();
  }
  // The history reads back whole through the CLI.
  RunResult history = Tarmac({"history", "--db", Db(), "--since", "5m", "--step", "1s", "--format", "csv",
                              "--gpu", "1", "--metric", "memory"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  int rows = 0;
  for (char c : history.out) rows += c == '\n' ? 1 : 0;
  EXPECT_GE(rows - 1, 8);  // At least a second per round.
  EXPECT_NE(history.out.find(",2048.0"), std::string::npos) << history.out;
}

TEST_F(StoreAgentTest, OutOfSpaceHistoryPausesLiveDataGoesOnAndHistoryResumes) {
  UseScenarioText("[[gpu]]\ncount = 8\n");
  // A file-size limit stands in for a full disk: writes past it fail.
  Child* agent = StartAgent({"--config", FastConfig()}, {"prlimit", "--fsize=90000:unlimited", "--"});
  for (int i = 0; i < 300 && ReadLog().find("history paused") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(ReadLog().find("history paused"), std::string::npos) << ReadLog();
  EXPECT_TRUE(StoreStatus()["paused"].get<bool>());
  json live = AgentStatus();
  EXPECT_EQ(live["gpus"].size(), 8u);  // Live data is still served.
  int64_t written = StoreStatus()["ticks_written"].get<int64_t>();
  // Space returns.
  RunResult raise =
      RunCommand({"prlimit", "--pid", std::to_string(agent->pid()), "--fsize=unlimited:unlimited"}, {});
  ASSERT_EQ(raise.exit_code, 0) << raise.err;
  for (int i = 0; i < 300 && ReadLog().find("history resumed") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(ReadLog().find("history resumed"), std::string::npos) << ReadLog();
  for (int i = 0; i < 50 && StoreStatus()["ticks_written"].get<int64_t>() <= written; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GT(StoreStatus()["ticks_written"].get<int64_t>(), written);
  EXPECT_FALSE(StoreStatus()["paused"].get<bool>());
  agent->KillAndWait(SIGTERM);
  EXPECT_EQ(IntegrityCheck(), "ok");
}

TEST_F(StoreAgentTest, ANewerDatabaseIsRefusedTheAgentServesWithoutHistory) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  std::filesystem::create_directories(dir_.path() + "/state");
  {
    Result<std::unique_ptr<store::Db>> db = store::OpenForWriting(Db());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db.value()->Exec("PRAGMA user_version = 7").ok());
  }
  StartAgent();
  EXPECT_TRUE(WaitForLog("newer tarmac (schema 7")) << ReadLog();
  EXPECT_NE(ReadLog().find("history is off"), std::string::npos);
  EXPECT_EQ(AgentStatus()["gpus"].size(), 2u);
  RunResult report = Tarmac({"report", "--db", Db()});
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_NE(report.err.find("newer tarmac"), std::string::npos) << report.err;
}

TEST_F(StoreAgentTest, ACorruptDatabaseIsMovedAsideAndRecorded) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  std::filesystem::create_directories(dir_.path() + "/state");
  std::ofstream(Db()) << std::string(4096, '\x42');
  StartAgent({"--config", FastConfig()});
  EXPECT_TRUE(WaitForLog("moving it aside")) << ReadLog();
  bool found = false;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/state")) {
    found = found || e.path().filename().string().rfind("tarmac.db.corrupt-", 0) == 0;
  }
  EXPECT_TRUE(found);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Result<std::unique_ptr<store::Db>> db = store::OpenForReading(Db());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(
      db.value()->QueryInt("SELECT COUNT(*) FROM events WHERE kind = 'store_recovered'").value().value_or(0),
      1);
}

TEST_F(StoreAgentTest, ReadCommandsRejectBadRangesAndStepsOneClearErrorEach) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartAgent({"--config", FastConfig()});
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"history", "--since", "yesterday"}, "--since: 'yesterday' is not a time"},
      {{"history", "--until", "2026-13-40"}, "--until: '2026-13-40' is not a time"},
      {{"history", "--step", "fast"}, "--step: not a duration"},
      {{"history", "--step", "0s"}, "--step: must be at least 1s"},
      {{"history", "--since", "1h", "--until", "2h"}, "--since must be before --until"},
      {{"report", "--since", "-3d"}, "--since: '-3d' is not a time"},
      {{"export", "--since", "@x"}, "--since: '@x' is not a time"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--db", Db()});
    RunResult r = Tarmac(args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // One line.
  }
}

}  // namespace
}  // namespace tarmac::testing

namespace tarmac::testing {
namespace {

TEST_F(StoreAgentTest, ReportHistoryExportAndInfoReadWhatTheAgentWrote) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartLoad("1", {"--memory", "3GiB", "--util", "0"});
  Child* agent = StartAgent({"--config", FastConfig()});
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  agent->KillAndWait(SIGTERM);  // A clean stop folds the minute in progress.
  RunResult report = Tarmac({"report", "--db", Db(), "--since", "1h", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  json r = json::parse(report.out);
  ASSERT_EQ(r["gpus"].size(), 2u);
  EXPECT_GT(r["gpus"][1]["held_idle_hours"].get<double>(), 0) << report.out;
  EXPECT_EQ(r["gpus"][0]["held_idle_hours"].get<double>(), 0);
  ASSERT_EQ(r["top_held_idle"].size(), 1u);
  EXPECT_NE(r["top_held_idle"][0]["command"].get<std::string>().find("tarmac-simload"), std::string::npos);
  EXPECT_NE(r["verdict"].get<std::string>().find("2 of 2 GPUs were idle"), std::string::npos) << r["verdict"];
  EXPECT_FALSE(r.contains("idle_cost"));  // No price in the config: no costs.
  // A price for this report only, the same history read.
  RunResult priced = Tarmac({"report", "--db", Db(), "--since", "1h", "--format", "json", "--gpu-hour-cost",
                             "3.6", "--currency", "EUR"});
  ASSERT_EQ(priced.exit_code, 0) << priced.err;
  json p = json::parse(priced.out);
  EXPECT_EQ(p["currency"], "EUR");
  double idle_hours = 0;
  for (const json& g : p["gpus"]) idle_hours += g["idle_hours"].get<double>();
  EXPECT_GT(idle_hours, 0);
  EXPECT_NEAR(p["idle_cost"].get<double>(), idle_hours * 3.6, 1e-6) << priced.out;
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--gpu-hour-cost", "-1"}, std::vector<std::string>{"--currency", "$$"}}) {
    std::vector<std::string> args = {"report", "--db", Db(), "--since", "1h"};
    args.insert(args.end(), bad.begin(), bad.end());
    RunResult refused = Tarmac(args);
    EXPECT_EQ(refused.exit_code, 2) << bad[0] << ": " << refused.err;
    EXPECT_NE(refused.err.find(bad[0]), std::string::npos) << refused.err;
  }

  std::string html = dir_.path() + "/report.html";
  RunResult written = Tarmac({"report", "--db", Db(), "--since", "1h", "--format", "html", "--out", html});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  std::ifstream in(html);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("<svg class=\"heatmap\""), std::string::npos);
  ExpectHeatmapReadsInChromium(page);

  RunResult exported = Tarmac({"export", "--db", Db(), "--since", "10m", "--format", "jsonl", "--gpu", "1"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::istringstream lines(exported.out);
  std::string line;
  int64_t previous = 0;
  int count = 0;
  while (std::getline(lines, line)) {
    json sample = json::parse(line);
    EXPECT_EQ(sample["memory_used_mib"], 3072) << line;
    EXPECT_GT(sample["t"].get<int64_t>(), previous);  // One per second, in order.
    previous = sample["t"].get<int64_t>();
    ++count;
  }
  EXPECT_GE(count, 2);

  RunResult info = Tarmac({"store", "info", "--db", Db(), "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  json i = json::parse(info.out);
  EXPECT_EQ(i["schema_version"], store::kSchemaVersion);
  // The stop folded the minute in progress (the report above saw it) and
  // kept it in the journal, for a restart within the same minute.
  EXPECT_GE(i["rows"]["tick_journal"].get<int64_t>(), 1);
  EXPECT_GE(i["rows"]["events"].get<int64_t>(), 3);  // Start, process start, stop.
  // Seconds of history: the bytes per GPU-second it shows are the fixed
  // part's, and it says so rather than let them pass for the figure.
  EXPECT_EQ(i["is_young_history"], true);
  RunResult text = Tarmac({"store", "info", "--db", Db()});
  EXPECT_NE(text.out.find("a young history: its file's fixed part weighs on this"), std::string::npos)
      << text.out;
}

// Without --db, the history commands read the store of the agent that
// answers on --socket (its state folder is not the default one here), and
// say where they looked when none answers.
TEST_F(StoreAgentTest, HistoryCommandsFindTheRunningAgentsStore) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartLoad("1", {"--memory", "3GiB", "--util", "0"});
  StartAgent({"--config", FastConfig()});
  for (int i = 0; i < 100 && NewestStored() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GT(NewestStored(), 0) << ReadLog();
  EXPECT_EQ(StoreStatus()["path"], Db());
  RunResult info = Tarmac({"store", "info", "--json", "--socket", Socket()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(json::parse(info.out)["path"], Db()) << info.out;
  RunResult history = Tarmac({"history", "--since", "10m", "--format", "json", "--socket", Socket()});
  EXPECT_EQ(history.exit_code, 0) << history.err;
  RunResult exported =
      Tarmac({"export", "--since", "10m", "--format", "jsonl", "--gpu", "1"}, {{"TARMAC_SOCKET", Socket()}});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("\"memory_used_mib\":3072"), std::string::npos) << exported.out;
  // (Its minutes are not folded yet: the report opens the store, finds
  // no whole minute, and says so rather than failing.)
  RunResult report = Tarmac({"report", "--since", "1h", "--format", "json", "--socket", Socket()});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(Tarmac({"report", "--since", "1h", "--socket", dir_.path() + "/no.sock"}).exit_code, 0);
  // No agent there: the default config's path, and why.
  RunResult none = Tarmac({"store", "info", "--socket", dir_.path() + "/no.sock"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("(the default config; no agent answered on " + dir_.path() + "/no.sock"),
            std::string::npos)
      << none.err;
}

}  // namespace
}  // namespace tarmac::testing
