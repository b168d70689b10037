// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: lease requests and saved leases as JSON
// (sched/lease_json.h), then the request through LeaseBook::Submit. Whatever
// the bytes: an error that says why, or values that round-trip; the book
// never holds a bad request.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "sched/lease_book.h"
#include "sched/lease_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tarmac;  // NOLINT: fuzz target.
  nlohmann::json j =
      nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;
  sched::TimeBase base{sched::TimePoint{} + std::chrono::hours(1000),
                       std::chrono::system_clock::from_time_t(1800000000)};
  Result<sched::LeaseRequest> r = sched::LeaseRequestFromJson(j);
  if (!r.ok() && r.status().message().empty()) __builtin_trap();
  if (r.ok()) {
    std::vector<sched::GpuSlot> gpus(4);
    for (int i = 0; i < 4; ++i) {
      gpus[static_cast<size_t>(i)].index = i;
      gpus[static_cast<size_t>(i)].uuid = "GPU-" + std::to_string(i);
      gpus[static_cast<size_t>(i)].memory_free_bytes = int64_t{80} << 30;
    }
    sched::LeaseBook book;
    Result<int64_t> id = book.Submit({1000, "u", false}, r.value(), gpus, base.steady);
    if (id.ok()) {
      const sched::LeaseRequest& q = book.queue()[0].request;
      if (q.wants.uuids.empty() && (q.wants.gpu_count < 1 || q.wants.gpu_count > 4)) __builtin_trap();
      if (q.wants.min_free_memory_bytes < 0) __builtin_trap();
      if (q.max_time && (q.max_time->count() <= 0 || *q.max_time > sched::kMaxLeaseTime)) __builtin_trap();
      book.Decide(gpus, base.steady);
      if (!book.CheckInvariants().empty()) __builtin_trap();
    } else if (id.status().message().empty()) {
      __builtin_trap();
    }
  }
  Result<sched::Lease> lease = sched::LeaseFromJson(j, base);
  if (lease.ok()) {
    if (lease.value().gpus.size() != lease.value().uuids.size()) __builtin_trap();
    Result<sched::Lease> again = sched::LeaseFromJson(sched::LeaseToJson(lease.value(), base), base);
    if (!again.ok() || again.value().id != lease.value().id || again.value().gpus != lease.value().gpus)
      __builtin_trap();
  }
  Result<sched::Pending> pending = sched::PendingFromJson(j, base);
  if (pending.ok()) {
    Result<sched::Pending> again = sched::PendingFromJson(sched::PendingToJson(pending.value(), base), base);
    if (!again.ok() || again.value().id != pending.value().id) __builtin_trap();
  }
  return 0;
}
