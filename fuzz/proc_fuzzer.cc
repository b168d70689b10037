// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: what the sampler reads about a process from files other
// programs write: /proc/<pid>/stat, /proc/<pid>/cgroup and the container
// runtime's OCI config.json.
#include <cctype>
#include <cstdint>
#include <string_view>

#include "common/proc_files.h"
#include "sampler/cgroup.h"
#include "sampler/container_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<tarmac::ProcStat> stat = tarmac::ParseProcStat(std::string(text));
  if (stat && stat->start_ticks < 0) __builtin_trap();
  tarmac::node::CgroupIdentity id = tarmac::sampler::ParseCgroup(text);
  // Ids become file names under the runtime's state dir: hex only.
  if (!id.container_id.empty() && id.container_id.size() != 64) __builtin_trap();
  for (char c : id.container_id) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) __builtin_trap();
  }
  (void)tarmac::sampler::ParseOciAnnotations(text);
  return 0;
}
