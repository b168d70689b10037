// SPDX-License-Identifier: Apache-2.0
#include "sched/lease_json.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/enum_names.h"
#include "common/json_fields.h"
#include "nvidia/mig_profiles.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::sched {
namespace {

constexpr std::pair<Priority, const char*> kPriorityNames[] = {{Priority::kNormal, "normal"},
                                                               {Priority::kBackfill, "backfill"},
                                                               {Priority::kLow, "low"},
                                                               {Priority::kHigh, "high"}};

using nlohmann::json;

json Seconds(const std::optional<std::chrono::seconds>& d) { return d ? json(d->count()) : json(nullptr); }

json Ref(const ProcessRef& p) {
  if (p.pid == 0) return nullptr;
  return {{"pid", p.pid}, {"start_ticks", p.start_ticks}};
}

// The readers of this module's own field types, on JsonFields.
void ReadSeconds(JsonFields& f, const char* key, std::optional<std::chrono::seconds>* out) {
  std::optional<int64_t> v;
  f.Optional(key, &v);
  if (v) *out = std::chrono::seconds(*v);
}

void ReadRef(JsonFields& f, const char* key, ProcessRef* out) {
  if (!f.has(key)) return;
  JsonFields ref = f.Object(key);
  ref.Get("pid", &out->pid);
  ref.Get("start_ticks", &out->start_ticks);
}

void ReadPriority(JsonFields& f, const char* key, sched::Priority* out) {
  std::string name = PriorityName(*out);
  f.Optional(key, &name);
  if (f.ok() && !ParsePriority(name, out)) f.Fail(key, "expected " + EnumNameList(kPriorityNames));
}

Status AsCorruption(const Status& s) { return s.ok() ? s : Status::Corruption(s.message()); }

}  // namespace

double TimeBase::ToUnix(TimePoint t) const {
  return std::chrono::duration<double>((wall + (t - steady)).time_since_epoch()).count();
}

TimePoint TimeBase::FromUnix(double unix_seconds) const {
  auto at =
      std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(unix_seconds)));
  return steady + std::chrono::duration_cast<std::chrono::steady_clock::duration>(at - wall);
}

const char* PriorityName(Priority p) { return EnumName(kPriorityNames, p); }

std::vector<std::string> PriorityNames() { return EnumNames(kPriorityNames); }

std::string PriorityNameList() { return EnumNameList(kPriorityNames); }

bool ParsePriority(const std::string& name, Priority* out) { return ParseEnum(kPriorityNames, name, out); }

json LeaseToJson(const Lease& l, const TimeBase& base) {
  return {{"id", l.id},
          {"uid", l.uid},
          {"user", l.user},
          {"gpus", l.gpus},
          {"uuids", l.uuids},
          {"priority", PriorityName(l.priority)},
          {"granted_at_unix", base.ToUnix(l.granted_at)},
          {"ends_at_unix", l.ends_at ? json(base.ToUnix(*l.ends_at)) : json(nullptr)},
          {"idle_timeout_seconds", Seconds(l.idle_timeout)},
          {"command", l.command},
          {"kind", LeaseKindName(l)},
          {"reservation", l.kind == node::LeaseKind::kReservation},
          {"holder", Ref(l.holder)},
          {"job", Ref(l.job)},
          {"token", l.token},
          {"request_key", l.request_key},
          {"idle_since_unix", l.idle_since ? json(base.ToUnix(*l.idle_since)) : json(nullptr)},
          {"revoking_since_unix", l.revoking_since ? json(base.ToUnix(*l.revoking_since)) : json(nullptr)},
          {"revoked_for", l.revoked_for},
          {"slurm_job", l.slurm_job},
          {"slurm_partition", l.slurm_partition},
          {"mig_profile", l.mig_profile},
          {"lends_idle", l.lends_idle},
          {"yields_at_notice", l.yields_at_notice},
          {"lent_from", l.lent_from},
          {"lent_memory_bytes", l.lent_memory_bytes}};
}

