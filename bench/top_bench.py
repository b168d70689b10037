#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`tarmac top`'s figures, in tmux, through an agent on the simulated
lab-8gpu with 64 GPU processes (8 per GPU):

- CPU of `tarmac top` (the tarmac-top process, from /proc) at its 1 s
  refresh over SECONDS, 200x50, beside `tarmac status --watch 1` in the same
  size of terminal over the same span (the baseline: the same data each
  second, redrawn as a table);
- key-to-screen latency: a key sent with `tmux send-keys` until
  `tmux capture-pane` shows its effect (the sort column's mark), RUNS times;
  tmux's own round trip is in it (measured alone: a key to a `cat`);
- start-to-first-screen: from `tmux new-session` to a screen showing every
  GPU and a process, RUNS times, beside the same for `tarmac status`.

Usage: top_bench.py BUILD_DIR [SECONDS] [RUNS]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
from e2e_util import cpu_seconds, stop_all, wait_until  # noqa: E402

build = os.path.abspath(sys.argv[1])
seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bin_dir = os.path.join(build, "bin")
work = tempfile.mkdtemp(prefix="tarmac-top-bench-")
sock = os.path.join(work, "t.sock")
env = dict(os.environ, TARMAC_SIM_SCENARIO=os.path.join(source, "examples/scenarios/lab-8gpu.toml"),
           TARMAC_SIM_DIR=os.path.join(work, "world"), TARMAC_NVML_LIBRARY=os.path.join(build, "fakenvml/libnvidia-ml.so.1"),
           TMUX_TMPDIR=work, LANG="C.UTF-8", LC_ALL="C.UTF-8", TERM="xterm-256color",
           PATH=bin_dir + ":" + os.environ.get("PATH", ""))
children = []


def tmux(*args):
    return subprocess.run(["tmux", *args], env=env, capture_output=True, text=True).stdout


def screen(name):
    return tmux("capture-pane", "-p", "-t", name)


def pid_of(pattern):
    out = subprocess.run(["pgrep", "-n", "-f", pattern], capture_output=True, text=True).stdout.strip()
    return int(out) if out else None


def session(name, command, width=200, height=50):
    tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), command + "; sleep 600")


def main():
    for gpu in range(8):
        for _ in range(8):
            children.append(subprocess.Popen([os.path.join(bin_dir, "tarmac-simload"), "--memory", "512MiB", "--util", "10",
                                              "--pattern", "bursty"], env=dict(env, CUDA_VISIBLE_DEVICES=str(gpu)),
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    children.append(subprocess.Popen([os.path.join(bin_dir, "tarmac"), "agent", "--socket", sock, "--state-dir",
                                      os.path.join(work, "state"), "--http-listen", "off"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    wait_until("the agent", lambda: os.path.exists(sock), name="top_bench")
    time.sleep(3)

    # CPU at a 1 s refresh, side by side with status --watch.
    session("top", f"tarmac --socket {sock} top")
    session("watch", f"tarmac --socket {sock} status --watch 1")
    wait_until("top's screen", lambda: "64" in screen("top") or "tarmac-simload" in screen("top"), name="top_bench")
    top_pid = wait_until("tarmac-top", lambda: pid_of(f"tarmac-top --socket {sock}"), name="top_bench")
    watch_pid = wait_until("status --watch", lambda: pid_of("status --watch 1"), name="top_bench")
    time.sleep(3)
    t0, c_top, c_watch = time.monotonic(), cpu_seconds(top_pid), cpu_seconds(watch_pid)
    time.sleep(seconds)
    span = time.monotonic() - t0
    top_cpu = 100 * (cpu_seconds(top_pid) - c_top) / span
    watch_cpu = 100 * (cpu_seconds(watch_pid) - c_watch) / span
    rows = sum(1 for line in screen("top").splitlines() if "tarmac-simload" in line)
    print(f"CPU over {span:.0f} s at a 1 s refresh, 200x50, 8 GPUs x 64 processes ({rows} process rows on screen):")
    print(f"  tarmac top                  {top_cpu:5.2f} % of a core")
    print(f"  tarmac status --watch 1     {watch_cpu:5.2f} % of a core (baseline)")
    tmux("kill-session", "-t", "watch")

    # Key to screen: 'r' flips the sort mark (GMEMv <-> GMEM^).
    lat = []
    for _ in range(runs):
        before = "GMEMv" if "GMEMv" in screen("top") else "GMEM^"
        after = "GMEM^" if before == "GMEMv" else "GMEMv"
        t = time.monotonic()
        tmux("send-keys", "-t", "top", "r")
        while after not in screen("top"):
            time.sleep(0.001)
        lat.append(1000 * (time.monotonic() - t))
    session("cat", "cat")
    time.sleep(0.5)
    echo = []
    for i in range(runs):
        mark = f"x{i}y"
        t = time.monotonic()
        tmux("send-keys", "-t", "cat", mark)
        while mark not in screen("cat"):
            time.sleep(0.001)
        echo.append(1000 * (time.monotonic() - t))
    print(f"key to screen ({runs} keys): median {statistics.median(lat):.1f} ms, max {max(lat):.1f} ms; "
          f"tmux alone (a key echoed by cat): median {statistics.median(echo):.1f} ms")
    tmux("kill-session", "-t", "top")

    # Start to first screen.
    def first_screen(command, ready):
        times = []
        for i in range(runs):
            name = f"s{i}"
            t = time.monotonic()
            session(name, command)
            while not ready(screen(name)):
                time.sleep(0.002)
            times.append(1000 * (time.monotonic() - t))
            tmux("kill-session", "-t", name)
        return times
    top_start = first_screen(f"tarmac --socket {sock} top",
                             lambda s: " 7 H100" in s and "tarmac-simload" in s)
    status_start = first_screen(f"tarmac --socket {sock} status", lambda s: "GPU" in s and "tarmac-simload" in s)
    print(f"start to first screen ({runs} runs, tmux's start included): tarmac top median "
          f"{statistics.median(top_start):.0f} ms (max {max(top_start):.0f}); tarmac status median "
          f"{statistics.median(status_start):.0f} ms (max {max(status_start):.0f})")


try:
    main()
finally:
    tmux("kill-server")
    stop_all(children)
    shutil.rmtree(work, ignore_errors=True)
