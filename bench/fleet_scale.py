#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`tarmac fleet` on a synthetic fleet: NODES nodes x GPUS GPUs x DAYS days.

Writes what tarmac's agents would have exported (the accounting counters
at STEP seconds over the days; the readings, marks and `up` over the last
half hour and a quarter hour ahead, so that "now" falls inside them) as
OpenMetrics, builds a Prometheus TSDB of it with `promtool tsdb
create-blocks-from openmetrics`, starts the Debian package's Prometheus on
it and times, each RUNS times, with its CPU time and peak RSS
(bench/rusage_run.c):

  tarmac fleet status (text: by node past 200 nodes), tarmac fleet status
  --json (every GPU), tarmac fleet status --by node --json (each node's
  GPUs counted), tarmac fleet idle --json,
  tarmac fleet report --since 7d --by user | --by node --json

and, beside the report, the same GPU-hours by state computed the naive
way: one range query per GPU, summed by the client. After each command's
timed runs, one more run's queries are read from Prometheus' query log:
how many, the samples they touched, the most one of them held at once
(what --query.max-samples limits, 50,000,000 by default) and the time
Prometheus spent on them.

Usage: fleet_scale.py BUILD_DIR [NODES] [GPUS] [DAYS] [STEP_S] [RUNS]

FLEET_SCALE_TSDB=DIR keeps the TSDB in DIR, and reuses it when it is there
(timing the report over the week that ends when it was made; not status
and idle, which read the present, unless FLEET_SCALE_REFRESH=1 writes the
readings around the present into it again).

FLEET_SCALE_HEAD=1 writes the readings around the present into
Prometheus' head through its remote-write receiver, as a server that
scrapes the agents holds the present, rather than into promtool's blocks
on disk (with a kept TSDB, every run: the head does not outlive the run).

FLEET_SCALE_TIMEOUT=DURATION gives each command that --timeout.

FLEET_SCALE_NAIVE=0 leaves out the naive way (a range query per GPU).

FLEET_SCALE_QUERIES=1 also lists each logged query with its time in
Prometheus and the samples it touched, costliest first.

FLEET_SCALE_ONLY=WORD,... times only the commands whose name has one of
the words (`status`, `idle`, `report`).