Result<Lease> LeaseFromJson(const json& j, const TimeBase& base) {
  Lease l;
  JsonFields f(j, "lease");
  double granted = 0;
  std::optional<double> ends;
  double ends_value = 0;
  std::string kind = "run";
  f.Get("id", &l.id);
  f.Get("uid", &l.uid);
  f.Get("user", &l.user);
  f.Get("gpus", &l.gpus);
  f.Get("uuids", &l.uuids);
  ReadPriority(f, "priority", &l.priority);
  f.Get("granted_at_unix", &granted);
  if (j.is_object() && j.contains("ends_at_unix") && !j["ends_at_unix"].is_null()) {
    f.Get("ends_at_unix", &ends_value);
    ends = ends_value;
  }
  ReadSeconds(f, "idle_timeout_seconds", &l.idle_timeout);
  f.Optional("command", &l.command);
  f.Optional("kind", &kind);
  ReadRef(f, "holder", &l.holder);
  ReadRef(f, "job", &l.job);
  f.Optional("token", &l.token);
  f.Optional("request_key", &l.request_key);
  double idle_since = 0;
  bool has_idle_since = j.is_object() && j.contains("idle_since_unix") && !j["idle_since_unix"].is_null();
  if (has_idle_since) f.Get("idle_since_unix", &idle_since);
  double revoking_since = 0;
  bool is_revoking =
      j.is_object() && j.contains("revoking_since_unix") && !j["revoking_since_unix"].is_null();
  if (is_revoking) f.Get("revoking_since_unix", &revoking_since);
  if (j.is_object() && j.contains("revoked_for")) f.Get("revoked_for", &l.revoked_for);
  f.Optional("lends_idle", &l.lends_idle);
  f.Optional("yields_at_notice", &l.yields_at_notice);
  f.Optional("lent_from", &l.lent_from);
  f.Optional("lent_memory_bytes", &l.lent_memory_bytes);
  if (Status s = f.status(); !s.ok()) return AsCorruption(s);
  if (has_idle_since) l.idle_since = base.FromUnix(idle_since);
  if (is_revoking) l.revoking_since = base.FromUnix(revoking_since);
  if (l.gpus.size() != l.uuids.size()) return Status::Corruption("lease.uuids: one per GPU expected");
  std::optional<node::LeaseKind> parsed = node::ParseLeaseKind(kind);
  if (!parsed) return Status::Corruption("lease.kind: expected one of " + node::LeaseKindNames());
  bool is_reservation = *parsed == node::LeaseKind::kReservation;
  if (j.is_object() && j.contains("reservation")) f.Get("reservation", &is_reservation);
  if (Status s = f.status(); !s.ok()) return AsCorruption(s);
  if (j.is_object() && j.contains("slurm_job") && j["slurm_job"].is_string()) {
    l.slurm_job = j["slurm_job"].get<std::string>();
  }
  if (j.is_object() && j.contains("slurm_partition") && j["slurm_partition"].is_string()) {
    l.slurm_partition = j["slurm_partition"].get<std::string>();
  }
  if (*parsed == node::LeaseKind::kSlurm && l.slurm_job.empty())
    return Status::Corruption("lease.slurm_job: expected a job id");
  if (j.is_object() && j.contains("mig_profile") && j["mig_profile"].is_string()) {
    l.mig_profile = j["mig_profile"].get<std::string>();
  }
  // A MIG instance's lease is told by its profile: one without cannot be
  // placed or judged as an instance.
  bool names_instance = l.uuids.size() == 1 && nvidia::IsMigUuid(l.uuids[0]);
  if (names_instance != !l.mig_profile.empty()) {
    return Status::Corruption(
        "lease.mig_profile: a MIG instance's lease names its profile, a whole GPU's none");
  }
  // The kind saved is the one shown (a backfill lease's is "backfill"):
  // "reservation" says which of run or reservation it is held as.
  l.kind = IsExternal(*parsed) ? *parsed
           : is_reservation    ? node::LeaseKind::kReservation
                               : node::LeaseKind::kRun;
  l.granted_at = base.FromUnix(granted);
  if (ends) l.ends_at = base.FromUnix(*ends);
  return l;
}

