#!/usr/bin/env python3
"""Non-working GPU time put to work over a simulated week, busy or light,
with the backfill of before (a fixed idle_for, idle leases terminated after
a timeout) beside the adaptive one (idle_for = "auto" and lending held-idle
memory), against no backfill at all.

Usage: bench/backfill_week.py BUILD [busy|light|heavy] [HOUR_SECONDS] [SEED] [RUNS]

One agent per run on 8 simulated 80 GiB GPUs (100 ms sampling, grace 1 s);
a week of 168 simulated hours is compressed to HOUR_SECONDS a simulated
hour (default 1). Arrivals are diurnal (weekday working hours busiest,
sparse nights and weekends); job lengths are heavy-tailed (log-normal,
sigma 1.1, capped at 30 hours: work a median of 1.5 hours on the busy week,
1 hour on the light one, on 1 to 4 GPUs); one job in seven (15 %) is a
forgotten reservation, `tarmac run` of a tarmac-simload holding 20 GiB of
one GPU at 0 % SM for a median of 5 hours. Real work is a tarmac-simload at
90 % SM holding 30 GiB. The busy week puts real work on ~55-60 % of GPU
time and held-idle on ~20 % (the shape of the Philly, Helios and PAI
traces), the light one ~25 % and ~5 %. The heavy week (issue: backfill on
a heavy week) asks for more, 30 % of its jobs on 2, 4 or 8 GPUs, one
forgotten reservation in six on 2 or 4, reservations a median of 3 hours:
about 65 % work, 25 % held idle, 10 % free without backfill. The same arrivals (same seed) run
once per configuration, one after another, each on a fresh agent:

1. baseline: no backfill;
2. fixed: a backfill batch that never runs out of work (a tarmac-simengine
   of 8 GiB per lease, 200 ms an answer), `[backfill] idle_for` = half a
   simulated hour, and idle leases terminated after an idle timeout of one
   simulated hour
   (whole seconds: at least 1 s) with no grace (tarmac's previous best);
3. auto-gate: the same batch, `idle_for = "auto"` (settle and min_run
   scaled like the week: 3 and 6 simulated minutes), no idle termination;
4. auto: the same, and every job run with `--lend-idle` (lend_after a
   quarter of a simulated hour).

BACKFILL_WEEK_EVENTS=FOLDER keeps each run's agent events, each job's
wait and lease id in FOLDER/RUN.json. BACKFILL_WEEK_KEEP_HOURS=H runs every
agent with `[leases] keep_for_head_after` of H simulated hours (off by
default, as in the agent).

RUNS (default "baseline,fixed,auto-gate,auto") picks some of them; a
name with "#" and a suffix runs that one again ("baseline#2": the same
week without backfill a second time, whose distance from the first is what
one run cannot tell apart, printed as the run-to-run spread).

Each GPU's state is read 20 times a second from the agent's leases: work (a
real job computing), held idle (a real lease at 0 % SM), free, backfill, or
lent (backfill beside a held-idle lease). Non-working = all but work; put to
work = backfill + lent. Real jobs: the wait from `tarmac run` to its command
starting (per job, minus the same job's wait in the baseline), wrong kills
(a computing job that did not finish by itself) and out-of-memory failures
(a job's simload failing to allocate). Targets (issue: backfill that fills
every gap): put to work >= 80 % busy, >= 95 % light; start overhead p50 <= 50
ms; zero wrong kills; zero out-of-memory in lenders.
"""
import json
import math
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
IDLE_MEMORY = "20GiB"
QUEUED_S = 0.5  # A wait this long means a job queued behind other real jobs.
# BACKFILL_WEEK_KEEP_HOURS=H: [leases] keep_for_head_after of H simulated
# hours (off by default, as in the agent).
KEEP_FOR_HEAD_HOURS = float(os.environ.get("BACKFILL_WEEK_KEEP_HOURS", "0"))
WORK_MEMORY = "30GiB"


