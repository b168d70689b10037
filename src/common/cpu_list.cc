// SPDX-License-Identifier: Apache-2.0
#include "common/cpu_list.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>

namespace tarmac {
namespace {

constexpr int kMaxCpus = 4096;

bool ParseInt(std::string_view text, int* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size() && *out >= 0 && *out < kMaxCpus;
}

}  // namespace

Result<std::vector<uint64_t>> ParseCpuList(std::string_view text) {
  std::vector<uint64_t> mask;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    size_t dash = item.find('-');
    int first = 0;
    int last = 0;
    bool ok = dash == std::string_view::npos
                  ? ParseInt(item, &first) && ParseInt(item, &last)
                  : ParseInt(item.substr(0, dash), &first) && ParseInt(item.substr(dash + 1), &last);
    if (!ok || last < first) {
      return Status::InvalidArgument("bad CPU list", fmt::format("'{}' (try \"0-31,64-95\")", text));
    }
    for (int cpu = first; cpu <= last; ++cpu) {
      size_t word = static_cast<size_t>(cpu / 64);
      if (mask.size() <= word) mask.resize(word + 1, 0);
      mask[word] |= uint64_t{1} << (cpu % 64);
    }
  }
  return mask;
}

std::string FormatCpuList(const std::vector<uint64_t>& mask) {
  std::string out;
  int total = static_cast<int>(mask.size()) * 64;
  auto set = [&](int cpu) { return (mask[static_cast<size_t>(cpu / 64)] >> (cpu % 64)) & 1; };
  for (int cpu = 0; cpu < total; ++cpu) {
    uint64_t rest = mask[static_cast<size_t>(cpu / 64)] >> (cpu % 64);
    if (rest == 0) {  // Nothing more in this word: NVML gives 64 of them.
      cpu = (cpu / 64 + 1) * 64 - 1;
      continue;
    }
    cpu += std::countr_zero(rest);
    int end = cpu;
    while (end + 1 < total && set(end + 1)) ++end;
    if (!out.empty()) out += ',';
    out += end == cpu ? fmt::format("{}", cpu) : fmt::format("{}-{}", cpu, end);
    cpu = end;
  }
  return out;
}

}  // namespace tarmac