json PendingToJson(const Pending& p, const TimeBase& base) {
  const LeaseRequest& r = p.request;
  return {{"id", p.id},
          {"uid", p.owner.uid},
          {"user", p.owner.user},
          {"gpus", r.wants.uuids.empty() ? r.wants.gpu_count : static_cast<int>(r.wants.uuids.size())},
          {"uuids", r.wants.uuids},
          {"mig_profile", r.wants.mig_profile},
          {"min_free_memory_bytes", r.wants.min_free_memory_bytes},
          {"priority", PriorityName(r.priority)},
          {"max_time_seconds", Seconds(r.max_time)},
          {"idle_timeout_seconds", Seconds(r.idle_timeout)},
          {"command", r.command},
          {"kind", r.is_reservation ? "reservation" : "run"},
          {"holder", Ref(r.holder)},
          {"request_key", r.request_key},
          {"lend_idle", r.lends_idle},
          {"yields_at_notice", r.yields_at_notice},
          {"allow_unhealthy", r.wants.allows_unhealthy},
          {"submitted_at_unix", base.ToUnix(p.submitted_at)}};
}

// LeaseRequestFromJson without the checks that only a client's request
// gets (the saved queue writes empty lists and names).
Result<LeaseRequest> ParseLeaseRequest(const json& params);

Result<Pending> PendingFromJson(const json& j, const TimeBase& base) {
  Pending p;
  JsonFields f(j, "request");
  double submitted = 0;
  f.Get("id", &p.id);
  f.Get("uid", &p.owner.uid);
  f.Get("user", &p.owner.user);
  f.Get("submitted_at_unix", &submitted);
  if (Status s = f.status(); !s.ok()) return AsCorruption(s);
  Result<LeaseRequest> r = ParseLeaseRequest(j);
  if (!r.ok()) return AsCorruption(r.status());
  p.request = std::move(r).value();
  ReadRef(f, "holder", &p.request.holder);
  f.Optional("yields_at_notice", &p.request.yields_at_notice);
  if (Status s = f.status(); !s.ok()) return AsCorruption(s);
  p.submitted_at = base.FromUnix(submitted);
  return p;
}

json LeaseShownToJson(const LeaseShown& shown, const TimeBase& base) {
  json j = LeaseToJson(shown.lease, base);
  j.erase("request_key");
  if (shown.lease.token.empty()) j.erase("token");
  j["held_seconds"] = shown.held_seconds;
  j["idle_seconds"] = shown.idle_seconds;
  j["revoke_by_unix"] = shown.revoke_by_unix ? json(*shown.revoke_by_unix) : json(nullptr);
  j["warning"] = shown.warning.empty() ? json(nullptr) : json(shown.warning);
  json foreign = json::array();
  for (const ForeignProcess& p : shown.foreign_processes) {
    foreign.push_back({{"gpu", p.gpu}, {"pid", p.pid}, {"user", p.user}, {"command", p.command}});
  }
  j["foreign_processes"] = std::move(foreign);
  return j;
}

Result<LeaseShown> LeaseShownFromJson(const json& j, const TimeBase& base) {
  LeaseShown shown;
  Result<Lease> lease = LeaseFromJson(j, base);
  if (!lease.ok()) return lease.status();
  shown.lease = std::move(lease).value();
  JsonFields f(j, "lease");
  f.Optional("held_seconds", &shown.held_seconds);
  f.Optional("idle_seconds", &shown.idle_seconds);
  f.Optional("revoke_by_unix", &shown.revoke_by_unix);
  f.Optional("warning", &shown.warning);
  if (j.is_object() && j.contains("foreign_processes") && j["foreign_processes"].is_array()) {
    for (const json& item : j["foreign_processes"]) {
      ForeignProcess p;
      JsonFields fp(item, "lease.foreign_processes[]");
      fp.Get("gpu", &p.gpu);
      fp.Get("pid", &p.pid);
      fp.Optional("user", &p.user);
      fp.Optional("command", &p.command);
      if (!fp.ok()) return AsCorruption(fp.status());
      shown.foreign_processes.push_back(std::move(p));
    }
  }
  if (Status s = f.status(); !s.ok()) return AsCorruption(s);
  return shown;
}

json PendingShownToJson(const PendingShown& shown, const TimeBase& base) {
  json j = PendingToJson(shown.pending, base);
  j.erase("request_key");
  j["waiting_seconds"] = shown.waiting_seconds;
  j["position"] = shown.position;
  j["queue_length"] = shown.queue_length;
  j["reason"] = shown.reason;
  return j;
}

