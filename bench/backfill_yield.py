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
   Then the same with each trial 1.5 s after the fleet filled again, so
   that a reading lists the engine started on the freed GPU (as on a fleet
   where batches run for a while).
5. hostile backfill: it ignores the notice and leaves a child that dropped
   the lease token and its session, holding 60 GiB, stopped (SIGSTOP).
   The real job lists the processes on its GPU the moment it starts.
   Targets: p99 at most grace + 1 s, and the job always finds its GPU empty.

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
# {simload} --seconds 86399 marks the children, for the clean-up.
HOSTILE = (": {work}; setsid env -u TARMAC_LEASE_TOKEN {simload} --memory 60GiB --pattern idle --seconds 86399 & "
           "c=$!; sleep 0.5; kill -STOP $c; trap '' TERM; while :; do sleep 0.05; done")


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


def trial(tarmac, env, lists=None):
    """One real request; with `lists` (a shell command printing the compute
    processes as "uuid, pid" lines), the job prints those on its own GPU."""
    start = time.perf_counter()
    job = ["true"] if lists is None else ["sh", "-c", lists + ' | grep -c "$CUDA_VISIBLE_DEVICES" || true']
    done = subprocess.run([tarmac, "run", "--gpus", "1", "--"] + job, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    seen = int(done.stdout.strip() or 0) if lists is not None else 0
    return time.perf_counter() - start, done.returncode, seen


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
        occupied = 0  # Hostile trials whose job found a process on its GPU.
        batches = 0  # Submitted so far: the last one's id.
        fake = os.path.join(build, "fakenvml", "libnvidia-ml.so.1")
        lists = (f"{tarmac} query --no-agent --backend nvml --nvml-library {fake} "
                 "--query-compute-apps=gpu_uuid,pid --format=csv,noheader")
        simload = os.path.join(build, "bin", "tarmac-simload")
        for name, script in [("idle fleet (baseline)", None), ("backfill that yields on notice", POLITE),
                             ("backfill that ignores the notice", STUBBORN),
                             ("a batch, an engine per GPU", "batch"),
                             ("a batch, its engines read", "batch read"),
                             ("hostile: detached, stopped, 60 GiB", HOSTILE)]:
            waits = []
            is_batch = script in ("batch", "batch read")
            if is_batch:
                submit_batch(build, env, work, 200000, 8, 4, 50)  # Holds all 8 GPUs through every trial.
                batches += 1
            for _ in range(trials):
                if is_batch:
                    deadline = time.time() + 60
                    while backfill_count(sock) < 8 and time.time() < deadline:
                        time.sleep(0.02)
                    if script == "batch read":
                        time.sleep(1.5)  # A reading lists the engine started on the freed GPU.
                elif script:
                    fill(tarmac, env, sock, script.format(work=work, simload=simload), procs)
                    if script == HOSTILE:
                        time.sleep(1.5)  # The children hold their memory, stopped, and the agent has read it.
                seconds, rc, seen = trial(tarmac, env, lists if script == HOSTILE else None)
                failures += rc != 0
                occupied += seen > 0
                waits.append(seconds)
            if is_batch:
                call(sock, "backfill.cancel", {"id": batches})
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
        print(f"  hostile trials whose job found a process on its GPU: {occupied} of {trials} (target 0)")
        print(f"  events: {kinds.count('preempting')} preempting, {kinds.count('preempted')} preempted by the agent, "
              f"{kinds.count('sigkill')} SIGKILLs; failed runs: {failures}")
        return 0 if failures == 0 and occupied == 0 else 1
    finally:
        stop_all(procs)
        agent.send_signal(signal.SIGTERM)
        agent.wait()
        subprocess.run(["pkill", "-KILL", "-f", ": " + work], check=False)
        subprocess.run(["pkill", "-KILL", "-f", "tarmac-simload --memory 60GiB --pattern idle --seconds 86399"],
                       check=False)
        subprocess.run(["pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + work], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
