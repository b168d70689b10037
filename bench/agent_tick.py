#!/usr/bin/env python3
"""Agent cost per tick, RSS and tick lateness, against the bare C baseline.

Usage: agent_tick.py BUILD_DIR SECONDS CLIENTS
Runs `tarmac agent` over the fake NVML (the world and loads are set up by
bench/run) at a 100 ms fast interval for SECONDS, with CLIENTS threads
asking for `status` in a loop, and reads from /proc the agent's CPU time and
peak RSS and from the API its tick count and worst lateness. Then runs
bench/nvml_status_baseline for the same number of ticks at the same pace.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_api  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
from e2e_util import cpu_seconds, status_mib  # noqa: E402

build, seconds, clients = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
fake = f"{build}/fakenvml/libnvidia-ml.so.1"
work = tempfile.mkdtemp(prefix="tarmac-agent-bench-")
sock_path = f"{work}/t.sock"
config = f"{work}/agent.toml"
with open(config, "w") as f:
    f.write('[sampler]\nfast_interval = "100ms"\n')


def call(method):
    return agent_api.call(sock_path, method)


def start_agent():
    proc = subprocess.Popen([f"{build}/bin/tarmac", "agent", "--backend", "nvml", "--nvml-library", fake,
                             "--socket", sock_path, "--http-listen", "127.0.0.1:0", "--state-dir", f"{work}/state", "--config", config,
                             "--log-level", "error"])
    for _ in range(200):
        try:
            call("hello")
            break
        except OSError:
            time.sleep(0.05)
    return proc


def peak_rss_mib(pid):
    return status_mib(pid, "VmHWM")


agent = start_agent()
stop = threading.Event()
answered = [0]


def hammer():
    while not stop.is_set():
        try:
            call("status")
            answered[0] += 1
        except OSError:
            pass


threads = [threading.Thread(target=hammer) for _ in range(clients)]
before = call("hello")["result"]["sampler"]
cpu_before = cpu_seconds(agent.pid)
for t in threads:
    t.start()
time.sleep(seconds)
stop.set()
for t in threads:
    t.join()
after = call("hello")["result"]["sampler"]
cpu_after = cpu_seconds(agent.pid)
rss = peak_rss_mib(agent.pid)
agent.terminate()
agent.wait()

ticks = after["ticks"] - before["ticks"]
agent_ms = (cpu_after - cpu_before) * 1000 / max(ticks, 1)
print(f"agent: {ticks} ticks at 100 ms with {clients} clients asking status ({answered[0]} answers)")
print(f"agent: peak RSS {rss:.1f} MiB; tick lateness p99 {after['p99_lateness_seconds'] * 1000:.2f} ms, "
      f"worst {after['max_lateness_seconds'] * 1000:.2f} ms")

# The clients' status requests are not tick work: measure the agent's own
# tick cost again without them, against the baseline, in alternating rounds
# (agent, then the baseline for as many ticks while the agent idles on), so
# both see the same background load on a shared machine; the medians of the
# rounds are reported.
agent = start_agent()
time.sleep(1)
rounds = 5
agent_ms, base_ms, total_ticks = [], [], 0
for _ in range(rounds):
    before = call("hello")["result"]["sampler"]
    cpu_before = cpu_seconds(agent.pid)
    time.sleep(seconds / rounds)
    after = call("hello")["result"]["sampler"]
    cpu_after = cpu_seconds(agent.pid)
    ticks = after["ticks"] - before["ticks"]
    total_ticks += ticks
    agent_ms.append((cpu_after - cpu_before) * 1000 / max(ticks, 1))
    out = subprocess.run([os.environ.get("RUSAGE_RUN", f"{build}/bin/rusage_run"), f"{build}/bin/nvml_status_baseline",
                          fake, str(ticks), "100"], capture_output=True, text=True, check=True)
    user, system, _ = out.stdout.split()
    base_ms.append((float(user) + float(system)) * 1000 / max(ticks, 1))
agent.terminate()
agent.wait()
quiet_ticks = total_ticks
ratios = sorted(a / b for a, b in zip(agent_ms, base_ms))
quiet_ms = sorted(agent_ms)[rounds // 2]
median_base = sorted(base_ms)[rounds // 2]
print(f"agent CPU per tick           {quiet_ms:7.3f} ms  ({quiet_ticks} ticks in {rounds} rounds, no clients; median)")
print(f"baseline (C, same calls)     {median_base:7.3f} ms per tick  -> agent x{ratios[rounds // 2]:4.2f} of baseline "
      f"(median of the rounds' ratios; range x{ratios[0]:4.2f}-x{ratios[-1]:4.2f})")
diff_ms = max(quiet_ms - median_base, 0.0)
print(f"agent minus baseline         {diff_ms:7.3f} ms per tick (includes the fake library's extra work for")
print("                                        the agent: calls from 8 threads)")


def own_cost_by_profile():
    """The agent's CPU per tick outside libnvidia-ml, from perf samples.

    Attaches perf to a warm agent (no clients) and samples the CPU at 1 kHz
    with call stacks: a sample whose stack passes through libnvidia-ml is
    NVML's time (the floor, and the fake's own simulation work), anything
    else is tarmac's. Stacks perf cannot unwind count as tarmac's.
    """
    agent = start_agent()
    time.sleep(1)
    data = f"{work}/perf.data"
    before = call("hello")["result"]["sampler"]
    rec = subprocess.run(["perf", "record", "-q", "-F", "1000", "--call-graph", "dwarf,32768", "-o", data,
                          "-p", str(agent.pid), "--", "sleep", str(seconds)], capture_output=True, text=True)
    after = call("hello")["result"]["sampler"]
    agent.terminate()
    agent.wait()
    if rec.returncode != 0:
        return None
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym,dso"], capture_output=True,
                            text=True)
    own = nvml = 0
    for block in script.stdout.split("\n\n"):
        if not block.strip():
            continue
        if "libnvidia-ml.so" in block:
            nvml += 1
        else:
            own += 1
    ticks = after["ticks"] - before["ticks"]
    return own, nvml, ticks


profile = own_cost_by_profile() if subprocess.run(["sh", "-c", "command -v perf"], capture_output=True).returncode == 0 else None
if profile and profile[2] > 0:
    own, nvml, ticks = profile
    own_ms = own / ticks  # 1 kHz sampling: one sample is 1 ms of CPU.
    print(f"profile: {own + nvml} CPU samples at 1 kHz over {ticks} ticks: {nvml} in libnvidia-ml, {own} in tarmac")
    print(f"agent's own cost per tick    {own_ms:7.3f} ms  = {own_ms / 10:.3f} % of one core at the 1 s default")
else:
    print("profile: perf not available or not permitted; own cost by subtraction only")
    print(f"agent's own cost per tick    {diff_ms:7.3f} ms  = {diff_ms / 10:.3f} % of one core at the 1 s default")
