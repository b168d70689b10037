// SPDX-License-Identifier: Apache-2.0
#include "sched/zombies_json.h"

#include <fmt/format.h>

#include "common/json_fields.h"

namespace tarmac::sched {

using nlohmann::json;

json ZombiesToJson(const ZombieReport& report) {
  json list = json::array();
  for (const ZombieEvidence& z : report.zombies) {
    list.push_back({{"gpu", z.gpu_index},
                    {"gpu_uuid", z.gpu_uuid},
                    {"pid", z.pid},
                    {"start_ticks", z.start_ticks},
                    {"uid", z.uid},
                    {"user", z.user},
                    {"name", z.name},
                    {"command", z.command},
                    {"parent_pid", z.parent_pid},
                    {"is_orphaned", z.is_orphaned},
                    {"memory_bytes", z.memory_bytes},
                    {"idle_for_seconds", z.idle_for.count()},
                    {"lease", z.lease_id ? json(*z.lease_id) : json(nullptr)},
                    {"why", z.why}});
  }
  const ZombiePolicy& policy = report.policy;
  return {{"policy",
           {{"min_memory_bytes", policy.min_memory_bytes},
            {"idle_for_seconds", std::chrono::duration_cast<std::chrono::seconds>(policy.idle_for).count()},
            {"allowlist", policy.allowlist},
            {"includes_system_users", policy.includes_system_users},
            {"action", report.action}}},
          {"zombies", list}};
}

Result<ZombieReport> ZombiesFromJson(const json& j) {
  ZombieReport report;
  // What the answer does not say was not left out.
  report.policy.allowlist.clear();
  report.policy.includes_system_users = true;
  JsonFields f(j, "zombies answer");
  JsonFields policy = f.Object("policy");
  int64_t idle_for_seconds = 0;
  policy.Get("min_memory_bytes", &report.policy.min_memory_bytes);
  policy.Get("idle_for_seconds", &idle_for_seconds);
  policy.Optional("allowlist", &report.policy.allowlist);
  policy.Optional("includes_system_users", &report.policy.includes_system_users);
  policy.Optional("action", &report.action);
  report.policy.idle_for = std::chrono::seconds(idle_for_seconds);
  if (!f.ok()) return Status::Corruption(f.status().message());
  if (!j.contains("zombies") || !j["zombies"].is_array())
    return Status::Corruption("zombies: expected a list");
  for (const json& item : j["zombies"]) {
    ZombieEvidence z;
    JsonFields e(item, fmt::format("zombies[{}]", report.zombies.size()));
    int64_t idle_for = 0;
    e.Get("gpu", &z.gpu_index);
    e.Optional("gpu_uuid", &z.gpu_uuid);
    e.Get("pid", &z.pid);
    e.Optional("start_ticks", &z.start_ticks);
    e.Optional("uid", &z.uid);
    e.Optional("user", &z.user);
    e.Optional("name", &z.name);
    e.Optional("command", &z.command);
    e.Optional("parent_pid", &z.parent_pid);
    e.Optional("is_orphaned", &z.is_orphaned);
    e.Optional("memory_bytes", &z.memory_bytes);
    e.Optional("idle_for_seconds", &idle_for);
    e.Optional("lease", &z.lease_id);
    e.Optional("why", &z.why);
    if (!e.ok()) return Status::Corruption(e.status().message());
    z.idle_for = std::chrono::seconds(idle_for);
    report.zombies.push_back(std::move(z));
  }
  return report;
}

namespace {

json KillsToJson(const std::vector<ZombieKill>& kills, bool has_why) {
  json list = json::array();
  for (const ZombieKill& k : kills) {
    json entry = {{"pid", k.pid}, {"gpu", k.gpu}, {"user", k.user}};
    if (has_why) entry["why"] = k.why;
    list.push_back(std::move(entry));
  }
  return list;
}

Status KillsFromJson(const json& j, const char* key, std::vector<ZombieKill>* out) {
  if (!j.contains(key) || !j[key].is_array())
    return Status::Corruption(fmt::format("{}: expected a list", key));
  for (const json& item : j[key]) {
    ZombieKill k;
    JsonFields f(item, fmt::format("{}[{}]", key, out->size()));
    f.Get("pid", &k.pid);
    f.Optional("gpu", &k.gpu);
    f.Optional("user", &k.user);
    f.Optional("why", &k.why);
    if (!f.ok()) return Status::Corruption(f.status().message());
    out->push_back(std::move(k));
  }
  return Status::OK();
}

}  // namespace

json ZombieKillsToJson(const ZombieKills& kills) {
  return {{"terminated", KillsToJson(kills.terminated, false)},
          {"refused", KillsToJson(kills.refused, true)},
          {"skipped", KillsToJson(kills.skipped, true)}};
}

Result<ZombieKills> ZombieKillsFromJson(const json& j) {
  ZombieKills kills;
  if (!j.is_object()) return Status::Corruption("zombies.kill answer: expected an object");
  for (auto [key, list] : {std::pair{"terminated", &kills.terminated}, std::pair{"refused", &kills.refused},
                           std::pair{"skipped", &kills.skipped}}) {
    if (Status s = KillsFromJson(j, key, list); !s.ok()) return s;
  }
  return kills;
}

}  // namespace tarmac::sched