# Each week's shape: arrivals scale, the median hours of work and of a
# forgotten reservation, the GPUs a job asks for (drawn uniformly from the
# list) and those of a forgotten reservation.
WEEKS = {
    "busy": (1.2, 1.5, 5.0, [1, 1, 1, 2, 2, 4], [1]),
    "light": (0.35, 1.0, 5.0, [1, 1, 1, 2, 2, 4], [1]),
    # The public traces' multi-GPU share: 30 % of jobs on 2, 4 or 8 GPUs,
    # holding 55 to 70 % of the work's GPU time; one forgotten reservation
    # in six holds 2 or 4 GPUs.
    "heavy": (1.42, 1.5, 3.0, [1] * 14 + [2] * 3 + [4] * 2 + [8], [1] * 10 + [2, 4]),
}


def arrivals(seed, hour_s, week):
    """[(start s, gpus, duration s, is_idle)] for one simulated week."""
    rng = random.Random(seed)
    scale, work_hours, idle_hours, work_gpus, idle_gpus = WEEKS[week]
    jobs = []
    for hour in range(168):
        day, hod = divmod(hour, 24)
        working = day < 5 and 9 <= hod < 18
        rate = scale * (2.2 if working else (0.9 if day < 5 else 0.7))
        for _ in range(sum(1 for _ in range(40) if rng.random() < rate / 40)):
            is_idle = rng.random() < 0.15
            # Forgotten reservations sit for hours; work is heavy-tailed.
            hours = min(30.0, rng.lognormvariate(math.log(idle_hours if is_idle else work_hours), 1.1))
            gpus = rng.choice(idle_gpus if is_idle else work_gpus)
            jobs.append(((hour + rng.random()) * hour_s, gpus, max(0.05, hours) * hour_s, is_idle))
    return sorted(jobs)


def offered(jobs, week_s):
    """The shares of the week's GPU time the jobs ask for: (work, held idle,
    multi-GPU work's share of the work)."""
    work = sum(g * d for _, g, d, idle in jobs if not idle)
    multi = sum(g * d for _, g, d, idle in jobs if not idle and g > 1)
    idle = sum(g * d for _, g, d, is_idle in jobs if is_idle)
    whole = GPUS * week_s
    return work / whole, idle / whole, multi / max(work, 1e-9)


def classify(lease):
    """What a lease's GPUs are doing: "backfill", "idle" (a held-idle job) or "work"."""
    if lease["priority"] == "backfill":
        return "backfill"
    return "idle" if "--pattern idle" in lease.get("command", "") else "work"


