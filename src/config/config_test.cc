// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "testutil/testutil.h"

namespace tarmac::config {
namespace {

TEST(ConfigTest, EmptyTextGivesDefaults) {
  Result<Config> c = ParseConfig("", "t.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().agent.socket_path, "/run/tarmac/tarmac.sock");
  EXPECT_EQ(c.value().sampler.fast_interval, std::chrono::seconds(1));
  EXPECT_EQ(c.value().sampler.slow_interval, std::chrono::seconds(30));
  EXPECT_EQ(c.value().api.max_connections, 4096);
}

// [backfill] idle_for: "auto" (the default) or a duration; nice 0 to 19
// (19 by default); a wrong value names the key and line.
TEST(ConfigTest, BackfillIdleForIsAutoOrADurationAndNiceIsZeroTo19) {
  Result<Config> c = ParseConfig("", "t.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c.value().leases.backfill.is_auto);
  EXPECT_EQ(c.value().leases.backfill.settle, std::chrono::seconds(30));
  EXPECT_EQ(c.value().leases.backfill.min_run, std::chrono::minutes(2));
  EXPECT_EQ(c.value().leases.backfill.nice, 19);
  c = ParseConfig("[backfill]\nidle_for = \"15m\"\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c.value().leases.backfill.is_auto);
  EXPECT_EQ(c.value().leases.backfill.idle_for, std::chrono::minutes(15));
  c = ParseConfig("[backfill]\nidle_for = \"auto\"\nsettle = \"5s\"\nmin_run = \"10m\"\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c.value().leases.backfill.is_auto);
  EXPECT_EQ(c.value().leases.backfill.settle, std::chrono::seconds(5));
  EXPECT_EQ(c.value().leases.backfill.min_run, std::chrono::minutes(10));
  c = ParseConfig("[backfill]\n\nidle_for = \"automatic\"\n", "t.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("t.toml:3: key 'backfill.idle_for'"), std::string::npos)
      << c.status().ToString();
  c = ParseConfig("[backfill]\nnice = 0\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value().leases.backfill.nice, 0);
  c = ParseConfig("[backfill]\nnice = 20\n", "t.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("t.toml:2: key 'backfill.nice'"), std::string::npos)
      << c.status().ToString();
  c = ParseConfig("[backfill]\nsettle = \"2d\"\n", "t.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("key 'backfill.settle': must be from"), std::string::npos)
      << c.status().ToString();
}

TEST(ConfigTest, ReadsEverySection) {
  Result<Config> c = ParseConfig(R"(
[agent]
socket = "/tmp/t.sock"
state_dir = "/tmp/state"
log_level = "debug"
[gpu]
backend = "sim"
scenario = "lab.toml"
[sampler]
fast_interval = "500ms"
slow_interval = "10s"
[api]
max_connections = 8
max_request_bytes = "4KiB"
request_timeout = "2s"
)",
                                 "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value().agent.socket_path, "/tmp/t.sock");
  EXPECT_EQ(c.value().gpu.kind, gpu::BackendKind::kSim);
  EXPECT_EQ(c.value().sampler.fast_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(c.value().api.max_request_bytes, 4096);
  EXPECT_EQ(c.value().api.request_timeout, std::chrono::seconds(2));
}

TEST(ConfigTest, ReportsEveryBadKeyAtOnceWithLines) {
  Result<Config> c = ParseConfig(R"([agent]
sockett = "/x"
log_level = "loud"
[sampler]
fast_interval = "1 fortnight"
slow_interval = "50ms"
[api]
max_connections = "many"
max_request_bytes = "1GiB"
[mystery]
)",
                                 "bad.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = c.status().message();
  for (const char* expected : {
           "bad.toml:2: key 'agent.sockett': unknown key",
           "bad.toml:3: key 'agent.log_level': expected one of",
           "bad.toml:5: key 'sampler.fast_interval': unknown duration unit",
           "bad.toml:6: key 'sampler.slow_interval': must be from 1s to 1h",
           "bad.toml:8: key 'api.max_connections': expected an integer",
           "bad.toml:9: key 'api.max_request_bytes': must be from 1KiB to 16MiB",
           "bad.toml:10: key 'mystery': unknown key",
       }) {
    EXPECT_NE(m.find(expected), std::string::npos) << "missing: " << expected << "\nin:\n" << m;
  }
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 6);
}

// A sub-second duration is kept where the key honours it ([leases]
// idle_grace) and refused with the key where only whole seconds are kept
// (it was silently dropped to 0 s).
TEST(ConfigTest, SubSecondDurationsAreKeptOrRefusedNeverDropped) {
  Result<Config> c = ParseConfig("[leases]\nidle_grace = \"250ms\"\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value().leases.idle_grace, std::chrono::milliseconds(250));
  Result<Config> bad = ParseConfig("[store]\nintegrity_check_interval = \"1500ms\"\n", "t.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.toml:2"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("integrity_check_interval"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("whole seconds"), std::string::npos) << bad.status().message();
  Result<Config> timeout = ParseConfig("[leases]\nidle_timeout = \"2.5s\"\n", "t.toml");
  ASSERT_FALSE(timeout.ok());
  EXPECT_NE(timeout.status().message().find("idle_timeout"), std::string::npos) << timeout.status().message();
}

// How long the queue's head waits before the GPUs it will get are kept for
// it: never by default (0), at most a week.
TEST(ConfigTest, KeepForHeadAfterIsOffByDefaultAndAtMostAWeek) {
  Result<Config> d = ParseConfig("", "t.toml");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d.value().leases.keep_for_head_after, std::chrono::milliseconds(0));
  Result<Config> on = ParseConfig("[leases]\nkeep_for_head_after = \"6h\"\n", "t.toml");
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_EQ(on.value().leases.keep_for_head_after, std::chrono::hours(6));
  Result<Config> bad = ParseConfig("[leases]\nkeep_for_head_after = \"8d\"\n", "t.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.toml:2"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("keep_for_head_after"), std::string::npos) << bad.status().message();
}

TEST(ConfigTest, SyntaxErrorNamesTheLine) {
  Result<Config> c = ParseConfig("[agent\nsocket = 1\n", "x.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind("x.toml:1:", 0), 0u) << c.status().message();
}

TEST(ConfigTest, MissingDefaultFileMeansDefaultsButAnExplicitOneMustExist) {
  EXPECT_FALSE(LoadConfig("/nonexistent/tarmac.toml", true).ok());
  Result<Config> unreadable = LoadConfig("/nonexistent/tarmac.toml", false);
  EXPECT_FALSE(unreadable.ok());  // Not the default path: the user named it.
  testing::TempDir dir;
  std::string path = dir.Write("t.toml", "[sampler]\nfast_interval = \"2s\"\n");
  Result<Config> c = LoadConfig(path, true);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().sampler.fast_interval, std::chrono::seconds(2));
}

TEST(ConfigTest, StoreAndReportSections) {
  Result<Config> c = ParseConfig(R"(
[agent]
state_dir = "/srv/tarmac"
[store]
raw_retention = "2w"
minute_retention = "180d"
hour_retention = "5y"
[report]
currency = "EUR"
gpu_hour_cost = 1.5
[report.gpu_hour_cost_by_model]
"NVIDIA H100 80GB HBM3" = 3.25
)",
                                 "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(StorePath(c.value()), "/srv/tarmac/tarmac.db");
  EXPECT_EQ(c.value().store.options.retention.raw, std::chrono::hours(24 * 14));
  EXPECT_EQ(c.value().store.options.retention.hour, std::chrono::hours(24 * 365 * 5));
  EXPECT_EQ(c.value().report.currency, "EUR");
  EXPECT_DOUBLE_EQ(c.value().report.GpuHourCost("NVIDIA H100 80GB HBM3"), 3.25);
  EXPECT_DOUBLE_EQ(c.value().report.GpuHourCost("Tesla T4"), 1.5);
}

TEST(ConfigTest, BadStoreAndReportKeysAreAllReported) {
  Result<Config> c = ParseConfig(R"([store]
raw_retention = "30d"
minute_retention = "7d"
retention = "1y"
[report]
gpu_hour_cost = -1
[report.gpu_hour_cost_by_model]
"Tesla T4" = "cheap"
)",
                                 "t.toml");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("t.toml:3: key 'store.minute_retention': tiers must keep longer"), std::string::npos) << m;
  EXPECT_NE(m.find("t.toml:4: key 'store.retention': unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("t.toml:6: key 'report.gpu_hour_cost': must be from"), std::string::npos) << m;
  EXPECT_NE(m.find("t.toml:8: key 'report.gpu_hour_cost_by_model.Tesla T4': expected a number"),
            std::string::npos)
      << m;
}

TEST(ConfigTest, ZombiesSectionAndItsErrors) {
  Result<Config> c = ParseConfig(
      "[zombies]\nmin_memory = \"2GiB\"\nidle_for = \"5m\"\nallowlist = [\"vllm\"]\ninclude_system_users = "
      "true\n",
      "z.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value().leases.zombies.min_memory_bytes, int64_t{2} << 30);
  EXPECT_EQ(c.value().leases.zombies.idle_for, std::chrono::minutes(5));
  EXPECT_EQ(c.value().leases.zombies.allowlist, std::vector<std::string>{"vllm"});
  EXPECT_TRUE(c.value().leases.zombies.includes_system_users);
  Result<Config> bad =
      ParseConfig("[zombies]\nidle_for = \"0s\"\nallowlist = [1]\nmin_memory = -1\n", "z.toml");
  ASSERT_FALSE(bad.ok());
  std::string m = bad.status().message();
  EXPECT_NE(m.find("z.toml:2: key 'zombies.idle_for'"), std::string::npos) << m;
  EXPECT_NE(m.find("z.toml:3: key 'zombies.allowlist': expected an array of strings"), std::string::npos)
      << m;
  EXPECT_NE(m.find("z.toml:4: key 'zombies.min_memory': must not be negative"), std::string::npos) << m;
}

TEST(ConfigTest, KubernetesSectionAndItsErrors) {
  Result<Config> c = ParseConfig(
      "[kubernetes]\nenabled = true\nresource_name = \"example.com/accel\"\ndevice_plugin_dir = \"/k/dp\"\n"
      "pod_resources_socket = \"\"\npod_resources_interval = \"30s\"\ncdi = true\n",
      "k.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const kube::KubeOptions& k = c.value().kubernetes;
  EXPECT_TRUE(k.is_enabled);
  EXPECT_EQ(k.resource_name, "example.com/accel");
  EXPECT_EQ(k.device_plugin_dir, "/k/dp");
  EXPECT_EQ(k.pod_resources_socket, "");
  EXPECT_EQ(k.pod_resources_interval, std::chrono::seconds(30));
  EXPECT_TRUE(k.is_cdi);
  EXPECT_FALSE(Config().kubernetes.is_enabled);  // Off unless asked for.
  Result<Config> bad = ParseConfig(
      "[kubernetes]\nresource_name = \"gpu\"\ndevice_plugin_dir = \"relative\"\nendpoint = \"a/b.sock\"\n"
      "pod_resources_interval = \"10ms\"\nkubelet_timeout = \"1h\"\n",
      "k.toml");
  ASSERT_FALSE(bad.ok());
  std::string m = bad.status().message();
  EXPECT_NE(m.find("k.toml:2: key 'kubernetes.resource_name': expected vendor-domain/resource"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("k.toml:3: key 'kubernetes.device_plugin_dir': expected an absolute path"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("k.toml:4: key 'kubernetes.endpoint'"), std::string::npos) << m;
  EXPECT_NE(m.find("k.toml:5: key 'kubernetes.pod_resources_interval'"), std::string::npos) << m;
  EXPECT_NE(m.find("k.toml:6: key 'kubernetes.kubelet_timeout'"), std::string::npos) << m;
}

TEST(ConfigTest, LeasesSectionAndItsErrors) {
  Result<Config> c = ParseConfig(
      "[zombies]\npolicy = \"terminate\"\n"
      "[leases]\nadmin_group = \"gpu-admins\"\nkill_grace = \"3s\"\nidle_timeout = \"30m\"\nidle_grace = "
      "\"1m\"\n"
      "idle_policy = \"release\"\nforeign_policy = \"terminate\"\n"
      "[leases.idle_policy_by_user]\nalice = \"warn\"\n[leases.idle_policy_by_priority]\nhigh = "
      "\"terminate\"\n",
      "l.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Config& v = c.value();
  EXPECT_TRUE(v.leases.terminates_zombies);
  EXPECT_EQ(v.leases.admin_group, "gpu-admins");
  EXPECT_EQ(v.leases.kill_grace, std::chrono::seconds(3));
  EXPECT_EQ(v.leases.default_idle_timeout, std::chrono::minutes(30));
  EXPECT_EQ(v.leases.idle_grace, std::chrono::minutes(1));
  EXPECT_EQ(v.leases.idle_action, leases::IdleAction::kRelease);
  EXPECT_TRUE(v.leases.terminates_foreign);
  EXPECT_EQ(v.leases.idle_action_by_user.at("alice"), leases::IdleAction::kWarn);
  EXPECT_EQ(v.leases.idle_action_by_priority.at(sched::Priority::kHigh), leases::IdleAction::kTerminate);

  Result<Config> bad = ParseConfig(
      "[leases]\nidle_policy = \"kill\"\nkill_grace = \"1h\"\n[leases.idle_policy_by_priority]\nurgent = "
      "\"warn\"\n"
      "[zombies]\npolicy = \"nuke\"\n",
      "l.toml");
  ASSERT_FALSE(bad.ok());
  std::string m = bad.status().message();
  EXPECT_NE(
      m.find("l.toml:2: key 'leases.idle_policy': expected one of \"warn\", \"release\", \"terminate\""),
      std::string::npos)
      << m;
  EXPECT_NE(m.find("l.toml:3: key 'leases.kill_grace'"), std::string::npos) << m;
  EXPECT_NE(m.find("l.toml:5: key 'leases.idle_policy_by_priority.urgent': expected a priority"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("l.toml:7: key 'zombies.policy'"), std::string::npos) << m;
}

TEST(ConfigTest, TheDcgmHostLabelIsOneOfTwoSpellings) {
  EXPECT_EQ(ParseConfig("[http]\ndcgm_hostname_label = \"hostname\"\n", "h.toml")
                .value()
                .metrics.dcgm_hostname_label,
            "hostname");
  Result<Config> bad = ParseConfig("[http]\ndcgm_hostname_label = \"host\"\n", "h.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("h.toml:2: key 'http.dcgm_hostname_label'"), std::string::npos)
      << bad.status().message();
}

TEST(ConfigTest, TlsCertificateAndKeyGoTogetherAsAbsolutePaths) {
  Result<Config> both =
      ParseConfig("[http]\ntls_cert = \"/etc/tarmac/c.pem\"\ntls_key = \"/etc/tarmac/k.pem\"\n", "t.toml");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both.value().http.tls_cert, "/etc/tarmac/c.pem");
  EXPECT_EQ(both.value().http.tls_key, "/etc/tarmac/k.pem");
  Result<Config> alone = ParseConfig("[http]\ntls_cert = \"/etc/tarmac/c.pem\"\n", "t.toml");
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("go together"), std::string::npos) << alone.status().message();
  Result<Config> relative = ParseConfig("[http]\ntls_cert = \"c.pem\"\ntls_key = \"/k.pem\"\n", "t.toml");
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.status().message().find("t.toml:2: key 'http.tls_cert'"), std::string::npos)
      << relative.status().message();
}

// The defaults in docs/config.md, one TOML line per key: "[section]" then
// "key = default" (the first backticked value of the row's default cell).
std::string DocumentedDefaults(std::set<std::string>* keys) {
  std::ifstream in(testing::SourceDir() + "/docs/config.md");
  std::string line, section, toml;
  std::regex heading(R"(^## `\[([a-z_]+)\]`)");
  std::regex row(R"(^\| `([a-z_]+)` \| `([^`]*)`)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, heading)) {
      section = m[1];
      toml += "[" + section + "]\n";
    } else if (!section.empty() && std::regex_search(line, m, row)) {
      keys->insert(section + "." + std::string(m[1]));
      toml += std::string(m[1]) + " = " + std::string(m[2]) + "\n";
    }
  }
  return toml;
}

TEST(ConfigTest, TheDocumentedKeysAndDefaultsAreTheModulesOwn) {
  std::set<std::string> documented;
  std::string toml = DocumentedDefaults(&documented);
  ASSERT_GT(documented.size(), 40u) << toml;
  // Every key a module reads is documented, and nothing else is.
  std::vector<std::string> read = ConfigKeys();
  EXPECT_EQ(std::set<std::string>(read.begin(), read.end()), documented);
  // Every documented default is what the module's own options hold.
  Result<Config> c = ParseConfig(toml, "docs/config.md");
  ASSERT_TRUE(c.ok()) << c.status().message() << "\n" << toml;
  EXPECT_TRUE(c.value() == Config()) << toml;
  EXPECT_EQ(c.value().sampler.call_timeout, std::chrono::seconds(2));
  EXPECT_EQ(c.value().leases.admin_group, "tarmac-admin");
}

TEST(ConfigTest, TheExampleFileHoldsEveryKeyAtItsDefault) {
  Result<Config> c = LoadConfig(testing::SourceDir() + "/examples/config/tarmac.toml", true);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c.value() == Config());
  std::ifstream in(testing::SourceDir() + "/examples/config/tarmac.toml");
  std::stringstream text;
  text << in.rdbuf();
  for (const std::string& key : ConfigKeys()) {
    std::string name = key.substr(key.find('.') + 1);
    bool is_there = text.str().find("\n" + name + " =") != std::string::npos ||
                    text.str().find("[" + key + "]") != std::string::npos;
    EXPECT_TRUE(is_there) << key << " is not in the example";
  }
}

TEST(ConfigTest, ASectionKeyOneModuleDoesNotReadIsStillKnownWhenAnotherDoes) {
  // [http] is read by the HTTP server (listen) and the metrics page (the
  // rest); [zombies] by the detector and the lease service (policy).
  Result<Config> c = ParseConfig(
      "[http]\nlisten = \"off\"\nhostname = \"n1\"\n[zombies]\nidle_for = \"1m\"\npolicy = \"terminate\"\n",
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().http.listen, "off");
  EXPECT_EQ(c.value().metrics.hostname, "n1");
  EXPECT_EQ(c.value().leases.zombies.idle_for, std::chrono::minutes(1));
  EXPECT_TRUE(c.value().leases.terminates_zombies);
  Result<Config> bad = ParseConfig("[http]\nlisten = \"off\"\nlistenn = 1\n", "t.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.toml:3: key 'http.listenn': unknown key; did you mean 'listen'?"),
            std::string::npos)
      << bad.status().message();
}

TEST(ConfigFileTest, AFileOverTheSizeLimitIsRefusedNotTruncated) {
  testing::TempDir dir;
  // Valid TOML up to the limit, then a bad key past it: reading only the
  // first part would accept the file.
  std::string text =
      "[agent]\nlog_level = \"info\"\n" + std::string(kMaxConfigBytes, '#') + "\nno_such_key = 1\n";
  std::string path = dir.Write("big.toml", text);
  Result<Config> c = LoadConfig(path, true);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("larger than 1024 KiB"), std::string::npos) << c.status().message();
  // Exactly at the limit is read.
  std::string at_limit = "# " + std::string(kMaxConfigBytes - 3, 'x') + "\n";
  ASSERT_EQ(at_limit.size(), kMaxConfigBytes);
  EXPECT_TRUE(LoadConfig(dir.Write("limit.toml", at_limit), true).ok());
}

}  // namespace
}  // namespace tarmac::config
