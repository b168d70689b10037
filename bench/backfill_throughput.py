#!/usr/bin/env python3
"""Backfill throughput: a batch through tarmac against the same engine called
directly, with the same concurrency, in one session.

Usage: bench/backfill_throughput.py BUILD [REQUESTS] [CONCURRENCY] [LATENCY_MS]

One tarmac-simengine (the stand-in Ollama/OpenAI server) serves both. The
baseline is CONCURRENCY threads each keeping one HTTP connection to the
engine and posting the batch's requests (/v1/completions) until none are
left. Through tarmac, the same file is submitted (`tarmac backfill submit
--url`) to an agent on 8 simulated GPUs, and timed from submit to the batch
being done: the lease, the model check, results written and fsync()ed one
by one, and the agent noticing the end. Runs alternate, twice each.
Target (issue: backfill): tarmac at least 95 % of the direct throughput.
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_api import call, start_agent  # noqa: E402


def start_engine(build, work, env, latency_ms):
    port_file = os.path.join(work, "engine.port")
    engine_env = dict(env, CUDA_VISIBLE_DEVICES="0")
    engine = subprocess.Popen(
        [os.path.join(build, "bin", "tarmac-simengine"), "--port", "0", "--port-file", port_file,
         "--latency-ms", str(latency_ms), "--tokens", "16"],
        env=engine_env, stderr=open(os.path.join(work, "engine.log"), "w"))
    for _ in range(200):
        if os.path.exists(port_file):
            return engine, int(open(port_file).read())
        time.sleep(0.02)
    raise SystemExit("backfill_throughput: the engine did not start; see " + work + "/engine.log")


def direct(port, bodies, concurrency):
    """Seconds to post every body with `concurrency` keep-alive connections."""
    lock = threading.Lock()
    left = list(range(len(bodies)))
    failures = []

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                if not left:
                    break
                i = left.pop()
            conn.request("POST", "/v1/completions", body=bodies[i], headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            if r.status != 200 or not json.loads(data).get("choices"):
                failures.append(r.status)
        conn.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise SystemExit(f"backfill_throughput: {len(failures)} direct requests failed")
    return time.perf_counter() - start


def through_tarmac(build, env, sock, work, batch, port, concurrency, n, run):
    out = os.path.join(work, f"out-{run}.jsonl")
    start = time.perf_counter()
    r = subprocess.run([os.path.join(build, "bin", "tarmac"), "backfill", "submit", batch, "--engine", "openai",
                        "--url", f"http://127.0.0.1:{port}", "--concurrency", str(concurrency), "-o", out,
                        "--errors", os.path.join(work, f"err-{run}.jsonl"), "--json", "--socket", sock],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("backfill_throughput: submit failed: " + r.stderr)
    batch_id = json.loads(r.stdout)["id"]
    marks = {}
    while True:
        b = call(sock, "backfill.get", {"id": batch_id})["result"]["batch"]
        now = time.perf_counter() - start
        if b.get("runner_pid") and "runner" not in marks:
            marks["runner"] = now
        if b["progress"].get("done", 0) > 0 and "first" not in marks:
            marks["first"] = now
        if b["progress"].get("done", 0) == n and "last" not in marks:
            marks["last"] = now
        if b["state"] == "done":
            marks["end"] = now
            if os.environ.get("BENCH_DEBUG"):
                print(marks)
            break
        if b["state"] == "failed":
            raise SystemExit("backfill_throughput: the batch failed: " + b["message"])
        time.sleep(0.01)
    seconds = time.perf_counter() - start
    ids = [json.loads(line)["custom_id"] for line in open(out)]
    if len(ids) != n or len(set(ids)) != n:
        raise SystemExit(f"backfill_throughput: {len(ids)} results, {len(set(ids))} unique; expected {n}")
    return seconds


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    concurrency = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    latency_ms = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    work = tempfile.mkdtemp(prefix="tarmac-bench-throughput-")
    agent, env, sock = start_agent(build, work, "[sampler]\nfast_interval = \"500ms\"\n[backfill]\nidle_for = \"0s\"\n")
    engine = None
    try:
        engine, port = start_engine(build, work, env, latency_ms)
        requests = [{"custom_id": f"r{i}", "method": "POST", "url": "/v1/completions",
                     "body": {"model": "sim-model", "prompt": f"question {i}", "max_tokens": 16}} for i in range(n)]
        batch = os.path.join(work, "batch.jsonl")
        with open(batch, "w") as f:
            for r in requests:
                f.write(json.dumps(r) + "\n")
        bodies = [json.dumps(r["body"]).encode() for r in requests]
        direct_s, tarmac_s = [], []
        for run in range(2):
            direct_s.append(direct(port, bodies, concurrency))
            tarmac_s.append(through_tarmac(build, env, sock, work, batch, port, concurrency, n, run))
        d, t = min(direct_s), min(tarmac_s)
        print(f"{n} requests, concurrency {concurrency}, engine latency {latency_ms} ms, best of 2:")
        print(f"  direct to the engine      {d:7.2f} s  {n / d:7.1f} requests/s")
        print(f"  through tarmac backfill   {t:7.2f} s  {n / t:7.1f} requests/s  ({100 * d / t:.1f} % of direct)")
    finally:
        if engine:
            engine.terminate()
            engine.wait()
        agent.terminate()
        agent.wait()
        if os.environ.get("BENCH_DEBUG"):
            print(work)
        if os.environ.get("BENCH_DEBUG"):
            print(work)
        subprocess.run(["pkill", "-f", "tarmac-backfill-runner --dir " + work], check=False)


if __name__ == "__main__":
    main()