def run_week(build, work, jobs, week_s, hour_s, mode, events=None):
    """Runs one week on a fresh agent; returns (samples, waits, outcomes).
    With `events` (a list), the agent's lease events are appended to it."""
    here = os.path.join(work, mode.replace("#", "-"))
    os.makedirs(here)
    mode = mode.split("#")[0]
    config = "[store]\nenabled = false\n[sampler]\nfast_interval = \"100ms\"\n[leases]\nkill_grace = \"1s\"\n"
    if KEEP_FOR_HEAD_HOURS:
        config += f"keep_for_head_after = \"{int(KEEP_FOR_HEAD_HOURS * hour_s * 1000)}ms\"\n"
    if mode == "fixed":
        config += (f"idle_timeout = \"{max(1, round(hour_s))}s\"\nidle_grace = \"0s\"\nidle_policy = \"terminate\"\n"
                   f"[backfill]\nidle_for = \"{int(hour_s * 500)}ms\"\ngrace = \"1s\"\n")
    elif mode.startswith("auto"):
        # settle and min_run scaled as the week is: 3 and 6 simulated minutes.
        config += (f"[backfill]\nidle_for = \"auto\"\nsettle = \"{int(hour_s * 50)}ms\"\n"
                   f"min_run = \"{int(hour_s * 100)}ms\"\ngrace = \"1s\"\n")
        if mode == "auto":
            config += f"lend_after = \"{int(hour_s * 250)}ms\"\n"
    agent, env, sock = start_agent(build, here, config)
    tarmac = os.path.join(build, "bin", "tarmac")
    simload = os.path.join(build, "bin", "tarmac-simload")
    samples = []  # (t, [state per GPU])
    waits = {}
    outcomes = {}  # Job index: "ok", "killed" or "oom".
    stop = threading.Event()
    try:
        if mode != "baseline":
            # 200 ms an answer: a real engine's pace, not a CPU hog beside the jobs.
            submit_batch(build, env, here, 2000000, GPUS, 2, 200)

        def watch():
            while not stop.is_set():
                held = [set() for _ in range(GPUS)]
                for lease in call(sock, "leases")["result"]["leases"]:
                    for g in lease["gpus"]:
                        held[g].add(classify(lease))
                state = []
                for h in held:
                    if "work" in h:
                        state.append("work")
                    elif "idle" in h:
                        state.append("lent" if "backfill" in h else "idle")
                    else:
                        state.append("backfill" if "backfill" in h else "free")
                samples.append((time.perf_counter(), state))
                time.sleep(0.05)

        def job(i, gpus, seconds, is_idle):
            mark = os.path.join(here, f"started-{i}")
            load = (f"{simload} --pattern idle --memory {IDLE_MEMORY}" if is_idle
                    else f"{simload} --util 90 --memory {WORK_MEMORY}")
            argv = [tarmac, "run", "--gpus", str(gpus)]
            if mode == "auto":
                argv.append("--lend-idle")
            # The start mark holds the job's lease id (what its events name).
            argv += ["--", "sh", "-c", f"echo $TARMAC_LEASE_ID > {mark}; exec {load} --seconds {seconds:.2f}"]
            launched = time.time()
            r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            ended = time.time()
            if not os.path.exists(mark):
                outcomes[i] = "killed"
                return
            started = os.stat(mark).st_mtime
            waits[i] = started - launched
            # A job that ended well before its time did not end by itself
            # (a simload stops cleanly on SIGTERM: its exit status is 0).
            if "out of memory" in r.stderr:
                outcomes[i] = "oom"
            else:
                outcomes[i] = "ok" if ended - started >= seconds - 0.25 and r.returncode == 0 else "killed"

        watcher = threading.Thread(target=watch)
        watcher.start()
        start = time.perf_counter()
        threads = []
        for i, (at, gpus, seconds, is_idle) in enumerate(jobs):
            delay = start + at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            t = threading.Thread(target=job, args=(i, gpus, seconds, is_idle))
            t.start()
            threads.append(t)
        time.sleep(max(0.0, start + week_s - time.perf_counter()))
        stop.set()
        watcher.join()
        for t in threads:
            t.join()
        return samples, waits, outcomes
    finally:
        stop.set()
        if events is not None:
            events.extend(call(sock, "events", {"limit": 100000})["result"]["events"])
        agent.terminate()
        agent.wait()
        # The runner stops its engines on SIGTERM (killed outright, they
        # would outlive it); then whatever is left of it.
        runner = "tarmac-backfill-runner --dir " + here
        subprocess.run(["pkill", "-TERM", "-f", runner], check=False)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and subprocess.run(["pgrep", "-f", runner],
                                                             stdout=subprocess.DEVNULL).returncode == 0:
            time.sleep(0.1)
        subprocess.run(["pkill", "-KILL", "-f", runner], check=False)


def save_events(folder, work, mode, jobs, waits, events):
    """BACKFILL_WEEK_EVENTS=FOLDER: the run's agent events, each job's wait,
    its lease id (from its start mark) and the seconds of work of each
    computing job, as FOLDER/MODE.json (bench/backfill_wait_split.py reads
    them)."""
    here = os.path.join(work, mode.replace("#", "-"))
    ids = {}
    for i in range(len(jobs)):
        mark = os.path.join(here, f"started-{i}")
        if os.path.exists(mark):
            ids[i] = int(open(mark).read().strip() or 0)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, mode + ".json"), "w") as f:
        json.dump({"waits": waits, "lease_ids": ids, "events": events,
                   "work_seconds": {i: j[2] for i, j in enumerate(jobs) if not j[3]}}, f)


