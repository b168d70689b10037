#!/usr/bin/env python3
"""A small NVML monitor written the way pynvml-based tools are: ctypes,
CDLL("libnvidia-ml.so.1"), nvmlInitWithFlags(0), the _v2/_v3 entry points and
pynvml's struct layouts. It knows nothing of tarmac; the e2e tests run it
against the fake libnvidia-ml to show third-party clients see the simulated
fleet. Prints one CSV line per GPU:
index, name, uuid, memory.total MiB, memory.used(v1) MiB, utilization % (N/A
under MIG), pids
and, for a GPU in MIG mode, one line per MIG device after it, as nvidia-smi
walks them (nvmlDeviceGetMigDeviceHandleByIndex, skipping empty slots):
  index/gpu_instance_id, MIG uuid, name, memory.total MiB, memory.used MiB, pids
"""
import ctypes
import sys

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7


class Memory(ctypes.Structure):  # nvmlMemory_t
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class Utilization(ctypes.Structure):  # nvmlUtilization_t
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_v2_t, used by _v3
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


def check(lib, ret, what):
    if ret != NVML_SUCCESS:
        lib.nvmlErrorString.restype = ctypes.c_char_p
        sys.exit(f"{what}: {lib.nvmlErrorString(ret).decode()}")


def running_pids(lib, handle):
    n = ctypes.c_uint(0)
    ret = lib.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(n), None)
    if ret == NVML_SUCCESS:
        return []
    if ret != NVML_ERROR_INSUFFICIENT_SIZE:
        check(lib, ret, "processes")
    n = ctypes.c_uint(n.value * 2 + 5)
    procs = (ProcessInfo * n.value)()
    check(lib, lib.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(n), procs), "processes")
    return sorted(procs[k].pid for k in range(n.value))


def print_mig_devices(lib, index, handle):
    current, pending = ctypes.c_uint(), ctypes.c_uint()
    if lib.nvmlDeviceGetMigMode(handle, ctypes.byref(current), ctypes.byref(pending)) != NVML_SUCCESS:
        return
    if current.value != 1:
        return
    count = ctypes.c_uint()
    check(lib, lib.nvmlDeviceGetMaxMigDeviceCount(handle, ctypes.byref(count)), "max MIG devices")
    for slot in range(count.value):
        mig = ctypes.c_void_p()
        ret = lib.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot, ctypes.byref(mig))
        if ret == NVML_ERROR_NOT_FOUND:
            continue
        check(lib, ret, "MIG handle")
        is_mig = ctypes.c_uint()
        check(lib, lib.nvmlDeviceIsMigDeviceHandle(mig, ctypes.byref(is_mig)), "is MIG")
        assert is_mig.value == 1
        parent = ctypes.c_void_p()
        check(lib, lib.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, ctypes.byref(parent)), "parent")
        assert parent.value == handle.value
        gi = ctypes.c_uint()
        check(lib, lib.nvmlDeviceGetGpuInstanceId(mig, ctypes.byref(gi)), "GPU instance id")
        uuid = ctypes.create_string_buffer(96)
        check(lib, lib.nvmlDeviceGetUUID(mig, uuid, 96), "MIG uuid")
        name = ctypes.create_string_buffer(96)
        check(lib, lib.nvmlDeviceGetName(mig, name, 96), "MIG name")
        mem = Memory()
        check(lib, lib.nvmlDeviceGetMemoryInfo(mig, ctypes.byref(mem)), "MIG memory")
        pids = running_pids(lib, mig)
        print(f"  {index}/{gi.value}, {uuid.value.decode()}, {name.value.decode()}, {mem.total // 2**20}, "
              f"{mem.used // 2**20}, {' '.join(map(str, pids))}")


def main():
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    check(lib, lib.nvmlInitWithFlags(0), "nvmlInitWithFlags")
    count = ctypes.c_uint()
    check(lib, lib.nvmlDeviceGetCount_v2(ctypes.byref(count)), "nvmlDeviceGetCount_v2")
    for i in range(count.value):
        handle = ctypes.c_void_p()
        check(lib, lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)), "handle")
        name = ctypes.create_string_buffer(96)
        check(lib, lib.nvmlDeviceGetName(handle, name, 96), "name")
        uuid = ctypes.create_string_buffer(96)
        check(lib, lib.nvmlDeviceGetUUID(handle, uuid, 96), "uuid")
        mem = Memory()
        check(lib, lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)), "memory")
        util = Utilization()
        ret = lib.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(util))
        if ret != NVML_ERROR_NOT_SUPPORTED:  # Not supported under MIG.
            check(lib, ret, "utilization")
        utilization = "N/A" if ret == NVML_ERROR_NOT_SUPPORTED else str(util.gpu)
        pids = running_pids(lib, handle)
        print(f"{i}, {name.value.decode()}, {uuid.value.decode()}, {mem.total // 2**20}, "
              f"{mem.used // 2**20}, {utilization}, {' '.join(map(str, pids))}")
        print_mig_devices(lib, i, handle)
    check(lib, lib.nvmlShutdown(), "nvmlShutdown")


if __name__ == "__main__":
    main()
