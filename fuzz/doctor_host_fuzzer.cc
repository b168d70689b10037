// SPDX-License-Identifier: Apache-2.0
//
// The doctor's parsers of host files and tools: /proc/stat, /proc/meminfo,
// kernel log Xid lines, PCI addresses and iperf3's JSON report. None may crash, and what they return must
// hold together (a window's ratios within 0..1).
#include <cstddef>
#include <cstdint>
#include <string>

#include "doctor/host_readings.h"
#include "doctor/throughput.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  size_t half = bytes.size() / 2;
  std::vector<tarmac::doctor::CpuTimes> before = tarmac::doctor::ParseCpuTimes(bytes.substr(0, half));
  std::vector<tarmac::doctor::CpuTimes> after = tarmac::doctor::ParseCpuTimes(bytes.substr(half));
  if (std::optional<tarmac::doctor::CpuWindow> w = tarmac::doctor::CompareCpuTimes(before, after)) {
    for (double r : {w->busy_ratio, w->iowait_ratio, w->steal_ratio, w->hottest_busy_ratio}) {
      if (!(r >= 0 && r <= 1)) __builtin_trap();
    }
  }
  tarmac::doctor::MemInfo m = tarmac::doctor::ParseMemInfo(bytes);
  if (m.total_kib && *m.total_kib < 0) __builtin_trap();
  for (const tarmac::doctor::KernelXid& x : tarmac::doctor::ParseKernelXids(bytes)) {
    if (x.xid < 0) __builtin_trap();
  }
  tarmac::Result<tarmac::doctor::NetworkResult> iperf = tarmac::doctor::ParseIperfJson(bytes);
  if (iperf.ok() && !(iperf.value().receive_gbit_per_s >= 0)) __builtin_trap();
  (void)tarmac::doctor::NormalizePciAddress(bytes);
  (void)tarmac::doctor::NormalizePciAddress(bytes, false);
  return 0;
}
