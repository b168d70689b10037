#!/usr/bin/env python3
"""The agent's front doors under load, each against its baseline in the same run.

Usage: front_door.py BUILD_DIR [CLIENTS] [SLOW_CLIENTS]

1. CLIENTS (default 1,000) concurrent `tarmac status --json` against one agent
   (8 simulated GPUs). The clients can reach no GPU library or simulated
   world, so an answer can only come from the agent: a client that bypassed it
   would exit 3. Reports how many the agent answered, the wall time and the
   clients' latency; baseline: the same number of direct reads
   (`--no-agent` over the fake NVML), what a crowd cost before.
2. One real scraper of /health and /metrics, alone (baseline) and with
   SLOW_CLIENTS (default 64) clients trickling a header line every 0.5 s.
   Target: the slow clients delay the real scraper by at most 100 ms.
3. 200 scrapes by 50 concurrent scrapers: the slowest answer (a listen
   backlog of 5 once stalled 9 of 200 for a second).
"""
import http.client
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import agent_api

build = sys.argv[1]
clients = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
slow_clients = int(sys.argv[3]) if len(sys.argv) > 3 else 64
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
work = tempfile.mkdtemp(prefix="tarmac-front-door-")
sim = dict(os.environ, TARMAC_SIM_SCENARIO=f"{root}/examples/scenarios/lab-8gpu.toml", TARMAC_SIM_DIR=work)
bare = {k: v for k, v in os.environ.items() if not k.startswith("TARMAC_")}
fake = f"{build}/fakenvml/libnvidia-ml.so.1"
sock = f"{work}/t.sock"
log = open(f"{work}/agent.log", "w")
agent = subprocess.Popen([f"{build}/bin/tarmacd", "--backend", "nvml", "--nvml-library", fake, "--socket", sock,
                          "--state-dir", f"{work}/state", "--http-listen", "127.0.0.1:0"], env=sim, stderr=log)
port = agent_api.http_port(f"{work}/agent.log")
while not os.path.exists(sock):
    time.sleep(0.05)
time.sleep(1.5)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def crowd(argv, env, n):
    """Starts n clients at once; returns (exit codes, latencies ms, wall s)."""
    start = time.perf_counter()
    procs = []
    for _ in range(n):
        procs.append((time.perf_counter(), subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                                            stderr=subprocess.DEVNULL)))
    codes, latencies = [], []
    for began, p in procs:
        codes.append(p.wait())
        latencies.append((time.perf_counter() - began) * 1000)
    return codes, latencies, time.perf_counter() - start


try:
    print(f"-- {clients} concurrent `tarmac status --json`")
    codes, lat, wall = crowd([f"{build}/bin/tarmac", "status", "--json", "--socket", sock], bare, clients)
    answered = codes.count(0)
    print(f"through the agent:        {answered}/{clients} answered by the agent, "
          f"{codes.count(3)} bypassed it (exit 3), {codes.count(69)} gave up (exit 69); "
          f"wall {wall:.2f} s, latency p50 {pct(lat, .5):.0f} ms p99 {pct(lat, .99):.0f} ms")
    codes, lat, wall = crowd([f"{build}/bin/tarmac", "status", "--json", "--no-agent", "--backend", "nvml",
                              "--nvml-library", fake], sim, clients)
    print(f"baseline, direct reads:   {codes.count(0)}/{clients} read NVML themselves; "
          f"wall {wall:.2f} s, latency p50 {pct(lat, .5):.0f} ms p99 {pct(lat, .99):.0f} ms")

    def scrape(path):
        began = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        c.close()
        return (time.perf_counter() - began) * 1000, r.status

    def scraper_run(n=40):
        out = []
        for i in range(n):
            out.append(scrape("/health" if i % 2 else "/metrics")[0])
            time.sleep(0.05)
        return out

    print(f"\n-- a real scraper, alone and beside {slow_clients} slow clients (a header line every 0.5 s)")
    alone = scraper_run()
    stop = threading.Event()

    def slow():
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            i = 0
            while not stop.is_set():
                s.sendall(b"X-Slow-%d: 1\r\n" % i)
                i += 1
                time.sleep(0.5)
        except OSError:
            pass  # Cut off at the head deadline.

    threads = [threading.Thread(target=slow) for _ in range(slow_clients)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    beside = scraper_run()
    stop.set()
    for t in threads:
        t.join()
    delay = statistics.median(beside) - statistics.median(alone)
    print(f"alone:                    p50 {statistics.median(alone):.1f} ms, max {max(alone):.1f} ms")
    print(f"beside the slow clients:  p50 {statistics.median(beside):.1f} ms, max {max(beside):.1f} ms "
          f"(delay at p50 {delay:+.1f} ms, at max {max(beside) - max(alone):+.1f} ms; target <= 100 ms)")

    print("\n-- 200 scrapes by 50 concurrent scrapers")
    results = []
    lock = threading.Lock()

    def burst():
        for _ in range(4):
            ms, status = scrape("/metrics")
            with lock:
                results.append((ms, status))

    threads = [threading.Thread(target=burst) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    times = [ms for ms, _ in results]
    print(f"{len(results)} answers ({sum(1 for _, s in results if s == 200)} of them 200): "
          f"p50 {statistics.median(times):.1f} ms, p99 {pct(times, .99):.1f} ms, max {max(times):.1f} ms, "
          f"{sum(1 for t in times if t >= 1000)} at 1 s or more")
finally:
    agent.terminate()
    agent.wait()
