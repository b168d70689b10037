#!/usr/bin/env python3
"""Backfill yield: how long a real request waits on a fleet full of backfill.

Usage: backfill_yield.py BUILD_DIR [TRIALS] [GRACE_SECONDS]

One agent on 8 simulated GPUs ([backfill] idle_for = 0, grace = GRACE, a
1 s sampling interval as in production). Measured, one after another in
the same run, as the wall time of `tarmac run --gpus 1 -- true` (asking,
waiting, running `true`, releasing):

1. baseline: the fleet idle, no backfill.
2. backfill that yields on notice: 8 `tarmac run --priority backfill`
   commands that exit on SIGTERM (as a batch runner that checkpoints and
   stops). Target: p99 at most 2 s.
3. backfill that ignores the notice: the agent ends it after the grace.
   Target: p99 at most grace + 1 s.
4. a backfill batch (`tarmac backfill submit --gpus 8`) with a
   tarmac-simengine per GPU: on notice the runner closes its requests,
   stops the engine, sees the memory free through the agent's NVML reading
   and releases. Target: p99 at most 2 s.

Between trials the freed GPU is filled with backfill again, so every trial
meets a full fleet.
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_api import call, start_agent, submit_batch  # noqa: E402

# Each command names the bench's directory (`: DIR`), so that what outlives
# its `tarmac run` can be found and killed at the end.
POLITE = ": {work}; trap 'exit 0' TERM; while :; do sleep 0.05; done"
STUBBORN = ": {work}; trap '' TERM; while :; do sleep 0.05; done"


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def backfill_count(sock):
    return sum(1 for lease in call(sock, "leases")["result"]["leases"] if lease["priority"] == "backfill")


def fill(tarmac, env, sock, script, procs):
    """Starts backfill runs until 8 backfill leases hold the GPUs."""
    deadline = time.time() + 30
    while backfill_count(sock) < 8:
        if len([p for p in procs if p.poll() is None]) < 8 + 2:
            procs.append(subprocess.Popen([tarmac, "run", "--priority", "backfill", "--", "sh", "-c", script],
                                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if time.time() > deadline:
            raise RuntimeError("the fleet did not fill with backfill")
        time.sleep(0.05)


def trial(tarmac, env):
    start = time.perf_counter()
    rc = subprocess.run([tarmac, "run", "--gpus", "1", "--", "true"], env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - start, rc


def stop_all(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
    for p in procs:
        p.wait()
    procs.clear()


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    grace = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    work = tempfile.mkdtemp(prefix="tarmac-bench-backfill-")
    agent, env, sock = start_agent(build, work, f"[store]\nenabled = false\n[backfill]\nidle_for = \"0s\"\n"
                                   f"grace = \"{int(grace * 1000)}ms\"\n[leases]\nkill_grace = \"1s\"\n")
    tarmac = os.path.join(build, "bin", "tarmac")
    procs = []
    try:
        results = {}
        failures = 0
        for name, script in [("idle fleet (baseline)", None), ("backfill that yields on notice", POLITE),
                             ("backfill that ignores the notice", STUBBORN),
                             ("a batch, an engine per GPU", "batch")]:
            waits = []
            if script == "batch":
                submit_batch(build, env, work, 200000, 8, 4, 50)  # Holds all 8 GPUs through every trial.
            for _ in range(trials):
                if script == "batch":
                    deadline = time.time() + 60
                    while backfill_count(sock) < 8 and time.time() < deadline:
                        time.sleep(0.02)
                elif script:
                    fill(tarmac, env, sock, script.format(work=work), procs)
                seconds, rc = trial(tarmac, env)
                failures += rc != 0
                waits.append(seconds)
            if script == "batch":
                call(sock, "backfill.cancel", {"id": 1})
            stop_all(procs)
            deadline = time.time() + 30
            while call(sock, "leases")["result"]["leases"] and time.time() < deadline:
                time.sleep(0.1)
            results[name] = waits
        events = call(sock, "events", {"limit": 100000})["result"]["events"]
        kinds = [e["kind"] for e in events]
        print(f"a real `tarmac run --gpus 1 -- true` on 8 GPUs, {trials} trials each "
              f"([backfill] grace {grace:g} s, 1 s sampling):")
        for name, waits in results.items():
            print(f"  {name:34s} p50 {statistics.median(waits) * 1000:7.1f} ms  "
                  f"p99 {percentile(waits, 99) * 1000:7.1f} ms  max {max(waits) * 1000:7.1f} ms")
        print(f"  targets: p99 <= 2 s when backfill yields on notice (a command or a batch); "
              f"<= {grace + 1:g} s (grace + 1 s) otherwise")
        print(f"  events: {kinds.count('preempting')} preempting, {kinds.count('preempted')} preempted by the agent; "
              f"failed runs: {failures}")
        return 0 if failures == 0 else 1
    finally:
        stop_all(procs)
        agent.send_signal(signal.SIGTERM)
        agent.wait()
        subprocess.run(["pkill", "-KILL", "-f", ": " + work], check=False)
        subprocess.run(["pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + work], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