FLEET_SCALE_BASELINE=PATH also times PATH (another build's tarmac-fleet)
for each command, right after this build's, against the same Prometheus.

FLEET_SCALE_HOURLY=1 also writes, at every whole hour, the hourly series
the shipped recording rules keep (group tarmac-report:
uuid:tarmac_gpu_state_seconds:increase1h and the rest, and
tarmac:report_rules_version), as a Prometheus running them would have
them: the report then reads its whole hours from them (its JSON says
`read_from`).
"""
import json
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
from e2e_util import serve_tsdb  # noqa: E402

build = sys.argv[1]
nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
gpus = int(sys.argv[3]) if len(sys.argv) > 3 else 8
days = int(sys.argv[4]) if len(sys.argv) > 4 else 7
step = int(sys.argv[5]) if len(sys.argv) > 5 else 3600
runs = int(sys.argv[6]) if len(sys.argv) > 6 else 5

MODELS = ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"]
USERS = [f"user-{i:02d}" for i in range(50)]
rng = random.Random(7)
# FLEET_SCALE_HEAD=1: the readings around the present are remote-written
# into Prometheus' head, as a server scraping the agents holds them, not
# into promtool's blocks.
HEAD = os.environ.get("FLEET_SCALE_HEAD") == "1"
work = tempfile.mkdtemp(prefix="tarmac-fleet-scale-")


def make_fleet():
    fleet = []
    for n in range(nodes):
        host = f"gpu-node-{n:04d}"
        for g in range(gpus):
            uuid = f"GPU-{n:04x}{g:04x}-0000-4000-8000-{rng.getrandbits(48):012x}"
            fleet.append((host, g, uuid, MODELS[n % 2], rng.choice([0.05, 0.3, 0.6, 0.9]), rng.choice(USERS),
                          rng.random() < 0.6))
    return fleet


def diurnal(t, share):
    hour = (t // 3600) % 24
    return min(1.0, share * (1.3 if 9 <= hour < 19 else 0.7))


def idle(t, share):
    """Whether a GPU of that share is idle (under 5 %) at `t`."""
    return diurnal(t, share) < 0.05


# GPU 5 of each node runs one long-lived process holding 20 GiB: while the
# GPU is idle it is held idle (the process at 0 % SM), not idle.
HOLDING = 5
HELD_MEMORY = 20 * 1024 ** 3


def idle_now(g, t, share):
    """Idle and not held idle (no process holding memory at 0 % SM)."""
    return idle(t, share) and g != HOLDING


def held_idle(g, t, share):
    return idle(t, share) and g == HOLDING


def verdict(i):
    """The health verdict of the fleet's i-th GPU."""
    return "drain" if i % 499 == 0 else "degraded" if i % 97 == 0 else "ok"


def families(fleet):
    """Counters: (name, [(labels, rate(t))]); gauges: (name, [(labels, value(t))])."""
    def labels(host, g, uuid, model):
        return f'instance="{host}:9477",job="tarmac",hostname="{host}",gpu="{g}",uuid="{uuid}",model="{model}"'

    counters = [
        ("tarmac_gpu_state_seconds_total", [
            (labels(h, g, u, m) + f',state="{state}"', rate)
            for h, g, u, m, s, _, _ in fleet
            for state, rate in [("busy", lambda t, s=s: diurnal(t, s)),
                                ("held_idle", lambda t, s=s: (1 - diurnal(t, s)) * 0.2),
                                ("idle", lambda t, s=s: (1 - diurnal(t, s)) * 0.8 * 0.999),
                                ("unknown", lambda t, s=s: (1 - diurnal(t, s)) * 0.8 * 0.001)]]),
        ("tarmac_gpu_energy_joules_total",
         [(labels(h, g, u, m), lambda t, s=s: 70 + 600 * diurnal(t, s)) for h, g, u, m, s, _, _ in fleet]),
        ("tarmac_gpu_idle_cost_total",
         [(labels(h, g, u, m) + ',currency="USD"', lambda t, s=s: (1 - diurnal(t, s)) * 4 / 3600)
          for h, g, u, m, s, _, _ in fleet]),
        ("tarmac_gpu_lease_seconds_total",
         [(labels(h, g, u, m) + f',user="{usr}",kind="run"', lambda t: 0.7)
          for h, g, u, m, _, usr, leased in fleet if leased]),
    ]
    memory = 85899345920

    def per_gpu(value, extra=""):
        return [(labels(h, g, u, m) + extra, lambda t, s=s: value(s, t)) for h, g, u, m, s, _, _ in fleet]

    def per_index(value, extra=""):
        """A family whose value depends on the GPU's index too."""
        return [(labels(h, g, u, m) + extra, lambda t, s=s, g=g: value(g, s, t)) for h, g, u, m, s, _, _ in fleet]

    def per_process(value):
        """A family of the holding process of each node's GPU `HOLDING`."""
        return [(labels(h, g, u, m) + f',pid="{4000 + g}",user="{usr}",command="python"',
                 lambda t, s=s: value(s, t)) for h, g, u, m, s, usr, _ in fleet if g == HOLDING]

    hosts = sorted({h for h, *_ in fleet})

    def node_labels(host):
        return f'instance="{host}:9477",job="tarmac",hostname="{host}"'

    by_host = {}  # Each node's GPUs: (index in the fleet, share, leased, index on the node).
    for i, (h, g, _, _, s, _, leased) in enumerate(fleet):
        by_host.setdefault(h, []).append((i, s, leased, g))
    gauges = [
        ("tarmac_gpu_info", per_gpu(lambda s, t: 1)),
        ("tarmac_gpu_utilization_ratio", per_gpu(lambda s, t: round(diurnal(t, s), 3))),
        ("tarmac_gpu_memory_total_bytes", per_gpu(lambda s, t: memory)),
        ("tarmac_gpu_memory_used_bytes",
         per_index(lambda g, s, t: HELD_MEMORY if g == HOLDING and idle(t, s) else int(memory * diurnal(t, s) * 0.8))),
        ("tarmac_gpu_memory_free_bytes", per_gpu(lambda s, t: int(memory * (1 - diurnal(t, s) * 0.8)))),
        ("tarmac_gpu_power_watts", per_gpu(lambda s, t: round(70 + 600 * diurnal(t, s), 1))),
        ("tarmac_gpu_power_limit_watts", per_gpu(lambda s, t: 700)),
        ("tarmac_gpu_temperature_celsius", per_gpu(lambda s, t: 30 + int(40 * diurnal(t, s)))),
        ("tarmac_gpu_idle", per_index(lambda g, s, t: 1 if idle_now(g, t, s) else 0)),
        ("tarmac_gpu_held_idle", per_index(lambda g, s, t: 1 if held_idle(g, t, s) else 0)),
        ("tarmac_gpu_lost", per_gpu(lambda s, t: 0)),
        ("tarmac_gpu_idle_for_seconds", per_index(lambda g, s, t: 3600 if idle_now(g, t, s) else 0)),
        ("tarmac_gpu_idle_for_cost", per_gpu(lambda s, t: 4.0 if idle(t, s) else 0, ',currency="USD"')),
        ("tarmac_gpu_held_idle_for_seconds", per_index(lambda g, s, t: 3600 if held_idle(g, t, s) else 0)),
        ("tarmac_process_gpu_memory_bytes", per_process(lambda s, t: HELD_MEMORY)),
        ("tarmac_process_sm_utilization_ratio", per_process(lambda s, t: 0 if idle(t, s) else round(diurnal(t, s), 3))),
        # As real agents export them: three health series a GPU (the
        # verdict's 1; one GPU in 97 degraded, one in 499 to drain), and a
        # lease mark on each leased GPU.
        ("tarmac_gpu_health",
         [(labels(h, g, u, m) + f',verdict="{v}"', lambda t, v=v, i=i: 1 if verdict(i) == v else 0)
          for i, (h, g, u, m, *_) in enumerate(fleet) for v in ("ok", "degraded", "drain")]),
        ("tarmac_gpu_lease",
         [(labels(h, g, u, m) + f',lease="{i}",user="{usr}",kind="run"', lambda t: 1)
          for i, (h, g, u, m, _, usr, leased) in enumerate(fleet) if leased]),
        # Each node's own counts of its GPUs (what `fleet status --by node`
        # reads), as real agents export them: the per-GPU families above,
        # counted.
        ("tarmac_node_gpus",
         [(node_labels(h) + f',which="{which}"',
           lambda t, rows=rows, count=count: sum(count(i, g, s, t) for i, s, _, g in rows))
          for h, rows in by_host.items()
          for which, count in [("all", lambda i, g, s, t: 1),
                               ("idle", lambda i, g, s, t: 1 if idle_now(g, t, s) else 0),
                               ("held_idle", lambda i, g, s, t: 1 if held_idle(g, t, s) else 0),
                               ("lost", lambda i, g, s, t: 0),
                               ("degraded", lambda i, g, s, t: 1 if verdict(i) == "degraded" else 0),
                               ("drain", lambda i, g, s, t: 1 if verdict(i) == "drain" else 0)]]),
        ("tarmac_node_gpus_leased",
         [(node_labels(h), lambda t, rows=rows: sum(1 for _, _, l, _ in rows if l))
          for h, rows in by_host.items()]),
        ("tarmac_node_idle_holders",  # The holding process of a held-idle GPU.
         [(node_labels(h), lambda t, rows=rows: sum(1 for _, s, _, g in rows if held_idle(g, t, s)))
          for h, rows in by_host.items()]),
        ("tarmac_node_utilization_ratio",
         [(node_labels(h),
           lambda t, rows=rows: round(sum(round(diurnal(t, s), 3) for _, s, _, _ in rows) / len(rows), 6))
          for h, rows in by_host.items()]),
        ("tarmac_last_sample_timestamp_seconds",
         [(node_labels(h), lambda t: t) for h in hosts]),
        ("up", [(f'instance="{h}:9477",job="tarmac"', lambda t: 1) for h in hosts]),
    ]
    return counters, gauges


# Each counter's hourly series (deploy/prometheus/tarmac.rules.yml, group tarmac-report).
HOURLY = {"tarmac_gpu_state_seconds_total": "uuid:tarmac_gpu_state_seconds:increase1h",
          "tarmac_gpu_energy_joules_total": "uuid:tarmac_gpu_energy_joules:increase1h",
          "tarmac_gpu_idle_cost_total": "uuid:tarmac_gpu_idle_cost:increase1h",
          "tarmac_gpu_lease_seconds_total": "uuid:tarmac_gpu_lease_seconds:increase1h"}
# Each counter's roll-up per node and model, and the labels it keeps.
ROLLUP = {"tarmac_gpu_state_seconds_total": ("hostname_model:tarmac_gpu_state_seconds:increase1h",
                                             ["hostname", "model", "state"]),
          "tarmac_gpu_energy_joules_total": ("hostname_model:tarmac_gpu_energy_joules:increase1h",
                                             ["hostname", "model"]),
          "tarmac_gpu_idle_cost_total": ("hostname_model:tarmac_gpu_idle_cost:increase1h",
                                         ["hostname", "model", "currency"]),
          "tarmac_gpu_lease_seconds_total": ("hostname_model:tarmac_gpu_lease_seconds:increase1h",
                                             ["hostname", "model", "kind"])}
# Per GPU: idle and held-idle seconds less 4 times busy ones (unknown ones count 0).
MARGIN = "uuid:tarmac_gpu_mostly_idle_margin_seconds:increase1h"
MARGIN_WEIGHTS = {"idle": 1, "held_idle": 1, "busy": -4}
RULES_VERSION = 3


def rollups(name, rows):
    """Each row's roll-up key (its roll-up series' line up to the value),
    and for the GPU states each row's GPU key and margin weight."""
    series, keep = ROLLUP[name]
    keys, margin = [], []
    for labels, _ in rows:
        d = dict(LABEL.findall(labels))
        keys.append(series + "{" + ",".join(f'{k}="{d[k]}"' for k in keep) + "} ")
        if name == "tarmac_gpu_state_seconds_total":
            gpu = ",".join(f'{k}="{d[k]}"' for k in ["hostname", "gpu", "uuid", "model"])
            margin.append((MARGIN + "{" + gpu + "} ", MARGIN_WEIGHTS.get(d["state"], 0)))
    return keys, margin


def hourly_lines_of(rolled, deltas, t):
    """The roll-up's lines and the margin's at hour `t`, from each row's growth over the hour."""
    keys, margin = rolled
    sums, margins = {}, {}
    for key, d in zip(keys, deltas):
        sums[key] = sums.get(key, 0.0) + d
    for (gpu, weight), d in zip(margin, deltas):
        margins[gpu] = margins.get(gpu, 0.0) + weight * d
    return ([f"{k}{v:.3f} {t}\n" for k, v in sums.items()], [f"{k}{v:.3f} {t}\n" for k, v in margins.items()])


def build_tsdb(tsdb, now, fleet):
    """Writes the OpenMetrics of each two-hour window and has promtool make
    its block (promtool 2.42 reads its whole input once per two hours the
    input spans: one file per window keeps that linear). promtool reads one
    window while the next is written. Every rate is constant over an hour,
    so it is computed once per series and hour."""
    counters, gauges = families(fleet)
    start = now - days * 86400
    history = list(range(start - start % step, now + 1, step))
    # The readings go to the head instead (FLEET_SCALE_HEAD=1, remote_write_recent).
    recent = [] if HEAD else list(range(now - 1800, now + 900, 60))
    totals = [[0.0] * len(rows) for _, rows in counters]
    at_hour = [[0.0] * len(rows) for _, rows in counters]
    # Each series' line up to its value, and its hourly series' line.
    prefixes = [[f"{name}{{{labels}}} " for labels, _ in rows] for name, rows in counters]
    hourly_prefixes = [[HOURLY[name] + "{" + ",".join(p for p in labels.split(",")
                                                      if not p.startswith(("instance=", "job="))) + "} "
                        for labels, _ in rows] for name, rows in counters]
    hourly = os.environ.get("FLEET_SCALE_HOURLY") == "1"
    rolled = [rollups(name, rows) if hourly else ([], []) for name, rows in counters]
    previous = None
    series = sum(len(rows) for _, rows in counters) + sum(len(rows) for _, rows in gauges)
    samples = 0
    window = 7200
    first = min(history[:1] + recent[:1])
    reader = None  # The promtool reading the previous window.
    for number, w in enumerate(range(first - first % window, now + 900 + 1, window)):
        ts = [t for t in history if w <= t < w + window]
        rs = [t for t in recent if w <= t < w + window]
        if not ts and not rs:
            continue
        path = os.path.join(work, f"window-{number % 2}.om")
        with open(path, "w") as out:
            for k, (name, rows) in enumerate(counters):
                if not ts:
                    break
                out.write(f"# TYPE {name} counter\n")
                prev = previous
                total, prefix = totals[k], prefixes[k]
                hourly_lines = []  # Its hourly series, written after its own lines.
                rollup_lines, margin_lines = [], []  # Per node and model; per GPU, the margin.
                rates, rates_hour = None, None
                for t in ts:
                    if t // 3600 != rates_hour:
                        rates_hour = t // 3600
                        rates = [rate(t) for _, rate in rows]
                    dt = 0 if prev is None else t - prev
                    for i, r in enumerate(rates):
                        total[i] += r * dt
                    out.write("".join([f"{p}{v:.3f} {t}\n" for p, v in zip(prefix, total)]))
                    samples += len(rows)
                    if hourly and t % 3600 == 0:
                        # The growth since the last whole hour, with the labels the rules keep.
                        deltas = [v - h for v, h in zip(total, at_hour[k])]
                        hourly_lines += [f"{p}{d:.3f} {t}\n" for p, d in zip(hourly_prefixes[k], deltas)]
                        more, margins = hourly_lines_of(rolled[k], deltas, t)
                        rollup_lines += more
                        margin_lines += margins
                        at_hour[k] = list(total)
                    prev = t
                if hourly_lines:
                    out.write(f"# TYPE {HOURLY[name]} gauge\n")
                    out.write("".join(hourly_lines))
                    out.write(f"# TYPE {ROLLUP[name][0]} gauge\n")
                    out.write("".join(rollup_lines))
                    samples += len(hourly_lines) + len(rollup_lines)
                if margin_lines:
                    out.write(f"# TYPE {MARGIN} gauge\n")
                    out.write("".join(margin_lines))
                    samples += len(margin_lines)
            if ts:
                previous = ts[-1]
            hours = [t for t in ts if t % 3600 == 0] if hourly else []
            if hours:
                out.write("# TYPE tarmac:report_rules_version gauge\n")
                out.write("".join(f"tarmac:report_rules_version {RULES_VERSION} {t}\n" for t in hours))
            if rs:
                samples += write_gauges(out, gauges, rs)
            out.write("# EOF\n")
        if reader and reader.wait() != 0:
            raise SystemExit("fleet_scale: promtool tsdb create-blocks-from openmetrics failed")
        reader = subprocess.Popen(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", path, tsdb],
                                  stdout=subprocess.DEVNULL)
    if reader and reader.wait() != 0:
        raise SystemExit("fleet_scale: promtool tsdb create-blocks-from openmetrics failed")
    for number in range(2):
        if os.path.exists(os.path.join(work, f"window-{number}.om")):
            os.remove(os.path.join(work, f"window-{number}.om"))
    return series, samples


def measure(argv):
    """Wall seconds, CPU seconds and peak RSS (KiB) of one run."""
    launcher = os.environ.get("RUSAGE_RUN", f"{build}/bin/rusage_run")
    t0 = time.monotonic()
    out = subprocess.run([launcher] + argv, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if out.returncode != 0:
        raise SystemExit(f"fleet_scale: {' '.join(argv)} failed: {out.stderr}")
    user, system, rss = out.stdout.split()
    return wall, float(user) + float(system), int(rss)


def write_gauges(out, gauges, times):
    """The readings, marks and `up` at each of `times`, as OpenMetrics lines;
    returns how many samples."""
    samples = 0
    for name, rows in gauges:
        out.write(f"# TYPE {name} gauge\n")
        for t in times:
            out.write("".join(f"{name}{{{labels}}} {value(t)} {t}\n" for labels, value in rows))
            samples += len(rows)
    return samples


def write_recent(tsdb, now, fleet):
    """The readings, marks and `up` from half an hour before `now` to a
    quarter hour after it, as new blocks of `tsdb` (one file per two hours,
    as build_tsdb writes them); says how long it took."""
    t0 = time.monotonic()
    _, gauges = families(fleet)
    recent = list(range(now - 1800, now + 900, 60))
    path = os.path.join(work, "recent.om")
    for w in range(recent[0] - recent[0] % 7200, recent[-1] + 1, 7200):
        rs = [t for t in recent if w <= t < w + 7200]
        with open(path, "w") as out:
            write_gauges(out, gauges, rs)
            out.write("# EOF\n")
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", path, tsdb], check=True,
                       stdout=subprocess.DEVNULL)
    os.remove(path)
    print(f"fleet_scale: the readings around now written by promtool in {time.monotonic() - t0:.0f} s")


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def snappy_literals(data):
    """`data` as a snappy block of literals only (the format's uncompressed
    form, which every snappy reader takes): its length, then chunks of at
    most 64 KiB, each a tag with a two-byte length."""
    out = [varint(len(data))]
    for i in range(0, len(data), 65536):
        chunk = data[i:i + 65536]
        out.append(bytes([61 << 2]) + (len(chunk) - 1).to_bytes(2, "little") + chunk)
    return b"".join(out)


LABEL = re.compile(r'(\w+)="([^"]*)"')


def remote_write_recent(url, now, fleet):
    """The readings from five minutes before `now` to a quarter hour after
    it, every 60 s, sent to Prometheus' remote-write receiver: in its head,
    where a server that scrapes the agents has the present (promtool's
    blocks, which status and idle would otherwise read, are on disk).
    Returns how many samples."""
    _, gauges = families(fleet)
    times = list(range(now - 300, now + 900, 60))
    stamps = [varint(t * 1000) for t in times]
    samples, batch, size = 0, [], 0

    def send(batch):
        body = snappy_literals(b"".join(batch))
        request = urllib.request.Request(f"{url}/api/v1/write", data=body, method="POST", headers={
            "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
            "X-Prometheus-Remote-Write-Version": "0.1.0"})
        urllib.request.urlopen(request, timeout=300).read()

    for name, rows in gauges:
        for labels, value in rows:
            pairs = sorted([("__name__", name)] + LABEL.findall(labels))
            encoded = b"".join(field(1, field(1, k.encode()) + field(2, v.encode())) for k, v in pairs)
            encoded += b"".join(field(2, b"\x09" + struct.pack("<d", float(value(t))) + b"\x10" + stamp)
                                for t, stamp in zip(times, stamps))
            series = field(1, encoded)
            batch.append(series)
            size += len(series)
            samples += len(times)
            if size > 4 << 20:
                send(batch)
                batch, size = [], 0
    if batch:
        send(batch)
    return samples


def log_size(log):
    return os.path.getsize(log) if os.path.exists(log) else 0


def query_stats(log, offset):
    """The query stats of the queries logged after `offset`: a line."""
    with open(log) as f:
        f.seek(offset)
        entries = [json.loads(line) for line in f if line.strip()]
    samples = [e["stats"].get("samples", {}) for e in entries]
    touched = sum(s.get("totalQueryableSamples", 0) for s in samples)
    peak = max((s.get("peakSamples", 0) for s in samples), default=0)
    busy = sum(e["stats"]["timings"]["execTotalTime"] for e in entries)
    if os.environ.get("FLEET_SCALE_QUERIES") == "1":  # Each query, costliest first.
        for e in sorted(entries, key=lambda e: -e["stats"]["timings"]["execTotalTime"]):
            print(f"    {e['stats']['timings']['execTotalTime']:7.3f} s "
                  f"{e['stats'].get('samples', {}).get('totalQueryableSamples', 0):>11,} samples  "
                  f"{e['params']['query'][:150]}")
    return (f"{len(entries)} queries: {touched:,} samples touched, at most {peak:,} held at once by one "
            f"(limit 50,000,000), {busy:.2f} s in Prometheus")


def main():
    now = int(time.time())
    fleet = make_fleet()
    gpu_list = fleet
    # FLEET_SCALE_TSDB=DIR keeps the TSDB there (and reuses it when it is
    # there already: its "now" is then the time it was made).
    tsdb = os.environ.get("FLEET_SCALE_TSDB") or os.path.join(work, "tsdb")
    reused = os.path.isdir(tsdb)
    if reused:
        made = int(open(os.path.join(tsdb, "made_at")).read())
        print(f"fleet_scale: reusing {tsdb}, made at {made}")
        if HEAD:
            reused = False  # The readings around the present go to the head below.
        elif os.environ.get("FLEET_SCALE_REFRESH") == "1":
            # Readings around the present again, so that status and idle
            # read a live fleet; the report reads the week it was made with.
            write_recent(tsdb, now, fleet)
            reused = False
        now = made
    else:
        print(f"fleet_scale: {nodes} nodes x {gpus} GPUs x {days} days (counters every {step} s) into a TSDB")
        t0 = time.monotonic()
        series, samples = build_tsdb(tsdb, now, fleet)
        with open(os.path.join(tsdb, "made_at"), "w") as f:
            f.write(str(now))
        print(f"fleet_scale: {series} series, {samples} samples written by promtool in {time.monotonic() - t0:.0f} s")
        if time.time() - now > 600:
            # Writing took long enough that "now" has left the readings:
            # written again around the present, as FLEET_SCALE_REFRESH=1 does.
            write_recent(tsdb, int(time.time()), fleet)
    log = os.path.join(work, "queries.log")
    prom, url = serve_tsdb(work, tsdb, *(["--web.enable-remote-write-receiver"] if HEAD else []), query_log=log)
    try:
        if HEAD:
            t0 = time.monotonic()
            written = remote_write_recent(url, int(time.time()), fleet)
            print(f"fleet_scale: the readings around now ({written:,} samples) remote-written into Prometheus' "
                  f"head in {time.monotonic() - t0:.0f} s")
        # As a running server would have them: the two-hour blocks promtool
        # wrote compacted into larger ones (until their count settles).
        t0 = time.monotonic()
        counts = []
        while time.monotonic() - t0 < 900:
            counts.append(sum(1 for d in os.listdir(tsdb) if len(d) == 26 and d.isalnum()))
            # It compacts once a minute: unchanged over two minutes is done.
            if len(counts) >= 13 and len(set(counts[-13:])) == 1:
                break
            time.sleep(10)
        print(f"fleet_scale: Prometheus compacted the TSDB into {counts[-1]} blocks in {time.monotonic() - t0:.0f} s")
        tarmac = f"{build}/bin/tarmac-fleet"
        # The report over the week ending when the TSDB was made; status
        # and idle read "now", so only on a TSDB made by this run.
        week = ["--since", f"@{now - days * 86400}", "--until", f"@{now}"]
        commands = {
            "fleet status": [tarmac, "status", "--prometheus", url],
            "fleet status --json": [tarmac, "status", "--prometheus", url, "--json"],
            "fleet status --by node --json": [tarmac, "status", "--by", "node", "--prometheus", url, "--json"],
            "fleet idle --json": [tarmac, "idle", "--prometheus", url, "--json"],
            f"fleet report --since {days}d --by user": [tarmac, "report", "--prometheus", url, *week,
                                                        "--by", "user", "--json"],
            f"fleet report --since {days}d --by node": [tarmac, "report", "--prometheus", url, *week,
                                                        "--by", "node", "--json"],
        }
        # FLEET_SCALE_TIMEOUT=DURATION: each answer's timeout (tarmac's
        # default is 10 s), for fleets whose answers take longer.
        if os.environ.get("FLEET_SCALE_TIMEOUT"):
            for argv in commands.values():
                argv += ["--timeout", os.environ["FLEET_SCALE_TIMEOUT"]]
        seen_nodes, seen = nodes, nodes * gpus
        if reused:
            print("fleet_scale: reused: status and idle are not timed (the TSDB's readings are no longer now)")
            commands = {name: argv for name, argv in commands.items() if "report" in name}
        else:  # What the commands see: every node and GPU.
            status = json.loads(subprocess.run(commands["fleet status --json"], capture_output=True, text=True,
                                               check=True).stdout)
            seen_nodes, seen = len(status["nodes"]), sum(len(n["gpus"]) for n in status["nodes"])
            up = sum(1 for n in status["nodes"] if n["up"])
            if seen_nodes != nodes or seen != nodes * gpus or up != nodes:
                raise SystemExit(f"fleet_scale: fleet status saw {seen_nodes} nodes ({up} up), {seen} GPUs")
        answer = subprocess.run(commands[f"fleet report --since {days}d --by node"], capture_output=True, text=True)
        if answer.returncode != 0:
            raise SystemExit(f"fleet_scale: fleet report failed: {answer.stderr.strip()}")
        report = json.loads(answer.stdout)
        if os.environ.get("FLEET_SCALE_DEBUG"):
            for q in [f"sum by (state) (increase(tarmac_gpu_state_seconds_total[{days}d]))",
                      "count(tarmac_gpu_state_seconds_total)"]:
                a = json.load(urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": q})))
                print(q, a["data"]["result"])
            print(json.dumps(report["total"]))
        print(f"fleet_scale: {seen_nodes} nodes, {seen} GPUs seen; the report reads "
              f"{report['total']['busy_hours'] + report['total']['idle_hours'] + report['total']['held_idle_hours']:.0f}"
              f" GPU-hours from the {report.get('read_from', 'raw counters')}")
        # FLEET_SCALE_ONLY=WORD,...: only the commands whose name has one
        # of the words (`idle`, `status`, `report`).
        if os.environ.get("FLEET_SCALE_ONLY"):
            words = os.environ["FLEET_SCALE_ONLY"].split(",")
            commands = {name: argv for name, argv in commands.items() if any(w in name for w in words)}
        # FLEET_SCALE_BASELINE=PATH: another tarmac-fleet (an earlier
        # build) timed right after this one, each command in turn.
        baseline = os.environ.get("FLEET_SCALE_BASELINE")
        if baseline:
            help_text = subprocess.run([baseline, "status", "--help"], capture_output=True, text=True).stdout
            for name in list(commands):
                if "--by node" in name and "status" in name and "--by" not in help_text:
                    continue  # A view builds before 2026-12-07 do not have.
                commands[f"{name} (baseline)"] = [baseline] + commands[name][1:]
            commands = dict(sorted(commands.items(), key=lambda kv: kv[0].replace(" (baseline)", "")))
        for name, argv in commands.items():
            walls, cpus, rss = [], [], []
            for _ in range(runs):
                w, c, r = measure(argv)
                walls.append(w)
                cpus.append(c)
                rss.append(r)
            print(f"{name:<34} wall median {statistics.median(walls):6.2f} s  max {max(walls):6.2f} s  "
                  f"CLI CPU {statistics.median(cpus):5.2f} s  peak RSS {max(rss) / 1024:6.1f} MiB")
            offset = log_size(log)
            measure(argv)
            print(f"{'':<34} {query_stats(log, offset)}")
        # The naive way: one range query per GPU over the days, the increase
        # of each state summed by the client (FLEET_SCALE_NAIVE=0: not run).
        if os.environ.get("FLEET_SCALE_NAIVE") == "0":
            return
        offset = log_size(log)
        t0 = time.monotonic()
        busy = 0.0
        last = now - now % step
        first = last - days * 86400
        # Prometheus answers at most 11,000 points a series: a coarser step where the week has more.
        every = max(step, -(-days * 86400 // 10000))
        for host, g, uuid, *_ in gpu_list:
            query = urllib.parse.urlencode({"query": f'tarmac_gpu_state_seconds_total{{uuid="{uuid}"}}',
                                            "start": first, "end": last, "step": every})
            answer = json.load(urllib.request.urlopen(f"{url}/api/v1/query_range?{query}", timeout=60))
            for s in answer["data"]["result"]:
                values = [float(v) for _, v in s["values"]]
                if s["metric"]["state"] == "busy" and values:
                    busy += values[-1] - values[0]
        naive = time.monotonic() - t0
        print(f"{'naive: one range query per GPU':<34} wall {naive:6.2f} s  ({len(gpu_list)} queries; busy "
              f"{busy / 3600:.0f} GPU-hours against the report's {report['total']['busy_hours']:.0f})")
        print(f"{'':<34} {query_stats(log, offset)}")
    finally:
        prom.terminate()
        prom.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
