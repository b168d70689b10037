#!/usr/bin/env python3
"""Sampler tick lateness with a busy lease service, against an idle agent.

Usage: lease_tick.py BUILD_DIR [SECONDS] [WAITERS]

Two agents in turn over the fake NVML (8 GPUs), each sampling every 100 ms
for SECONDS:
  idle:  no leases, no clients (the baseline);
  busy:  8 reservations hold every GPU, WAITERS requests are queued behind
         them and each holds a `lease.wait` call open, and one client extends
         a reservation every 100 ms, so the lease state is committed every
         tick.
Prints each agent's tick lateness (p99 and worst, from `hello`). The lease
service ticks on its own thread, so the busy figures should match the idle
ones. Every queued request must still be queued at the end (none lost).
"""
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_api import call  # noqa: E402

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20
waiters = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, waiters + 512)), hard))


def start_agent(work):
    env = dict(os.environ)
    env["TARMAC_SIM_SCENARIO"] = os.path.join(root, "examples/scenarios/lab-8gpu.toml")
    env["TARMAC_SIM_DIR"] = os.path.join(work, "world")
    sock = os.path.join(work, "tarmac.sock")
    config = os.path.join(work, "agent.toml")
    with open(config, "w") as f:
        f.write('[sampler]\nfast_interval = "100ms"\n[store]\nenabled = false\n')
    agent = subprocess.Popen(
        [os.path.join(build, "bin/tarmac"), "agent", "--backend", "nvml", "--nvml-library",
         os.path.join(build, "fakenvml/libnvidia-ml.so.1"), "--socket", sock, "--state-dir",
         os.path.join(work, "state"), "--http-listen", "off", "--config", config],
        env=env, stderr=open(os.path.join(work, "agent.log"), "w"))
    for _ in range(200):
        try:
            call(sock, "hello")
            return agent, sock
        except OSError:
            time.sleep(0.05)
    raise SystemExit("agent did not start; see " + work)


def open_wait(sock, request_id):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps({"v": 1, "method": "lease.wait",
                          "params": {"id": request_id, "timeout_ms": 600000}}).encode() + b"\n")
    return s


def run(busy):
    work = tempfile.mkdtemp(prefix="tarmac-bench-lease-tick-")
    agent, sock = start_agent(work)
    held, conns, stop = [], [], threading.Event()
    commits = [0]
    try:
        if busy:
            for _ in range(8):
                r = call(sock, "lease.request", {"gpus": 1, "kind": "reservation", "max_time_seconds": 3600})
                held.append(r["result"]["lease"]["id"])
            for _ in range(waiters):
                r = call(sock, "lease.request", {"gpus": 1, "kind": "reservation"})
                conns.append(open_wait(sock, r["result"]["request"]["id"]))

            def extend():
                while not stop.is_set():
                    call(sock, "lease.extend", {"id": held[0], "seconds": 1})
                    commits[0] += 1
                    time.sleep(0.1)
            threading.Thread(target=extend, daemon=True).start()
        before = call(sock, "hello")["result"]["sampler"]
        time.sleep(seconds)
        stop.set()
        after = call(sock, "hello")["result"]["sampler"]
        queued = len(call(sock, "queue")["result"]["queue"])
        return {"ticks": after["ticks"] - before["ticks"], "p99_ms": after["p99_lateness_seconds"] * 1000,
                "worst_ms": after["max_lateness_seconds"] * 1000, "queued": queued, "commits": commits[0],
                "waiting": len(conns)}
    finally:
        for c in conns:
            c.close()
        agent.send_signal(signal.SIGTERM)
        agent.wait()
        shutil.rmtree(work, ignore_errors=True)


idle = run(False)
busy = run(True)
print(f"tick lateness at a 100 ms interval, {seconds:.0f} s each:")
print(f"  idle agent                                   p99 {idle['p99_ms']:6.2f} ms  worst {idle['worst_ms']:6.2f} ms"
      f"  ({idle['ticks']} ticks)")
print(f"  {busy['waiting']} waiting in lease.wait, {busy['commits']} commits  "
      f"p99 {busy['p99_ms']:6.2f} ms  worst {busy['worst_ms']:6.2f} ms  ({busy['ticks']} ticks)")
print(f"  queued at the end: {busy['queued']} of {waiters}")
sys.exit(0 if busy["queued"] == waiters else 1)
