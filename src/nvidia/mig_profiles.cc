// SPDX-License-Identifier: Apache-2.0
#include "nvidia/mig_profiles.h"

#include <fmt/format.h>

#include <cctype>
#include <map>

namespace tarmac::nvidia {
namespace {

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

constexpr int64_t kGiB = int64_t{1} << 30;

}  // namespace

std::vector<MigProfile> MigProfilesFor(std::string_view model, int64_t memory_total_bytes) {
  if (Contains(model, "H200")) {
    return {{"1g.18gb", 1, 1, 7}, {"1g.35gb", 1, 2, 4}, {"2g.35gb", 2, 2, 3},
            {"3g.71gb", 3, 4, 2}, {"4g.71gb", 4, 4, 1}, {"7g.141gb", 7, 8, 1}};
  }
  if (Contains(model, "H100") && memory_total_bytes > 88 * kGiB) {
    return {{"1g.12gb", 1, 1, 7}, {"1g.24gb", 1, 2, 4}, {"2g.24gb", 2, 2, 3},
            {"3g.47gb", 3, 4, 2}, {"4g.47gb", 4, 4, 1}, {"7g.94gb", 7, 8, 1}};
  }
  if (Contains(model, "H100") || (Contains(model, "A100") && memory_total_bytes > 48 * kGiB)) {
    return {{"1g.10gb", 1, 1, 7}, {"1g.20gb", 1, 2, 4}, {"2g.20gb", 2, 2, 3},
            {"3g.40gb", 3, 4, 2}, {"4g.40gb", 4, 4, 1}, {"7g.80gb", 7, 8, 1}};
  }
  if (Contains(model, "A100")) {
    return {{"1g.5gb", 1, 1, 7},  {"1g.10gb", 1, 2, 4}, {"2g.10gb", 2, 2, 3},
            {"3g.20gb", 3, 4, 2}, {"4g.20gb", 4, 4, 1}, {"7g.40gb", 7, 8, 1}};
  }
  if (Contains(model, "A30")) {  // Four slices of each kind, shown as their share of 7 and 8.
    return {{"1g.6gb", 1, 2, 4}, {"2g.12gb", 2, 4, 2}, {"4g.24gb", 4, 8, 1}};
  }
  return {};
}

bool IsMigProfileName(std::string_view name) {
  // <digits>g.<digits>gb
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
    return i > start && i - start <= 3;
  };
  if (!digits() || i >= name.size() || name[i++] != 'g') return false;
  if (i >= name.size() || name[i++] != '.') return false;
  if (!digits()) return false;
  return name.substr(i) == "gb";
}

int MigComputeSlicesOf(std::string_view name) {
  if (!IsMigProfileName(name)) return 0;
  int slices = 0;
  for (char c : name) {
    if (c == 'g') break;
    slices = slices * 10 + (c - '0');
  }
  return slices;
}

std::string CheckMigLayout(std::string_view model, int64_t memory_total_bytes,
                           const std::vector<std::string>& profiles) {
  std::vector<MigProfile> known = MigProfilesFor(model, memory_total_bytes);
  if (known.empty()) return fmt::format("{} has no MIG", model);
  std::map<std::string_view, int> count;
  int compute = 0;
  int memory = 0;
  for (const std::string& name : profiles) {
    const MigProfile* p = nullptr;
    for (const MigProfile& k : known) {
      if (k.name == name) p = &k;
    }
    if (p == nullptr) {
      std::string names;
      for (const MigProfile& k : known) names += fmt::format("{}{}", names.empty() ? "" : ", ", k.name);
      return fmt::format("no MIG profile '{}' on {} (its profiles: {})", name, model, names);
    }
    if (++count[p->name] > p->max_count) {
      return fmt::format("at most {} instance{} of {} fit one GPU", p->max_count,
                         p->max_count == 1 ? "" : "s", name);
    }
    compute += p->compute_slices;
    memory += p->memory_slices;
    if (compute > kMigComputeSlices) {
      return fmt::format("the instances need {} compute slices at {}; a GPU has {}", compute, name,
                         kMigComputeSlices);
    }
    if (memory > kMigMemorySlices) {
      return fmt::format("the instances need {} memory slices at {}; a GPU has {}", memory, name,
                         kMigMemorySlices);
    }
  }
  return {};
}

std::vector<int> MigPlacementStarts(const MigProfile& p) {
  std::vector<int> starts;
  if (p.memory_slices <= 0) return starts;
  for (int start = 0; start + p.memory_slices <= kMigMemorySlices; start += p.memory_slices) {
    if (start + p.compute_slices <= kMigComputeSlices) starts.push_back(start);
  }
  return starts;
}

namespace {

// Places instances from `i` on, given the memory slices `used` (a bit each).
bool PlaceFrom(const std::vector<MigProfile>& layout, const std::vector<int>& fixed, size_t i, unsigned used,
               std::vector<int>* starts) {
  if (i == layout.size()) return true;
  unsigned mask_of_one = (1u << layout[i].memory_slices) - 1;
  std::vector<int> candidates = fixed[i] >= 0 ? std::vector<int>{fixed[i]} : MigPlacementStarts(layout[i]);
  for (int start : candidates) {
    unsigned mask = mask_of_one << start;
    if ((used & mask) != 0) continue;
    (*starts)[i] = start;
    if (PlaceFrom(layout, fixed, i + 1, used | mask, starts)) return true;
  }
  return false;
}

}  // namespace

std::vector<int> PlaceMigInstances(const std::vector<MigProfile>& layout, const std::vector<int>& fixed) {
  std::vector<int> starts(layout.size(), -1);
  if (fixed.size() != layout.size() || !PlaceFrom(layout, fixed, 0, 0, &starts)) return {};
  return starts;
}

}  // namespace tarmac::nvidia
