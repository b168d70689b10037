#!/usr/bin/env python3
"""/metrics under load: 8 GPUs and 200 GPU processes, 50 concurrent scrapers.

Usage: metrics_scrape.py BUILD_DIR SECONDS [mig]
Starts 200 tarmac-simload processes on the simulated 8-GPU lab (with `mig`:
on the 56 MIG instances of mig-8gpu.toml, 8 GPUs x 7) and an agent
over the fake NVML (1 s ticks), then runs 50 threads scraping /metrics in a
loop for SECONDS. Reports the agent's server time per answer
(tarmac_scrape_duration_seconds: the handler's time, the once-per-tick
render by the first scrape after a sample included), the time each answer
took as the clients saw it (an upper bound: it includes Python's own
overhead with 50 threads on few cores), what gzip adds for a client that
asks for it (zlib level 6 on one answer, as the server compresses each),
the tick lateness p99 meanwhile, and, as the floor a non-snapshot exporter
pays per scrape, how long the agent's NVML read of the same data takes
(tarmac_sample_duration_seconds).
"""
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_api  # noqa: E402

build, seconds = sys.argv[1], float(sys.argv[2])
is_mig = len(sys.argv) > 3 and sys.argv[3] == "mig"
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
work = tempfile.mkdtemp(prefix="tarmac-metrics-bench-")
scenario = "mig-8gpu.toml" if is_mig else "lab-8gpu.toml"
env = dict(os.environ, TARMAC_SIM_SCENARIO=f"{root}/examples/scenarios/{scenario}", TARMAC_SIM_DIR=work)
devices = [str(i) for i in range(8)]
if is_mig:  # The MIG UUIDs, as tarmac reads them.
    status = json.loads(subprocess.run([f"{build}/bin/tarmac", "status", "--json", "--no-agent", "--backend", "sim"],
                                       env=env, capture_output=True, text=True, check=True).stdout)
    devices = [m["uuid"] for g in status["gpus"] for m in g.get("mig_instances", [])]
loads = [subprocess.Popen([f"{build}/bin/tarmac-simload", "--memory", "256MiB", "--util", "5"],
                          env=dict(env, CUDA_VISIBLE_DEVICES=devices[i % len(devices)]), stderr=subprocess.DEVNULL)
         for i in range(200)]
time.sleep(3)
log = open(f"{work}/agent.log", "w")
agent = subprocess.Popen([f"{build}/bin/tarmacd", "--backend", "nvml", "--nvml-library",
                          f"{build}/fakenvml/libnvidia-ml.so.1", "--socket", f"{work}/t.sock", "--state-dir",
                          f"{work}/state", "--http-listen", "127.0.0.1:0"], env=env, stderr=log)
port = agent_api.http_port(f"{work}/agent.log")
time.sleep(2)


def hello():
    return agent_api.call(f"{work}/t.sock", "hello")["result"]["sampler"]


def scrape():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    c.close()
    return body


first = scrape()
processes = len(re.findall(r"^tarmac_process_gpu_memory_bytes\{", first, re.M))
latencies, renders, samples = [], [], []
stop = threading.Event()


def scraper():
    while not stop.is_set():
        start = time.perf_counter()
        body = scrape()
        latencies.append((time.perf_counter() - start) * 1000)
        m = re.search(r"^tarmac_scrape_duration_seconds\{[^}]*\} (\S+)", body, re.M)
        if m:
            renders.append(float(m.group(1)) * 1000)
        m = re.search(r"^tarmac_sample_duration_seconds\{[^}]*\} (\S+)", body, re.M)
        if m:
            samples.append(float(m.group(1)) * 1000)


threads = [threading.Thread(target=scraper) for _ in range(50)]
for t in threads:
    t.start()
time.sleep(seconds)
stop.set()
for t in threads:
    t.join()
sampler = hello()
agent.terminate()
agent.wait()
for p in loads:
    p.kill()


def quantile(values, q):
    return sorted(values)[min(len(values) - 1, int(len(values) * q))]


def p99(values):
    return quantile(values, 0.99)


gzip_ms = []
for _ in range(20):
    start = time.perf_counter()
    zlib.compress(first.encode(), 6)
    gzip_ms.append((time.perf_counter() - start) * 1000)


print(f"metrics: {processes} process series, {len(first)} bytes per answer, {len(latencies)} scrapes in {seconds:.0f} s "
      f"by 50 clients")
print(f"  server time per answer       p50 {statistics.median(renders):6.2f} ms   p99 {p99(renders):6.2f} ms   "
      f"p99.9 {quantile(renders, 0.999):6.2f} ms   max {max(renders):6.2f} ms")
print(f"  answer time seen by clients  p50 {statistics.median(latencies):6.2f} ms   p99 {p99(latencies):6.2f} ms")
print(f"  gzip of one answer           p50 {statistics.median(gzip_ms):6.2f} ms  (added per scrape that asks for gzip)")
print(f"  NVML read of the same data   p50 {statistics.median(samples):6.2f} ms  (paid per scrape by a non-snapshot exporter)")
print(f"  tick lateness meanwhile      p99 {sampler['p99_lateness_seconds'] * 1000:6.2f} ms   "
      f"worst {sampler['max_lateness_seconds'] * 1000:6.2f} ms")
subprocess.run(["rm", "-rf", work])
