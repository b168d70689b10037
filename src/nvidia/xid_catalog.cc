// SPDX-License-Identifier: Apache-2.0
#include "nvidia/xid_catalog.h"

namespace tarmac::nvidia {
namespace {

constexpr XidMeaning kTable[] = {
    {8, XidGravity::kWarning, "GPU stopped processing (timeout)",
     "a kernel ran past the driver's watchdog, or the GPU hung; usually the application, sometimes the "
     "driver",
     "check the application that was running; if it recurs with different programs, reset the GPU and update "
     "the "
     "driver"},
    {13, XidGravity::kWarning, "graphics engine exception",
     "an application fault on the GPU, such as an out-of-range memory access or an illegal instruction",
     "debug the application (compute-sanitizer); if many unrelated programs hit it, run the GPU's "
     "diagnostics"},
    {31, XidGravity::kWarning, "GPU memory page fault",
     "an application accessed memory it does not own (a bug in the program or a library), rarely a driver "
     "fault",
     "debug the application (compute-sanitizer, CUDA_LAUNCH_BLOCKING=1); the GPU itself is usually fine"},
    {32, XidGravity::kWarning, "invalid or corrupted push buffer stream",
     "a corrupted command stream: a driver fault, bad PCIe signalling or system memory errors",
     "check the PCIe link (replays) and host memory (EDAC); update the driver; reseat the GPU if it recurs"},
    {38, XidGravity::kWarning, "driver firmware error", "the GPU's firmware reported an error to the driver",
     "install the newest driver for this GPU; reset the GPU if it recurs"},
    {43, XidGravity::kInfo, "GPU stopped processing",
     "the driver stopped a context after an application fault (often following Xid 13 or 31); other contexts "
     "go on",
     "look at the Xid just before it and at the application; no action on the GPU itself"},
    {45, XidGravity::kInfo, "preemptive cleanup",
     "the driver cleaned up after a process that ended (killed, crashed or stopped by the user)",
     "nothing to do on its own; look at the Xid that came just before, if any"},
    {48, XidGravity::kCritical, "double-bit ECC error",
     "an uncorrectable memory error: the data of the processes on the GPU may be corrupt",
     "drain the GPU, reset it (nvidia-smi -r) so the bad memory is remapped; if it recurs, RMA the board"},
    {56, XidGravity::kWarning, "display engine error", "an error in the display engine",
     "install the newest driver for this GPU"},
    {57, XidGravity::kWarning, "error programming video memory interface",
     "a memory interface error at setup", "reset the GPU; if it recurs, run the GPU's diagnostics"},
    {61, XidGravity::kWarning, "internal micro-controller breakpoint or warning",
     "the GPU's internal micro-controller hit a breakpoint or warning",
     "reset the GPU when it is free; update the driver and firmware"},
    {62, XidGravity::kCritical, "internal micro-controller halt",
     "the GPU's internal micro-controller stopped; the GPU no longer works correctly",
     "drain the GPU and reset it (nvidia-smi -r) or reboot; update the driver and firmware; RMA if it "
     "recurs"},
    {63, XidGravity::kWarning, "ECC page retirement or row remapping recorded",
     "the GPU recorded memory to retire or remap after ECC errors; it takes effect at the next reset",
     "reset the GPU when it is free so the remapping applies (see remapped rows in nvidia-smi -q)"},
    {64, XidGravity::kCritical, "ECC page retirement or row remapping failed",
     "the GPU could not record memory to retire or remap: it has run out of spare rows or hit a failure",
     "drain the GPU, reset it and run the GPU's diagnostics; RMA the board if remapping failed"},
    {69, XidGravity::kWarning, "graphics engine class error",
     "an application or driver fault on the graphics engine",
     "debug the application; update the driver if unrelated programs hit it"},
    {74, XidGravity::kCritical, "NVLink error",
     "an NVLink reported errors or went down: traffic between GPUs is slower or fails",
     "check the links (nvidia-smi nvlink -s, -e); reset the GPUs; reseat the GPU or NVLink bridge; RMA if it "
     "recurs"},
    {79, XidGravity::kCritical, "GPU has fallen off the bus",
     "the GPU stopped answering on PCIe: power, thermal, PCIe or hardware failure",
     "drain the node and reboot it; check power cables, cooling and the slot; RMA if it recurs"},
    {92, XidGravity::kWarning, "high single-bit ECC error rate",
     "the GPU corrects many memory errors: memory that is starting to fail",
     "watch the ECC counters; reset the GPU to remap rows; plan an RMA if the rate keeps rising"},
    {94, XidGravity::kWarning, "contained ECC error",
     "an uncorrectable memory error was contained: the affected application was stopped, others go on",
     "restart the affected job; reset the GPU when it is free so the row is remapped"},
    {95, XidGravity::kCritical, "uncontained ECC error",
     "an uncorrectable memory error could not be contained: every application on the GPU is affected",
     "drain the GPU and reset it (nvidia-smi -r) before new work; RMA if it recurs"},
    {119, XidGravity::kCritical, "GSP RPC timeout",
     "the GPU System Processor did not answer the driver in time; the GPU may stop working",
     "reset the GPU or reboot; update the driver (GSP firmware ships with it)"},
    {120, XidGravity::kCritical, "GSP error", "the GPU System Processor reported an error",
     "reset the GPU or reboot; install the newest driver"},
    {154, XidGravity::kCritical, "GPU recovery action changed",
     "the driver says the GPU needs a reset, a reboot or a power cycle to work again",
     "do what the message asks (nvidia-smi -q shows the recovery action): reset the GPU, reboot or drain"},
};

}  // namespace

XidMeaning LookUpXid(int64_t xid) {
  for (const XidMeaning& m : kTable) {
    if (m.xid == xid) return m;
  }
  return XidMeaning{xid, XidGravity::kWarning, "GPU error",
                    "an Xid this tarmac does not describe; look it up in NVIDIA's Xid catalog",
                    "read the full kernel log line; reset the GPU if errors recur"};
}

bool IsKnownXid(int64_t xid) {
  for (const XidMeaning& m : kTable) {
    if (m.xid == xid) return true;
  }
  return false;
}

bool IsApplicationXid(int64_t xid) { return xid == 13 || xid == 31 || xid == 43 || xid == 45 || xid == 68; }

}  // namespace tarmac::nvidia
