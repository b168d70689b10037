#!/usr/bin/env python3
"""/health and /metrics under a slow-client attack, against the same probes alone.

Usage: http_slow_clients.py BUILD_DIR [SLOW_CLIENTS] [PROBES]

SLOW_CLIENTS (default 500) loopback clients each send part of a request head,
then a header line every 0.5 s, and reconnect the moment they are cut off (the
head deadline, the per-address budget). Meanwhile one prober asks for /health
and /metrics PROBES times each (default 100), each on a new connection, as a
kubelet liveness probe and a Prometheus scrape do. Baseline: the same probes
with no attack, in the same run. Targets (issue: security and authority):
/health p99 under 100 ms and /metrics p99 under 1 s under the attack.
"""
import http.client
import socket
import sys
import tempfile
import threading
import time

import agent_api

build = sys.argv[1]
slow_clients = int(sys.argv[2]) if len(sys.argv) > 2 else 500
probes = int(sys.argv[3]) if len(sys.argv) > 3 else 100
work = tempfile.mkdtemp(prefix="tarmac-http-slow-")
agent, _, _ = agent_api.start_agent(build, work, "", http_listen="127.0.0.1:0")
port = agent_api.http_port(f"{work}/agent.log")
time.sleep(1.5)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def probe(path):
    began = time.perf_counter()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        c.close()
        ok = r.status == 200
    except OSError:
        ok = False
    return (time.perf_counter() - began) * 1000, ok


def run_probes():
    health, metrics, failed = [], [], 0
    for _ in range(probes):
        for path, out in (("/health", health), ("/metrics", metrics)):
            ms, ok = probe(path)
            out.append(ms)
            failed += 0 if ok else 1
        time.sleep(0.02)
    return health, metrics, failed


stop = threading.Event()
reconnects = [0]
lock = threading.Lock()


def attacker():
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            i = 0
            while not stop.is_set():
                time.sleep(0.5)
                s.sendall(b"X-Slow-%d: 1\r\n" % i)
                i += 1
        except OSError:
            with lock:
                reconnects[0] += 1  # Cut off: straight back.


try:
    print(f"-- {probes} probes each of /health and /metrics, alone")
    h0, m0, f0 = run_probes()
    print(f"alone:        /health p50 {pct(h0, .5):.1f} ms p99 {pct(h0, .99):.1f} ms; "
          f"/metrics p50 {pct(m0, .5):.1f} ms p99 {pct(m0, .99):.1f} ms; {f0} failed")
    threads = [threading.Thread(target=attacker, daemon=True) for _ in range(slow_clients)]
    for t in threads:
        t.start()
    time.sleep(2)
    print(f"-- the same beside {slow_clients} slow clients that reconnect when cut off")
    h1, m1, f1 = run_probes()
    stop.set()
    print(f"under attack: /health p50 {pct(h1, .5):.1f} ms p99 {pct(h1, .99):.1f} ms (target < 100 ms); "
          f"/metrics p50 {pct(m1, .5):.1f} ms p99 {pct(m1, .99):.1f} ms (target < 1000 ms); {f1} failed; "
          f"{reconnects[0]} attacker reconnects")
finally:
    stop.set()
    agent.terminate()
    agent.wait()
