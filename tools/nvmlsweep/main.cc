// SPDX-License-Identifier: Apache-2.0
//
// tarmac-nvml-sweep: calls every function a libnvidia-ml.so.1 exports, the
// way NVML documents calling it, on every GPU, MIG device, GPU and compute
// instance it hands out, and writes one tab-separated line per answer:
//
//   call    NAME HANDLE TAGS ARGS CODE
//   check   NAME HANDLE TAGS ok|disagree DETAIL   (calls.h, checks.h)
//   missing NAME                                   (not exported)
//   crash   NAME SIGNAL                            (then exit 3)
//
// TAGS name the handle's kind (gpu, mig-device, gi, ci, event-set, system,
// none), gpu states (mig-on, lost) and the caller (root, user). Run against
// tarmac's fake library in `make test` (tests/integration/
// nvml_conformance_test.cc) and against a real driver by scripts/device-check,
// so the two can be compared line for line.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "checks.h"
#include "library.h"
#include "mig_exercise.h"
#include "sweep_calls.h"
#include "world.h"

namespace tarmac::nvmlsweep {
namespace {

using namespace gpu::nvml;  // NOLINT: the ABI's names.

constexpr const char* kUsage =
    "usage: tarmac-nvml-sweep [--lib PATH] [--settings] [--mig-exercise]\n"
    "\n"
    "Calls every function PATH (default libnvidia-ml.so.1) exports, as NVML\n"
    "documents calling it, on every handle it hands out, and prints one line per\n"
    "answer. Read-only unless asked:\n"
    "  --settings      also call the setters (Set*, Reset*, Clear*, drain, GPU\n"
    "                  removal): never on a GPU whose settings matter\n"
    "  --mig-exercise  create and destroy MIG instances where there is room\n";

struct Options {
  std::string lib = "libnvidia-ml.so.1";
  SweepOptions sweep;
  bool mig_exercise = false;
};

// Every code has a static string, callable before init (nvml-abi.md B.2).
void CheckErrorStrings(Library& lib, const std::string& caller) {
  auto text = lib.Fn<const char* (*)(int)>("nvmlErrorString");
  if (text == nullptr) return;
  int empty = 0;
  for (int code = 0; code <= 30; ++code) empty += text(code) == nullptr || *text(code) == '\0' ? 1 : 0;
  lib.Line({"call", "nvmlErrorString", "system", "system," + caller, "codes 0-30", "SUCCESS"});
  lib.Line({"check", "error-strings", "system", "system," + caller, empty == 0 ? "ok" : "disagree",
            std::to_string(empty) + " of 31 codes without text"});
}

// GPM's own protocol: two samples a moment apart, then the metrics between.
void SweepGpm(Library& lib, const SweptWorld& world) {
  for (const SweptDevice& d : world.devices) {
    if (d.mig >= 0) continue;
    Where where{d.Label(), d.Tags(world.caller)};
    GpmSample a = nullptr, b = nullptr;
    lib.Record("nvmlGpmSampleAlloc", where, "", {W(&a)});
    lib.Call("nvmlGpmSampleAlloc", {W(&b)});
    lib.Call("nvmlGpmSampleGet", {W(d.handle), W(a)});
    ::usleep(100 * 1000);
    lib.Call("nvmlGpmSampleGet", {W(d.handle), W(b)});
    static GpmMetricsGet get;
    std::memset(&get, 0, sizeof get);
    get.version = kGpmMetricsGetVersion;
    get.numMetrics = 1;
    get.sample1 = a;
    get.sample2 = b;
    get.metrics[0].metricId = kGpmMetricSmUtil;
    lib.Record("nvmlGpmMetricsGet", where, "sm_util", {W(&get)});
    lib.Record("nvmlGpmSampleFree", where, "", {W(a)});
    lib.Call("nvmlGpmSampleFree", {W(b)});
  }
}

// nvmlDeviceGetRunningProcessDetailList: a versioned struct whose entry
// count is the size protocol's count.
void SweepProcessDetail(Library& lib, const SweptWorld& world) {
  struct List {
    unsigned version, mode, entries;
    void* array;
  };
  static unsigned char array[64 * 1024];
  for (const SweptDevice& d : world.devices) {
    Where where{d.Label(), d.Tags(world.caller)};
    List list{24u | (1u << 24), 0, 0, nullptr};  // nvmlProcessDetailList_v1, compute
    lib.Record("nvmlDeviceGetRunningProcessDetailList#size", where, "mode=0", {W(d.handle), W(&list)});
    list.entries = std::min(list.entries + 4, 1024u);
    list.array = array;
    lib.Record("nvmlDeviceGetRunningProcessDetailList", where, "mode=0", {W(d.handle), W(&list)});
  }
}

// The end of the frame: a second and third init, each shut down, then a
// shutdown and a call too many.
void Finish(Library& lib, const std::string& caller) {
  Where system{"system", "system," + caller};
  lib.Record("nvmlInitWithFlags", system, "flags=0", {0});
  lib.Record("nvmlInit", system, "", {});
  for (int i = 0; i < 3; ++i) lib.Record("nvmlShutdown", system, "", {});
  Where after{"system", "system,after-shutdown," + caller};
  lib.Record("nvmlShutdown", after, "", {});
  unsigned count = 0;
  lib.Record("nvmlDeviceGetCount_v2", after, "", {W(&count)});
}

int Run(const Options& options) {
  InstallCrashReport(STDOUT_FILENO);
  Library lib(options.lib, stdout);
  if (!lib.Ok()) {
    std::fprintf(stderr, "tarmac-nvml-sweep: cannot open %s: %s\n", options.lib.c_str(), lib.Error().c_str());
    return 2;
  }
  std::string caller = ::geteuid() == 0 ? "root" : "user";
  Where system{"system", "system," + caller};
  unsigned count = 0;
  lib.Record("nvmlDeviceGetCount_v2", {"system", "system,before-init," + caller}, "", {W(&count)});
  CheckErrorStrings(lib, caller);
  lib.Record("nvmlInit_v2", system, "", {});
  SweptWorld world = Discover(lib);
  lib.Line({"world", std::to_string(world.gpu_count) + " GPUs",
            std::to_string(world.devices.size()) + " devices",
            std::to_string(world.gpu_instances.size()) + " GPU instances",
            std::to_string(world.compute_instances.size()) + " compute instances", caller});
  void* set = nullptr;
  lib.Record("nvmlEventSetCreate", system, "", {W(&set)});
  SweepCalls(lib, world, set, options.sweep);
  SweepGpm(lib, world);
  SweepProcessDetail(lib, world);
  CheckAgreement(lib, world);
  if (options.mig_exercise) ExerciseMig(lib, world);
  lib.Record("nvmlEventSetFree", {"events", "event-set," + caller}, "", {W(set)});
  Finish(lib, caller);
  lib.Line({"done"});
  return 0;
}

}  // namespace
}  // namespace tarmac::nvmlsweep

int main(int argc, char** argv) {
  tarmac::nvmlsweep::Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--lib" && i + 1 < argc) {
      options.lib = argv[++i];
    } else if (arg == "--settings") {
      options.sweep.settings = true;
    } else if (arg == "--mig-exercise") {
      options.mig_exercise = true;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(tarmac::nvmlsweep::kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "tarmac-nvml-sweep: unknown argument '%s'\n\n%s", arg.c_str(),
                   tarmac::nvmlsweep::kUsage);
      return 2;
    }
  }
  return tarmac::nvmlsweep::Run(options);
}
