#!/usr/bin/env python3
"""A hostile or broken Prometheus against `tarmac fleet` and the agent's fleet routes.

Usage: hostile_prometheus.py BUILD_DIR [TIMEOUT_S]

One server on loopback answers every query as one of:
  ordinary  a small, well-formed fleet of one node (the baseline)
  endless   a body that never ends, as fast as loopback takes it
  label     one label value of 256 MiB, then the end of a valid answer
  trickle   one byte a second, for ever
  deep      10^6 nested arrays (2 MB)
For each, `tarmac fleet status --timeout TIMEOUT_S` (default 10 s) runs once
under bench/rusage_run: its exit code, wall time and peak RSS. Then an agent
whose [fleet] names the server (timeout TIMEOUT_S / 2) answers
/api/v1/fleet: the HTTP status, the time to answer, and the agent's RSS
before and its peak (VmHWM) after.

Targets (the "trust at every edge" issue): every hostile answer ends with an
error naming its limit; the CLI's and the agent's time stay within the
timeout + 1 s; their memory within the stated bound (one answer at most
[fleet] max_answer_size, 64 MiB; a reading asks up to eight at once).
"""
import http.client
import http.server
import os
import re
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import agent_api

build = sys.argv[1]
timeout_s = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
mode = ["ordinary"]
ORDINARY = {
    "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_info)":
        '{"metric":{"instance":"n1:9477","hostname":"n1","gpu":"0","uuid":"GPU-1","model":"H100"},"value":[1,"1"]}',
    "up": '{"metric":{"instance":"n1:9477","job":"tarmac"},"value":[1,"1"]}',
}


def vector(items):
    return '{"status":"success","data":{"resultType":"vector","result":[' + items + "]}}"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        query = form.get("query", [""])[0]
        try:
            if mode[0] == "ordinary":
                if self.path.endswith("/api/v1/series"):
                    body = '{"status":"success","data":[]}'
                elif query == "time()":
                    body = '{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}'
                else:
                    body = vector(ORDINARY.get(query, ""))
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b"a" * (64 * 1024)
            if mode[0] == "endless":
                self.wfile.write(b'{"status":"success","data":"')
                while True:
                    self.wfile.write(chunk)
            elif mode[0] == "label":
                self.wfile.write(b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"hostname":"')
                for _ in range(256 * 16):
                    self.wfile.write(chunk)
                self.wfile.write(b'"},"value":[1,"1"]}]}}')
            elif mode[0] == "trickle":
                while True:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(1)
            elif mode[0] == "deep":
                self.wfile.write(b"[" * 1000000 + b"]" * 1000000)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    # tarmac asks up to eight questions at once: Python's default backlog
    # of 5 drops connections, which TCP tries again a second later.
    request_queue_size = 64


server = Server(("127.0.0.1", 0), Handler)
url = f"http://127.0.0.1:{server.server_address[1]}"
threading.Thread(target=server.serve_forever, daemon=True).start()
work = tempfile.mkdtemp(prefix="tarmac-hostile-prom-")
empty_config = os.path.join(work, "empty.toml")
open(empty_config, "w").close()
rusage_run = os.path.join(build, "bin", "rusage_run")
tarmac = os.path.join(build, "bin", "tarmac")

print(f"tarmac fleet status --timeout {timeout_s:g}s (peak RSS by rusage_run)")
print(f"  {'answer':<10} {'exit':>4} {'wall s':>7} {'peak RSS MiB':>13}  what it said (asked again, --timeout 1s)")
for m in ("ordinary", "endless", "label", "trickle", "deep"):
    mode[0] = m
    began = time.monotonic()
    out = subprocess.run([rusage_run, tarmac, "fleet", "status", "--prometheus", url, "--timeout", f"{timeout_s:g}s",
                          "--config", empty_config], capture_output=True, text=True)
    wall = time.monotonic() - began
    fields = out.stdout.split()
    rss_mib = int(fields[2]) / 1024 if len(fields) == 3 else float("nan")
    said = subprocess.run([tarmac, "fleet", "status", "--prometheus", url, "--timeout", "1s", "--config", empty_config],
                          capture_output=True, text=True).stderr.strip().splitlines() if m != "ordinary" else ["ok"]
    print(f"  {m:<10} {out.returncode:>4} {wall:>7.2f} {rss_mib:>13.1f}  {said[0][:90] if said else ''}")

agent_timeout = max(1.0, timeout_s / 2)
config = f'[fleet]\nprometheus_url = "{url}"\ntimeout = "{agent_timeout:g}s"\n'
agent, _, _ = agent_api.start_agent(build, work, config, http_listen="127.0.0.1:0")
port = agent_api.http_port(f"{work}/agent.log")
time.sleep(1.5)


def status_kib(key):
    with open(f"/proc/{agent.pid}/status") as f:
        return int(re.search(rf"^{key}:\s+(\d+)", f.read(), re.M).group(1))


print(f"\nthe agent's /api/v1/fleet ([fleet] timeout {agent_timeout:g}s)")
print(f"  {'answer':<10} {'HTTP':>4} {'answer s':>8} {'RSS before':>11} {'peak after':>11}  MiB")
try:
    for m in ("ordinary", "endless", "label", "trickle", "deep"):
        mode[0] = m
        time.sleep(5.5)  # Past the agent's reuse of its last reading.
        before = status_kib("VmRSS") / 1024
        began = time.monotonic()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("GET", "/api/v1/fleet")
        r = c.getresponse()
        r.read()
        took = time.monotonic() - began
        peak = status_kib("VmHWM") / 1024
        print(f"  {m:<10} {r.status:>4} {took:>8.2f} {before:>11.1f} {peak:>11.1f}")
finally:
    agent.terminate()
    agent.wait(timeout=30)
    server.shutdown()
