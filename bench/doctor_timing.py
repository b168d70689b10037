#!/usr/bin/env python3
"""How long `tarmac doctor` takes, beside `tarmac status --json` (the cheapest
read of the same GPUs) in the same run: through the agent (8 simulated GPUs
over the fake libnvidia-ml) with --quick and in full, and without the agent
(NVML read directly) with --quick, and a full run with the storage test
(256 MiB in a temporary folder) and the network test (3 s against a local
iperf3 server). Targets: --quick at most 1 s through the agent, at most 3 s
without; a full run with both tests at most 30 s.

Usage: bench/doctor_timing.py BUILD_DIR [RUNS]"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_api  # noqa: E402


def wall(argv, env):
    start = time.monotonic()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.monotonic() - start
    if r.returncode not in (0, 4, 5):  # The doctor's verdicts are 0, 4 and 5.
        sys.exit(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.decode()}")
    return elapsed


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    tarmac = os.path.join(build, "bin", "tarmac")
    fake = os.path.join(build, "fakenvml/libnvidia-ml.so.1")
    with tempfile.TemporaryDirectory(prefix="tarmac-bench-doctor-") as work:
        agent, env, sock = agent_api.start_agent(build, work, '[sampler]\nfast_interval = "1s"\n')
        data = os.path.join(work, "data")
        os.mkdir(data)
        port = str(20000 + os.getpid() % 20000)
        iperf = subprocess.Popen(["iperf3", "-s", "-p", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            cases = [
                ("tarmac status --json (agent)", [tarmac, "status", "--json", "--socket", sock]),
                ("doctor --quick (agent)", [tarmac, "doctor", "--quick", "--json", "--socket", sock]),
                ("doctor --quick (no agent)", [tarmac, "doctor", "--quick", "--json", "--no-agent", "--backend", "nvml",
                                               "--nvml-library", fake]),
                ("doctor, full (agent)", [tarmac, "doctor", "--json", "--socket", sock]),
                ("doctor, full + storage + network", [tarmac, "doctor", "--json", "--socket", sock, "--storage", data,
                                                      "--network", "127.0.0.1:" + port]),
            ]
            times = {name: [] for name, _ in cases}
            for _ in range(runs):
                for name, argv in cases:  # Interleaved: noise hits each alike.
                    times[name].append(wall(argv, env))
        finally:
            iperf.terminate()
            iperf.wait()
            agent.terminate()
            agent.wait()
    base = statistics.median(times[cases[0][0]])
    for name, _ in cases:
        t = times[name]
        print(f"{name:<32} median {statistics.median(t) * 1000:8.1f} ms  max {max(t) * 1000:8.1f} ms"
              f"  (status: {base * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
