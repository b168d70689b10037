#!/usr/bin/env python3
"""Agent memory over a long run: RSS at the default 1 s interval.

Usage: agent_soak.py BUILD_DIR SECONDS
Runs `tarmac agent` over the fake NVML (the world and its loads set up by
the caller, as bench/run does) at the default 1 s fast interval for SECONDS,
asks for `status` once a second as a watching client would, and prints the
agent's RSS (VmRSS) every ten minutes and its peak (VmHWM) at the end.
Target (issue: the agent): under 15 MiB after an hour with 8 GPUs.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_api  # noqa: E402
import time

build, seconds = sys.argv[1], float(sys.argv[2])
fake = f"{build}/fakenvml/libnvidia-ml.so.1"
work = tempfile.mkdtemp(prefix="tarmac-soak-")
sock_path = f"{work}/t.sock"


def call(method):
    return agent_api.call(sock_path, method)


def status_kib(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


agent = subprocess.Popen([f"{build}/bin/tarmac", "agent", "--backend", "nvml", "--nvml-library", fake,
                          "--socket", sock_path, "--http-listen", "127.0.0.1:0", "--state-dir", f"{work}/state", "--log-level", "error"])
for _ in range(200):
    try:
        call("hello")
        break
    except OSError:
        time.sleep(0.05)
start = time.monotonic()
next_report = start
while time.monotonic() - start < seconds:
    if time.monotonic() >= next_report:
        elapsed = time.monotonic() - start
        print(f"soak: {elapsed / 60:5.1f} min  RSS {status_kib(agent.pid, 'VmRSS') / 1024:5.1f} MiB", flush=True)
        next_report += 600
    call("status")
    time.sleep(1)
ticks = call("hello")["result"]["sampler"]["ticks"]
rss = status_kib(agent.pid, "VmRSS") / 1024
peak = status_kib(agent.pid, "VmHWM") / 1024
agent.terminate()
agent.wait()
print(f"soak: {seconds / 60:.0f} min, {ticks} ticks at 1 s: RSS {rss:.1f} MiB at the end, peak {peak:.1f} MiB")
