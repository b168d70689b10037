#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`tarmac fleet report --since 7d` at a real scrape rate, from the raw
counters and from the shipped recording rules' hourly series.

Two nodes of a GPU each export tarmac's accounting counters every 15 s for a
week and a few hours (OpenMetrics, made into TSDB blocks by `promtool tsdb
create-blocks-from openmetrics`). A real Prometheus serves them with a
samples limit that a raw read of the week passes (--query.max-samples), as
a thousand nodes pass the default one:

1. Without the rules, the report says that the hourly series are missing
   and what to install, reads the raw counters in pieces the store takes,
   and its GPU-hours by state, lease hours, energy and idle cost are the
   ones written, within 0.5 %.
2. The shipped rules the report reads (the tarmac-report group of
   deploy/prometheus/tarmac.rules.yml, as it is) are evaluated over the
   week by `promtool tsdb create-blocks-from rules`, as a Prometheus that
   ran them all week would have them. The report then
   reads the whole hours from the hourly series and the edges raw, with no
   warning, and every figure equals the raw report's within 0.5 %.

With FLEET_STORE=victoria-metrics (e2e.fleet_hourly_victoria) the store
is VictoriaMetrics: the week imported through its Prometheus text import,
the same rule group replayed over it by vmalert (-replay.timeFrom), which
writes the hourly series back; the same checks, with its samples limit
(-search.maxSamplesPerQuery) set so that the raw week must be cut too.

Usage: fleet_hourly.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml  # Debian's python3-yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_util import check, free_port, serve_tsdb, victoria_metrics  # noqa: E402

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
work = tempfile.mkdtemp(prefix="tarmac-fleet-hourly-")
STEP = 15
NODES = {"node-a": 1, "node-b": 1}
# The report's range: a week ending 20 min 34 s past an hour, so both edges are raw.
UNTIL = int(time.time()) // 3600 * 3600 - 3600 + 1234
SINCE = UNTIL - 7 * 86400
START = SINCE - 3 * 3600  # The counters begin before the range (agents were up).
END = UNTIL + 15 * 60


def gpus():
    for host, count in NODES.items():
        for g in range(count):
            yield host, g, f"GPU-{host[-1]}{g}000000-0000-4000-8000-000000000000"


def busy_share(host, g, t):
    """A working day's load: busy 9:00 to 19:00 on some GPUs, less at night;
    node-b's GPU idle over 80 % of the time (mostly idle)."""
    hour = (t // 3600) % 24
    base = [0.9, 0.1][ord(host[-1]) - ord("a")]
    return min(1.0, base * (1.3 if 9 <= hour < 19 else 0.5))


def write_blocks(sink):
    """The counters at STEP, one OpenMetrics file and block per two hours;
    returns what was written over [SINCE, UNTIL]: GPU-seconds by state, lease
    seconds, joules, idle cost, summed over the GPUs."""
    totals = {}  # (uuid, family, extra) -> counter value
    truth = {"busy": 0.0, "idle": 0.0, "held_idle": 0.0, "unknown": 0.0, "lease": 0.0, "joules": 0.0, "cost": 0.0}
    path = os.path.join(work, "window.om")
    for w in range(START - START % 7200, END, 7200):
        lines = {}
        for t in range(max(w, START), min(w + 7200, END), STEP):
            for host, g, uuid in gpus():
                labels = f'instance="{host}:9477",job="tarmac",hostname="{host}",gpu="{g}",uuid="{uuid}",model="H100"'
                b = busy_share(host, g, t) if t > START else 0
                rates = [("tarmac_gpu_state_seconds_total", ',state="busy"', b),
                         ("tarmac_gpu_state_seconds_total", ',state="idle"', (1 - b) * 0.75),
                         ("tarmac_gpu_state_seconds_total", ',state="held_idle"', (1 - b) * 0.25),
                         ("tarmac_gpu_state_seconds_total", ',state="unknown"', 0.0),
                         ("tarmac_gpu_lease_seconds_total", ',user="amira",kind="run"', 1.0 if g == 0 else 0.0),
                         ("tarmac_gpu_energy_joules_total", "", 70 + 600 * b),
                         ("tarmac_gpu_idle_cost_total", ',currency="USD"', (1 - b) * 2.5 / 3600)]
                for name, extra, rate in rates:
                    key = (uuid, name, extra)
                    grown = rate * STEP if t > START else 0
                    totals[key] = totals.get(key, 0.0) + grown
                    if SINCE < t <= UNTIL:
                        what = {"tarmac_gpu_lease_seconds_total": "lease", "tarmac_gpu_energy_joules_total": "joules",
                                "tarmac_gpu_idle_cost_total": "cost"}.get(name) or extra.split('"')[1]
                        truth[what] += grown
                    lines.setdefault(name, []).append(f"{name}{{{labels}{extra}}} {totals[key]:.6f} {t}\n")
        with open(path, "w") as out:
            for name, rows in lines.items():
                out.write(f"# TYPE {name} counter\n")
                out.write("".join(rows))
            out.write("# EOF\n")
        sink(path)
    return truth


def into_tsdb(tsdb):
    """A sink writing each window as a TSDB block (promtool)."""
    return lambda path: subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", path, tsdb],
                                       check=True, stdout=subprocess.DEVNULL)