def shares(samples):
    """GPU-time share of each state."""
    totals = {}
    for (t, state), (t_next, _) in zip(samples, samples[1:]):
        for s in state:
            totals[s] = totals.get(s, 0.0) + (t_next - t)
    whole = sum(totals.values()) or 1e-9
    return {k: v / whole for k, v in totals.items()}


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else 0.0


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    week = sys.argv[2] if len(sys.argv) > 2 else "busy"
    hour_s = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 7
    runs = (sys.argv[5] if len(sys.argv) > 5 else "baseline,fixed,auto-gate,auto").split(",")
    jobs = arrivals(seed, hour_s, week)
    week_s = 168 * hour_s
    work = tempfile.mkdtemp(prefix="tarmac-bench-week-")
    results = {}
    try:
        for mode in runs:
            events = [] if os.environ.get("BACKFILL_WEEK_EVENTS") else None
            results[mode] = run_week(build, work, jobs, week_s, hour_s, mode, events)
            if events is not None:
                save_events(os.environ["BACKFILL_WEEK_EVENTS"], work, mode, jobs, results[mode][1], events)
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "tarmac-simload --pattern idle --memory " + IDLE_MEMORY], check=False)
        shutil.rmtree(work, ignore_errors=True)
    idle_jobs = sum(1 for j in jobs if j[3])
    print(f"a {week} simulated week in {week_s:g} s ({hour_s:g} s an hour), {len(jobs)} real jobs on {GPUS} GPUs "
          f"({idle_jobs} forgotten reservations holding {IDLE_MEMORY} at 0 % SM):")
    base_waits = results["baseline"][1] if "baseline" in results else {}
    for mode, (samples, waits, outcomes) in results.items():
        s = shares(samples)
        non_working = 1 - s.get("work", 0)
        put = s.get("backfill", 0) + s.get("lent", 0)
        print(f"  {mode:9s} work {100 * s.get('work', 0):5.1f} %  held idle {100 * s.get('idle', 0):5.1f} %  "
              f"free idle {100 * s.get('free', 0):5.1f} %  backfill {100 * s.get('backfill', 0):5.1f} %  "
              f"lent {100 * s.get('lent', 0):5.1f} %  -> non-working time put to work "
              f"{100 * put / max(non_working, 1e-9):5.1f} %")
        extra = [waits[i] - base_waits[i] for i in waits if i in base_waits]
        # Jobs that queued behind no other real job in either run (waited
        # under QUEUED_S): what backfill's yield costs a start, apart from
        # the queueing that differs between runs.
        at_once = [waits[i] - base_waits[i] for i in waits
                   if i in base_waits and waits[i] < QUEUED_S and base_waits[i] < QUEUED_S]
        w = list(waits.values())
        killed = sum(1 for i, o in outcomes.items() if o == "killed" and not jobs[i][3])
        idle_ended = sum(1 for i, o in outcomes.items() if o == "killed" and jobs[i][3])
        oom = sum(1 for o in outcomes.values() if o == "oom")
        print(f"            real-job wait p50 {statistics.median(w) * 1000:6.1f} ms  p99 {pct(w, 99) * 1000:7.1f} ms; "
              f"minus baseline p50 {statistics.median(extra) * 1000 if extra else 0:6.1f} ms  "
              f"p99 {pct(extra, 99) * 1000:7.1f} ms; wrong kills {killed}; idle jobs ended by policy {idle_ended}; "
              f"out of memory {oom}")
        base = list(base_waits.values())
        if mode.startswith("baseline#") and base and w:
            b50, b99 = statistics.median(base), pct(base, 99)
            print(f"            run-to-run spread without backfill: p50 {statistics.median(w):.3f} s against "
                  f"{b50:.3f} s ({100 * (statistics.median(w) - b50) / max(b50, 1e-9):+.1f} %), p99 "
                  f"{pct(w, 99):.3f} s against {b99:.3f} s ({100 * (pct(w, 99) - b99) / max(b99, 1e-9):+.1f} %)")
        elif mode != "baseline" and base and w:
            # The queue's wait as a whole against the same week without backfill.
            b50, b99 = statistics.median(base), pct(base, 99)
            print(f"            real-job wait against no backfill: p50 {statistics.median(w):.3f} s against {b50:.3f} s "
                  f"({100 * (statistics.median(w) - b50) / max(b50, 1e-9):+.1f} %), p99 {pct(w, 99):.3f} s against "
                  f"{b99:.3f} s ({100 * (pct(w, 99) - b99) / max(b99, 1e-9):+.1f} %)")
        if not mode.startswith("baseline") and at_once:
            print(f"            start overhead, {len(at_once)} jobs that queued in neither run: p50 "
                  f"{statistics.median(at_once) * 1000:6.1f} ms  p99 {pct(at_once, 99) * 1000:7.1f} ms")
    print("  targets: put to work >= 80 % (busy) / >= 95 % (light); start overhead p50 <= 50 ms over the baseline; "
          "zero wrong kills; zero out-of-memory")


if __name__ == "__main__":
    main()
