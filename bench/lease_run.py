#!/usr/bin/env python3
"""Leases through a real agent: `tarmac run` latency and many concurrent clients.

Usage: lease_run.py BUILD_DIR [RUNS] [CLIENTS]

1. End-to-end wall time of `tarmac run --gpus 1 -- true` on an idle agent
   (8 simulated GPUs), RUNS times, interleaved with its floors in the same
   run: `/bin/true` (fork and exec), `tarmac --version` (the client starting
   up) and `tarmac leases` (start-up plus one API round trip). Target: median
   under 10 ms.
2. CLIENTS concurrent `tarmac run --gpus 1 -- sleep 0.05` against the 8 GPUs.
   Then the agent's event log is replayed by an invariant checker: every
   request granted exactly once and ended exactly once, and no GPU ever in
   two leases at the same time. Every client must exit 0. Printed beside
   it: the work itself (CLIENTS x 50 ms over 8 GPUs) and, measured in the
   same run, the time to start as many `tarmac --version` at once.
"""
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_api import call, start_agent  # noqa: E402


def all_events(sock_path):
    events, after = [], 0
    while True:
        page = call(sock_path, "events", {"after": after, "limit": 10000})["result"]["events"]
        events += page
        if len(page) < 10000:
            return events
        after = page[-1]["seq"]


END_KINDS = {"released", "expired", "client_gone", "idle_released", "idle_terminated"}


def check_invariants(events, gpu_count):
    """Replays the event log. Returns (problems, granted, ended)."""
    problems = []
    holder = {}  # gpu -> lease
    granted, ended, queued = {}, set(), set()
    for e in events:
        lease, kind = e["lease"], e["kind"]
        if kind == "queued":
            queued.add(lease)
        elif kind == "granted":
            if lease in granted:
                problems.append(f"lease {lease} granted twice")
            granted[lease] = e["gpus"]
            if not e["gpus"]:
                problems.append(f"lease {lease} granted no GPU")
            for g in e["gpus"]:
                if not 0 <= g < gpu_count:
                    problems.append(f"lease {lease}: no GPU {g}")
                if g in holder:
                    problems.append(f"GPU {g} granted to lease {lease} while lease {holder[g]} holds it")
                holder[g] = lease
        elif kind in END_KINDS:
            if lease not in granted:
                problems.append(f"lease {lease} ended without a grant")
            if lease in ended:
                problems.append(f"lease {lease} ended twice")
            ended.add(lease)
            for g in granted.get(lease, []):
                if holder.get(g) == lease:
                    del holder[g]
    for lease in queued:
        if lease not in granted:
            problems.append(f"request {lease} queued but never granted")
    for lease in granted:
        if lease not in ended:
            problems.append(f"lease {lease} never ended")
    return problems, granted, ended


def timed(argv, env):
    start = time.perf_counter()
    rc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return (time.perf_counter() - start) * 1000, rc


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = tempfile.mkdtemp(prefix="tarmac-bench-leases-")
    agent, env, sock = start_agent(build, work, "[store]\nenabled = false\n")
    tarmac = os.path.join(build, "bin", "tarmac")
    try:
        floors = {
            "/bin/true (fork+exec)": ["/bin/true"],
            "tarmac --version (start-up)": [tarmac, "--version"],
            "tarmac leases (1 API call)": [tarmac, "leases", "--json"],
            "tarmac run --gpus 1 -- true": [tarmac, "run", "--gpus", "1", "--", "true"],
        }
        # The comparison: srun on a local one-node Slurm cluster, when Slurm
        # is installed (scripts/install-deps --bench) and we may start it.
        slurm_dir = os.path.join(work, "slurm")
        slurm_note = "srun (Slurm) is not installed here; not compared"
        if shutil.which("srun") and shutil.which("slurmctld") and os.geteuid() == 0:
            started = subprocess.run([os.path.join(root, "bench/slurm_local.sh"), "start", slurm_dir],
                                     capture_output=True, text=True)
            if started.returncode == 0:
                env["SLURM_CONF"] = started.stdout.strip()
                floors["srun --gres=gpu:1 true (Slurm)"] = ["srun", "--gres=gpu:1", "true"]
                slurm_note = "Slurm 1-node cluster: slurmctld + slurmd + munge in " + slurm_dir
            else:
                slurm_note = "Slurm did not start: " + started.stderr.strip()[-200:]
        times = {name: [] for name in floors}
        failures = 0
        for _ in range(runs):
            for name, argv in floors.items():
                ms, rc = timed(argv, env)
                times[name].append(ms)
                failures += rc != 0
        print(f"end to end, {runs} runs each, interleaved (wall ms):")
        for name, t in times.items():
            t.sort()
            print(f"  {name:32s} median {statistics.median(t):6.2f}  p90 {t[int(len(t) * 0.9)]:6.2f}")
        print(f"  failed runs: {failures}")
        print(f"  {slurm_note}")
        subprocess.run([os.path.join(root, "bench/slurm_local.sh"), "stop", slurm_dir], capture_output=True)

        # The floor for the many-clients run on this machine: the same number
        # of client processes started at once and waited for, doing no work.
        start = time.perf_counter()
        floor = [subprocess.Popen([tarmac, "--version"], env=env, stdout=subprocess.DEVNULL)
                 for _ in range(clients)]
        for p in floor:
            p.wait()
        spawn_floor = time.perf_counter() - start

        first_seq = all_events(sock)[-1]["seq"] if all_events(sock) else 0
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        procs = [subprocess.Popen([tarmac, "run", "--gpus", "1", "--", "sleep", "0.05"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(clients)]
        codes = [p.wait() for p in procs]
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        bad = [c for c in codes if c != 0]
        errors = [p.stderr.read().decode(errors="replace") for p in procs if p.returncode != 0][:3]
        events = [e for e in all_events(sock) if e["seq"] > first_seq]
        problems, granted, ended = check_invariants(events, 8)
        work_seconds = clients * 0.05 / 8
        print(f"\n{clients} concurrent clients against 8 GPUs: {wall:.1f} s wall, "
              f"{len(granted)} leases granted, {len(ended)} ended, {len(bad)} clients failed")
        print(f"  the work itself: {work_seconds:.2f} s ({wall / work_seconds:.1f}x); starting {clients} "
              f"`tarmac --version` at once and waiting: {spawn_floor:.1f} s")
        print(f"  CPU of the clients and their jobs: {client_cpu:.1f} s ({client_cpu / clients * 1000:.1f} ms each)")
        for e in errors:
            print("  client error:", e.strip()[:200])
        print(f"  invariant check over {len(events)} events: " + ("OK" if not problems and len(granted) == clients
                                                                  else f"{len(problems)} problems"))
        for p in problems[:10]:
            print("   ", p)
        leases = call(sock, "leases")["result"]["leases"]
        queue = call(sock, "queue")["result"]["queue"]
        print(f"  afterwards: {len(leases)} leases, {len(queue)} queued")
        ok = not problems and len(granted) == clients and not bad and not leases and not queue
        return 0 if ok else 1
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
