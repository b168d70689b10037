#!/usr/bin/env python3
"""Recovered idle: how much of a fleet's idle time a backfill batch puts to
work over a simulated week, and what it costs real requests.

Usage: bench/backfill_recovered.py BUILD [WEEK_SECONDS] [SEED]

One agent on 8 simulated GPUs ([backfill] idle_for = one simulated hour's
worth of seconds / 2, grace 1 s, 100 ms sampling). A week is compressed into
WEEK_SECONDS (168 simulated hours): real `tarmac run --gpus 1-4 -- sleep`
jobs arrive at random, busy on weekday working hours (9 to 18), sparse at
night and at the weekend, lasting half an hour to four hours. The same
arrivals (same seed) run twice, one after the other:

1. baseline: no backfill;
2. a backfill batch (`tarmac backfill submit --gpus 8`, a tarmac-simengine
   started in each lease) that never runs out of work.

The occupancy of every GPU (a real lease, a backfill lease, or none) is read
20 times a second. Recovered = backfill-held time inside idle stretches,
over the idle time beyond `idle_for` (an idle stretch of length L offers
L - idle_for). Real requests: the wait from `tarmac run` to its command
starting, in both runs. Targets (issue: backfill): recovered at least 80 %;
no real request waiting longer than the yield figure (2 s).
"""
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_api import call, start_agent, submit_batch  # noqa: E402

GPUS = 8


def arrivals(seed, hour_s):
    """(start offset s, gpus, duration s) for one simulated week."""
    rng = random.Random(seed)
    jobs = []
    for hour in range(168):
        day, hod = divmod(hour, 24)
        working = day < 5 and 9 <= hod < 18
        rate = 2.5 if working else (0.15 if day < 5 else 0.3)
        for _ in range(sum(1 for _ in range(40) if rng.random() < rate / 40)):
            jobs.append(((hour + rng.random()) * hour_s, rng.choice([1, 1, 2, 4]), rng.uniform(0.5, 4) * hour_s))
    return sorted(jobs)


def run_week(build, work, env, sock, jobs, week_s, with_batch):
    tarmac = os.path.join(build, "bin", "tarmac")
    if with_batch:  # Never runs out of work.
        submit_batch(build, env, work, 2000000, GPUS, 2, 20)
    samples = []  # (t, [state per GPU]): "real", "backfill" or None
    waits = {}  # Job index: seconds from `tarmac run` to its command starting.
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            state = [None] * GPUS
            for lease in call(sock, "leases")["result"]["leases"]:
                for g in lease["gpus"]:
                    state[g] = "backfill" if lease["priority"] == "backfill" else "real"
            samples.append((time.perf_counter(), state))
            time.sleep(0.05)

    def job(i, gpus, seconds):
        mark = os.path.join(work, f"started-{with_batch}-{i}")
        launched = time.time()
        subprocess.run([tarmac, "run", "--gpus", str(gpus), "--", "sh", "-c", f"touch {mark}; sleep {seconds:.2f}"],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if os.path.exists(mark):
            waits[i] = os.stat(mark).st_mtime - launched

    watcher = threading.Thread(target=watch)
    watcher.start()
    start = time.perf_counter()
    threads = []
    for i, (at, gpus, seconds) in enumerate(jobs):
        delay = start + at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=job, args=(i, gpus, seconds))
        t.start()
        threads.append(t)
    time.sleep(max(0.0, start + week_s - time.perf_counter()))
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    if with_batch:
        call(sock, "backfill.cancel", {"id": 1})
    return samples, waits


def recovered(samples, idle_for):
    """(backfill seconds inside idle stretches, idle seconds beyond idle_for)."""
    used = offered = 0.0
    for g in range(GPUS):
        run_start = None
        run_backfill = 0.0
        for (t, state), (t_next, _) in zip(samples, samples[1:]):
            dt = t_next - t
            if state[g] == "real":
                if run_start is not None:
                    offered += max(0.0, t - run_start - idle_for)
                    used += run_backfill
                run_start = None
                run_backfill = 0.0
            else:
                if run_start is None:
                    run_start = t
                if state[g] == "backfill":
                    run_backfill += dt
        if run_start is not None:
            offered += max(0.0, samples[-1][0] - run_start - idle_for)
            used += run_backfill
    return used, offered


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else 0.0


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    week_s = float(sys.argv[2]) if len(sys.argv) > 2 else 112.0
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    hour_s = week_s / 168
    idle_for = hour_s / 2
    jobs = arrivals(seed, hour_s)
    work = tempfile.mkdtemp(prefix="tarmac-bench-recovered-")
    agent, env, sock = start_agent(build, work, f"[store]\nenabled = false\n[sampler]\nfast_interval = \"100ms\"\n"
                                   f"[backfill]\nidle_for = \"{int(idle_for * 1000)}ms\"\ngrace = \"1s\"\n"
                                   f"[leases]\nkill_grace = \"1s\"\n")
    try:
        base_samples, base_waits = run_week(build, work, env, sock, jobs, week_s, False)
        samples, waits = run_week(build, work, env, sock, jobs, week_s, True)
        real_busy = sum(1 for _, s in samples for x in s if x == "real") / (len(samples) * GPUS)
        used, offered = recovered(samples, idle_for)
        base_used, base_offered = recovered(base_samples, idle_for)
        print(f"a simulated week in {week_s:g} s ({hour_s:.2f} s an hour; idle_for {idle_for * 1000:.0f} ms, "
              f"half an hour), {len(jobs)} real jobs on {GPUS} GPUs, real work on {100 * real_busy:.0f} % of GPU time:")
        print(f"  no backfill (baseline)  idle beyond idle_for {base_offered:7.1f} GPU-s, put to work "
              f"{base_used:6.1f} GPU-s ({100 * base_used / max(base_offered, 1e-9):5.1f} %)")
        print(f"  a backfill batch        idle beyond idle_for {offered:7.1f} GPU-s, put to work "
              f"{used:6.1f} GPU-s ({100 * used / max(offered, 1e-9):5.1f} %)")
        for name, w in [("no backfill (baseline)", list(base_waits.values())), ("a backfill batch", list(waits.values()))]:
            print(f"  real requests, {name:22s} wait p50 {statistics.median(w) * 1000:7.1f} ms  "
                  f"p99 {pct(w, 99) * 1000:7.1f} ms  max {max(w) * 1000:7.1f} ms  ({len(w)} jobs)")
        extra = [waits[i] - base_waits[i] for i in waits if i in base_waits]
        print(f"  each job's wait with backfill minus without: p50 {statistics.median(extra) * 1000:7.1f} ms  "
              f"p99 {pct(extra, 99) * 1000:7.1f} ms  max {max(extra) * 1000:7.1f} ms")
        print("  targets: at least 80 % put to work; no real request waiting more than the yield figure (2 s) "
              "longer than without backfill")
    finally:
        agent.terminate()
        agent.wait()
        subprocess.run(["pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + work], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
