// SPDX-License-Identifier: Apache-2.0
//
// The scalar readings of a GpuSample described once: JSON key, unit, tier,
// member and, where they have the reading, its nvidia-smi query field names
// and its /metrics families. Status JSON (both directions), the slow-tier
// carry, `tarmac query`'s fields and /metrics walk this table, so a reading added to GpuSample is one row
// here plus its read in each backend; the tests fill every row and check every key is documented in
// docs/status-json.md. The structured readings (processes, MIG instances, ECC counts, remapped rows, NVLink
// states, retired pages) are handled by their own code next to it. Constant data and pure functions;
// thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

#include "node/gpu_types.h"

namespace tarmac::node {

// Which read fills it: every fast_interval, or every slow_interval (and
// carried between, see CarrySlowTier).
enum class Tier { kFast, kSlow };

using SampleMember = std::variant<std::optional<double> GpuSample::*, std::optional<int64_t> GpuSample::*,
                                  std::optional<int> GpuSample::*, std::optional<uint64_t> GpuSample::*,
                                  std::optional<bool> GpuSample::*>;

// The reading in nvidia-smi's query language (`tarmac query --query-gpu`):
// its field name, then aliases; the help line of --help-query-gpu. The
// value is written as nvidia-smi writes it, by `unit` (cli/query_fields.cc).
struct SmiField {
  std::array<std::string_view, 4> names{};  // Empty: nvidia-smi has no such field.
  std::string_view help;
};

// The reading as a Prometheus family of /metrics (metrics/render.cc): one
// sample per GPU, the reading times `scale`.
struct MetricFamilyOf {
  std::string_view name;  // Empty: no such family.
  std::string_view type = "gauge";
  std::string_view help;
  double scale = 1.0;
};

struct SampleField {
  std::string_view json_key;  // In status JSON (docs/status-json.md).
  std::string_view unit;      // "ratio" (0..1), "bytes", "milliwatts", "celsius", "hertz", "count", ...
  Tier tier;
  SampleMember member;
  SmiField smi{};
  MetricFamilyOf native{};  // tarmac_gpu_*.
  MetricFamilyOf dcgm{};    // dcgm-exporter's name for it (docs/dcgm-compat.md).
};

// Every scalar reading of GpuSample, one row each.
std::span<const SampleField> SampleFields();

// Copies the slow-tier readings of `from` into `to`: the table's slow rows
// and the structured slow readings (ECC, remapped rows, NVLink states,
// retired pages) and when they were read. A fast-only tick keeps the last
// slow values this way.
void CarrySlowTier(const GpuSample& from, GpuSample* to);

}  // namespace tarmac::node
