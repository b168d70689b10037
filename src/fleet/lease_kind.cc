// SPDX-License-Identifier: Apache-2.0
#include "fleet/lease_kind.h"

#include <array>
#include <utility>

namespace tarmac::fleet {
namespace {

constexpr std::array<std::pair<LeaseKind, std::string_view>, 5> kNames = {{
    {LeaseKind::kRun, "run"},
    {LeaseKind::kReservation, "reservation"},
    {LeaseKind::kBackfill, "backfill"},
    {LeaseKind::kPod, "pod"},
    {LeaseKind::kSlurm, "slurm"},
}};

}  // namespace

std::string_view LeaseKindName(LeaseKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "run";
}

std::optional<LeaseKind> ParseLeaseKind(std::string_view name) {
  for (const auto& [k, n] : kNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::string LeaseKindNames() {
  std::string out;
  for (const auto& [k, name] : kNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace tarmac::fleet
