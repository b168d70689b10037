#!/usr/bin/env python3
"""Runs commands side by side and reports CPU time and peak RSS per run.

Usage: cpu_time.py RUNS NAME=COMMAND [NAME=COMMAND ...]
Each command runs RUNS times, interleaved with the others so that machine
noise hits all of them alike. CPU time is user + system of the child, peak RSS its ru_maxrss, both from
bench/rusage_run.c. Prints one line per command and the ratio of each to
the first (the baseline); when a second command's name starts with
"baseline" too, each later command's ratio to that one as well.
"""
import os
import shlex
import statistics
import subprocess
import sys


LAUNCHER = os.environ.get("RUSAGE_RUN", "rusage_run")


def run_once(argv):
    # The small C launcher measures the child: Linux keeps a process's peak
    # RSS across exec, so a child of this Python process would look as big
    # as Python.
    out = subprocess.run([LAUNCHER] + argv, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} exited {out.returncode}")
    user, system, maxrss = out.stdout.split()
    return float(user) + float(system), int(maxrss)


def main():
    runs = int(sys.argv[1])
    commands = [arg.split("=", 1) for arg in sys.argv[2:]]
    cpu = {name: [] for name, _ in commands}
    rss = {name: [] for name, _ in commands}
    for name, command in commands:  # Warm-up: page cache, dynamic loader.
        run_once(shlex.split(command))
    for _ in range(runs):
        for name, command in commands:
            seconds, kib = run_once(shlex.split(command))
            cpu[name].append(seconds)
            rss[name].append(kib)
    base = statistics.median(cpu[commands[0][0]])
    second = None
    if len(commands) > 1 and commands[1][0].startswith("baseline"):
        second = statistics.median(cpu[commands[1][0]])
    for index, (name, _) in enumerate(commands):
        median = statistics.median(cpu[name])
        also = f"  x{median / second:4.2f} of the second" if second and index > 1 else ""
        print(f"{name:<28} cpu median {median * 1000:7.2f} ms  (min {min(cpu[name]) * 1000:6.2f}, "
              f"max {max(cpu[name]) * 1000:6.2f})  x{median / base:4.2f} of baseline{also}  "
              f"peak RSS {max(rss[name]) / 1024:5.1f} MiB")


if __name__ == "__main__":
    main()