Result<PendingShown> PendingShownFromJson(const json& j, const TimeBase& base) {
  PendingShown shown;
  Result<Pending> pending = PendingFromJson(j, base);
  if (!pending.ok()) return pending.status();
  shown.pending = std::move(pending).value();
  JsonFields f(j, "request");
  f.Optional("waiting_seconds", &shown.waiting_seconds);
  f.Optional("position", &shown.position);
  f.Optional("queue_length", &shown.queue_length);
  f.Optional("reason", &shown.reason);
  if (Status s = f.status(); !s.ok()) return AsCorruption(s);
  return shown;
}

json LeaseListingToJson(const LeaseListing& listing, const TimeBase& base) {
  json leases = json::array();
  for (const LeaseShown& l : listing.leases) leases.push_back(LeaseShownToJson(l, base));
  json queue = json::array();
  for (const PendingShown& p : listing.queue) queue.push_back(PendingShownToJson(p, base));
  return {{"leases", std::move(leases)}, {"queue", std::move(queue)}};
}

Result<LeaseRequest> LeaseRequestFromJson(const json& params) {
  // From a client, present means meant: an empty list or name never widens
  // to "any GPU". (The saved queue writes both always: PendingFromJson.)
  if (params.is_object() && params.contains("uuids") && params["uuids"].is_array() &&
      params["uuids"].empty()) {
    return Status::InvalidArgument("params.uuids: an empty list; name at least one GPU, or leave uuids out");
  }
  if (params.is_object() && params.contains("mig_profile") && params["mig_profile"] == "") {
    return Status::InvalidArgument(
        "params.mig_profile: empty; name a profile such as 1g.10gb, or leave it out");
  }
  return ParseLeaseRequest(params);
}

Result<LeaseRequest> ParseLeaseRequest(const json& params) {
  LeaseRequest r;
  JsonFields f(params, "params");
  std::string kind = "run";
  f.Optional("gpus", &r.wants.gpu_count);
  f.Optional("uuids", &r.wants.uuids);
  f.Optional("mig_profile", &r.wants.mig_profile);
  f.Optional("min_free_memory_bytes", &r.wants.min_free_memory_bytes);
  ReadPriority(f, "priority", &r.priority);
  ReadSeconds(f, "max_time_seconds", &r.max_time);
  ReadSeconds(f, "idle_timeout_seconds", &r.idle_timeout);
  f.Optional("command", &r.command);
  f.Optional("kind", &kind);
  f.Optional("request_key", &r.request_key);
  f.Optional("lend_idle", &r.lends_idle);
  f.Optional("allow_unhealthy", &r.wants.allows_unhealthy);
  if (Status s = f.status(); !s.ok()) return s;
  if (kind != "run" && kind != "reservation")
    return Status::InvalidArgument("params.kind: expected run or reservation");
  if (std::any_of(r.wants.uuids.begin(), r.wants.uuids.end(),
                  [](const std::string& u) { return u.empty(); })) {
    return Status::InvalidArgument("params.uuids: an empty UUID");
  }
  if (!r.wants.mig_profile.empty() && !nvidia::IsMigProfileName(r.wants.mig_profile)) {
    return Status::InvalidArgument("params.mig_profile: expected a MIG profile such as 1g.10gb");
  }
  if (!r.wants.mig_profile.empty() && !r.wants.uuids.empty()) {
    return Status::InvalidArgument("params.mig_profile: not with uuids (one or the other)");
  }
  if (r.request_key.size() > 128 ||
      std::any_of(r.request_key.begin(), r.request_key.end(), [](char c) { return c <= ' ' || c > '~'; })) {
    return Status::InvalidArgument("params.request_key: expected up to 128 printable ASCII characters");
  }
  // A command line is what a process's argv joined: it cannot hold NUL.
  if (r.command.find('\0') != std::string::npos)
    return Status::InvalidArgument("params.command: holds a NUL byte");
  if (r.command.size() > 4096) {
    // Cut where a character begins: half a UTF-8 character could not be
    // written as JSON again.
    size_t keep = 4096;
    while (keep > 0 && (static_cast<unsigned char>(r.command[keep]) & 0xc0) == 0x80) --keep;
    r.command.resize(keep);
  }
  r.is_reservation = kind == "reservation";
  return r;
}

}  // namespace tarmac::sched
