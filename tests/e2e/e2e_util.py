# SPDX-License-Identifier: Apache-2.0
"""What the Python end-to-end tests and benchmarks share: a free port,
bounded readiness waits, checks that say what they checked, and stopping
the processes a test started."""
import os
import signal
import socket
import subprocess
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(what, predicate, tries=300, pause=0.1, name="e2e"):
    """Polls `predicate` until it is truthy and returns it (bounded: a
    readiness wait, not a timing check)."""
    last = None
    for _ in range(tries):
        last = predicate()
        if last:
            return last
        time.sleep(pause)
    raise SystemExit(f"{name}: gave up waiting for {what} (last: {last!r})")


def check(condition, message, name="e2e"):
    if not condition:
        raise SystemExit(f"{name}: FAILED: {message}")
    print(f"ok: {message}")


def stop_all(children):
    """SIGTERM to each child still running (the last started first), then
    SIGKILL to one that does not stop within 10 s."""
    for child in reversed(children):
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()


def cpu_seconds(pid):
    """CPU time (user + system) process `pid` has used, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_mib(pid, field="VmRSS"):
    """A memory line of /proc/PID/status (VmRSS, VmHWM) in MiB; 0 when absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def serve_tsdb(work, tsdb, *flags, query_log=None):
    """The Debian package's Prometheus serving the TSDB folder `tsdb` (and
    scraping nothing), with `flags` added, once it answers: (process, URL).
    With `query_log`, it writes every query it runs there, with its query
    stats (timings, samples touched and the most held at once)."""
    import urllib.request
    port = free_port()
    config = os.path.join(work, "prometheus-tsdb.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 15s\n")
        if query_log:
            f.write(f"  query_log_file: {query_log}\n")
        f.write("scrape_configs: []\n")
    prom = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
                             "--storage.tsdb.retention.time=30d", f"--web.listen-address=127.0.0.1:{port}",
                             "--log.level=error", *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(f"{url}/-/ready", timeout=1)
            return prom, url
        except OSError:
            time.sleep(0.2)
    prom.kill()
    raise SystemExit(f"Prometheus did not start on {tsdb}")


def victoria_metrics(work, port, *flags):
    """The command line of Debian's VictoriaMetrics on 127.0.0.1:`port`, its
    data under `work`, with `flags` added. Queries see samples up to a
    second old (its default hides the newest 30 s: docs/fleet.md)."""
    return ["victoria-metrics", f"-storageDataPath={work}/vmdata", f"-httpListenAddr=127.0.0.1:{port}",
            "-search.latencyOffset=1s", "-loggerLevel=WARN", *flags]
