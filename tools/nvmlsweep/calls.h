// SPDX-License-Identifier: Apache-2.0
//
// The call table of tarmac-nvml-sweep: for every function libnvidia-ml.so.1
// exports (the 286 public ones of tools/fakenvml/public_exports.txt and the
// older versioned names beside them), the arguments NVML documents for it,
// as tokens in parameter order:
//
//   D      the swept device: every GPU handle and every MIG device handle
//   P      a peer: the next GPU (the GPU itself when it is the only one)
//   G C    every GPU instance / compute instance handle
//   E S    the sweep's event set / a GPM sample it allocated
//   o      an output: a zeroed 4 KiB buffer
//   v<hex> a versioned output struct: a zeroed buffer whose first word is <hex>
//   n l    the size protocol's count and list: first count 0 and list NULL
//          (recorded as NAME#size), then the list with the count answered
//   b<N>   a char buffer and its length N (two parameters)
//   i<a>-<b>, i<a>,<b>,...  an integer input: a call for each value
//   I J    each GPU (compute) instance profile's ID, as the profile's info
//          answers it (`info.id`), on the device (GPU instance)
//   K k    each GPU instance id on the device / compute instance id in it
//   ix     each device index; uuid busid serial: the device's own strings
//   pci    a pointer to the device's PCI info
//   pid    each process on the device (the sweep's own PID when none)
//   self   the sweep's own PID
//   evt    the event types the device supports
//   mclk   the device's maximum memory clock
//   place  a pointer to each of the profile's possible placements
//   F      a count and an array of field values to read
//   z      zero
//   *      the remaining parameters: zeroed 4 KiB buffers (a call the
//          sweep does not model beyond its handle)
//
// and a flag: !set (changes a setting: swept only with --settings), !mut
// (creates or destroys MIG instances: the MIG exercise makes these calls),
// !life (init, shutdown, allocations: the sweep's own frame makes them),
// !special (a call with a protocol of its own), !none (its handle, a vGPU
// or unit, exists on no host without vGPU or S-class units: called with a
// NULL handle).
#pragma once

#include <span>

namespace tarmac::nvmlsweep {

struct CallSpec {
  const char* name;
  const char* args;
};

// The table, sorted by name.
std::span<const CallSpec> Calls();

}  // namespace tarmac::nvmlsweep