def into_victoria(url):
    """A sink importing each window into VictoriaMetrics (its Prometheus
    text import: timestamps in milliseconds)."""
    def sink(path):
        with open(path) as f:
            lines = [line.rsplit(" ", 1) for line in f if not line.startswith("#")]
        body = "".join(f"{head} {int(t) * 1000}\n" for head, t in lines).encode()
        urllib.request.urlopen(urllib.request.Request(f"{url}/api/v1/import/prometheus", data=body), timeout=60)
    return sink


def start_prometheus(tsdb):
    # A samples limit that the week in one raw query passes.
    return serve_tsdb(work, tsdb, "--query.max-samples=30000")


def report(url, form="--json"):
    out = subprocess.run([os.path.join(build, "bin", "tarmac-fleet"), "report", "--prometheus", url, "--since",
                          f"@{SINCE}", "--until", f"@{UNTIL}", form], capture_output=True, text=True)
    check(out.returncode == 0, f"fleet report answers (exit {out.returncode}): {out.stderr.strip()}",
          name="fleet_hourly")
    return json.loads(out.stdout) if form == "--json" else out.stdout


def heatmap(url):
    """The HTML report's node x hour heatmap: node -> busy percents, hour by hour."""
    cells = {}
    for node, busy in re.findall(r"<title>(\S+) hour to [^<]*?: (\d+)% busy", report(url, "--html")):
        cells.setdefault(node, []).append(int(busy))
    return cells


def check_heatmaps(raw, hourly):
    """Each node's hours in both heatmaps: as many (a week's, give or take
    the edges), and as busy on average."""
    for node in NODES:
        a, b = hourly.get(node, []), raw.get(node, [])
        check(len(a) >= 166 and abs(len(a) - len(b)) <= 1 and abs(sum(a) / len(a) - sum(b) / len(b)) < 1.5,
              f"{node}'s heatmap from the hourly series: {len(a)} hours, "
              f"{sum(a) / max(len(a), 1):.1f} % busy on average; from the raw counters {len(b)}, "
              f"{sum(b) / max(len(b), 1):.1f} %", name="fleet_hourly")


def figures(r):
    t = r["total"]
    out = {"busy": t["busy_hours"] * 3600, "idle": t["idle_hours"] * 3600, "held_idle": t["held_idle_hours"] * 3600,
           "lease": sum(t["lease_hours"].values()) * 3600, "joules": t["energy_kwh"] * 3.6e6,
           "cost": t["idle_cost"], "gpus": t["gpus"], "mostly idle GPUs": r.get("mostly_idle_gpus", 0)}
    for row in r.get("rows", []):  # Each node's (the report's rows, by node).
        out[f"{row['key']} GPUs"] = row["gpus"]
        out[f"{row['key']} busy"] = row["busy_hours"] * 3600
        out[f"{row['key']} joules"] = row["energy_kwh"] * 3.6e6
    return out


def close(a, b, what):
    for k in a:
        if k == "unknown" or k not in b:  # What was written has the totals only.
            continue
        check(abs(a[k] - b[k]) <= 0.005 * max(abs(b[k]), 1e-9),
              f"{what}: {k} {a[k]:.1f} against {b[k]:.1f} ({100 * (a[k] - b[k]) / max(b[k], 1e-9):+.3f} %)",
              name="fleet_hourly")


def report_rules():
    """The tarmac-report group of the shipped rules file, as it is, in a file of its own."""
    with open(os.path.join(source, "deploy/prometheus/tarmac.rules.yml")) as f:
        shipped = yaml.safe_load(f)
    path = os.path.join(work, "report.rules.yml")
    with open(path, "w") as f:
        yaml.safe_dump({"groups": [g for g in shipped["groups"] if g["name"] == "tarmac-report"]}, f)
    return path


def check_week_refused(url, words):
    """The week in one raw query is over the store's samples limit (its
    refusal says `words`): the report must cut it."""
    ask = urllib.parse.urlencode({"query": "sum by (uuid, state) (increase(tarmac_gpu_state_seconds_total[7d]))",
                                  "time": UNTIL}).encode()
    try:
        urllib.request.urlopen(f"{url}/api/v1/query", data=ask, timeout=60)
        refused = ""
    except urllib.error.HTTPError as e:
        refused = e.read().decode()
    check(words in refused, f"the week in one raw query is refused: {refused[:160]}", name="fleet_hourly")


