// SPDX-License-Identifier: Apache-2.0
#include "node/lease_kind.h"

#include "common/enum_names.h"

namespace tarmac::node {
namespace {

constexpr std::pair<LeaseKind, const char*> kNames[] = {
    {LeaseKind::kRun, "run"},           {LeaseKind::kReservation, "reservation"},
    {LeaseKind::kBackfill, "backfill"}, {LeaseKind::kPod, "pod"},
    {LeaseKind::kSlurm, "slurm"},
};

}  // namespace

std::string_view LeaseKindName(LeaseKind kind) { return EnumName(kNames, kind); }

std::optional<LeaseKind> ParseLeaseKind(std::string_view name) {
  LeaseKind kind = LeaseKind::kRun;
  if (!ParseEnum(kNames, name, &kind)) return std::nullopt;
  return kind;
}

std::string LeaseKindNames() { return EnumNameList(kNames); }

}  // namespace tarmac::node