def check_raw(url, truth):
    raw = report(url)
    check(raw["read_from"] == "raw counters" and any("no hourly series" in w for w in raw["warnings"]),
          f"without the rules the report reads the raw counters and says why: {raw['warnings']}",
          name="fleet_hourly")
    close(figures(raw), truth, "the raw report against what was written")
    return raw, heatmap(url)


def check_hourly(url, raw_read, truth):
    raw, raw_heatmap = raw_read
    check_heatmaps(raw_heatmap, heatmap(url))
    hourly = report(url)
    check(hourly["read_from"] == "hourly series" and not hourly["warnings"],
          f"with the rules it reads the hourly series, with no warning: {hourly['warnings']}", name="fleet_hourly")
    check(hourly["mostly_idle_gpus"] == 1 and hourly["total"]["gpus"] == 2,
          f"of the 2 GPUs, node-b's is mostly idle: {hourly['mostly_idle_gpus']} of {hourly['total']['gpus']}",
          name="fleet_hourly")
    close(figures(hourly), figures(raw), "the hourly report against the raw one")
    close(figures(hourly), truth, "the hourly report against what was written")


def on_prometheus(children):
    tsdb = os.path.join(work, "tsdb")
    t0 = time.monotonic()
    truth = write_blocks(into_tsdb(tsdb))
    print(f"fleet_hourly: a week of 2 GPUs at {STEP} s in {time.monotonic() - t0:.0f} s")
    prom, url = start_prometheus(tsdb)
    children.append(prom)
    check_week_refused(url, "too many samples")
    raw = check_raw(url, truth)
    # The shipped rules over the week, as a Prometheus running them all week has them.
    # From the start of a two-hour block: promtool's rules backfill stops at
    # its first block when that block ends before the group's first
    # evaluation in it (the evaluation's second of the hour is a hash of the
    # rules file's path, a temporary one here), and writes nothing.
    # Evaluations before the counters' first full hour read less than an
    # hour; the report's range begins hours after them.
    t0 = time.monotonic()
    rules = os.path.join(work, "rules")
    first = (START + 3600) // 7200 * 7200
    made = subprocess.run(["promtool", "tsdb", "create-blocks-from", "rules", f"--start={first}",
                           f"--end={END}", f"--url={url}", f"--output-dir={rules}", report_rules()],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if made.returncode != 0 or not os.path.isdir(rules):
        raise SystemExit(f"fleet_hourly: promtool wrote no rule blocks (exit {made.returncode}):\n{made.stdout}")
    print(f"fleet_hourly: the rules evaluated over the week in {time.monotonic() - t0:.0f} s")
    prom.terminate()
    prom.wait(timeout=60)
    for block in os.listdir(rules):
        shutil.move(os.path.join(rules, block), os.path.join(tsdb, block))
    prom, url = start_prometheus(tsdb)
    children.append(prom)
    check_hourly(url, raw, truth)


def on_victoria(children):
    """The same on VictoriaMetrics: the week imported, the rules replayed
    over it by vmalert (-replay.timeFrom), which writes the hourly series
    back."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # A samples limit that the week in one raw query passes, as for
    # Prometheus. vmalert's replay writes the evaluation where two of its
    # requests meet twice: the store keeps one (as docs/fleet.md says to).
    children.append(subprocess.Popen(victoria_metrics(work, port, "-retentionPeriod=1y",
                                                      "-search.maxSamplesPerQuery=200000",
                                                      "-dedup.minScrapeInterval=1s"),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{url}/health", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    flush = lambda: urllib.request.urlopen(f"{url}/internal/force_flush", timeout=60)  # noqa: E731
    truth = write_blocks(into_victoria(url))
    flush()
    check_week_refused(url, "cannot select more than -search.maxSamplesPerQuery")
    raw = check_raw(url, truth)
    t0 = time.monotonic()
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
    # It replays at the datasource's step, not the group's interval: an
    # hour, as the group; a day per request keeps within the samples limit.
    subprocess.run(["vmalert", f"-rule={report_rules()}", f"-datasource.url={url}", f"-remoteWrite.url={url}",
                    "-datasource.queryStep=1h", "-replay.maxDatapointsPerQuery=24",
                    f"-replay.timeFrom={iso(START + 3600)}", f"-replay.timeTo={iso(END)}", "-loggerLevel=ERROR"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"fleet_hourly: vmalert replayed the rules over the week in {time.monotonic() - t0:.0f} s")
    flush()
    check_hourly(url, raw, truth)


def main():
    children = []
    try:
        (on_victoria if os.environ.get("FLEET_STORE") == "victoria-metrics" else on_prometheus)(children)
    finally:
        for child in children:
            child.terminate()
            child.wait(timeout=60)


try:
    main()
finally:
    shutil.rmtree(work, ignore_errors=True)
