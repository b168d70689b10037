#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bytes on disk per node: what one agent's series cost Prometheus and
VictoriaMetrics.

Usage: store_bytes.py BUILD_DIR [MINUTES]

Runs an agent on the simulated 8-GPU lab (fake NVML, 1 s ticks) with GPU
processes on six of the GPUs (steady, bursty and idle ones, at several
loads), and the Debian packages' Prometheus and VictoriaMetrics both
scraping its /metrics every second for MINUTES (default 12: enough samples
per series, 720, for the stores' compression to settle).

Prometheus is told to cut a block every 5 minutes
(--storage.tsdb.min-block-duration, a flag kept for tests), so its blocks
are on disk within the run: their meta.json counts samples and series, and
their chunks and index are measured apart. VictoriaMetrics is flushed and
its partition merged (/internal/force_flush, /internal/force_merge), and its
own /metrics count its rows and bytes.

Prints bytes per sample on each, and what a node scraped every 15 s adds a
day (its series on /metrics x 5,760 samples). The values move at every
1 s tick here, as they would between 15 s scrapes; a counter's step is 15
times bigger at 15 s, which costs a few more bits a sample in Prometheus'
XOR encoding (bench/README.md compares with fleet_scale.py's 15 s week).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
import agent_api  # noqa: E402
from e2e_util import free_port, stop_all, victoria_metrics, wait_until  # noqa: E402

build = sys.argv[1]
minutes = float(sys.argv[2]) if len(sys.argv) > 2 else 12
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
work = tempfile.mkdtemp(prefix="tarmac-store-bytes-")
env = dict(os.environ, TARMAC_SIM_SCENARIO=f"{root}/examples/scenarios/lab-8gpu.toml", TARMAC_SIM_DIR=work)
LOADS = [("0", ["--util", "92", "--memory", "60GiB"]), ("1", ["--util", "92", "--memory", "60GiB"]),
         ("2", ["--pattern", "idle", "--memory", "20GiB"]), ("3", ["--pattern", "bursty", "--util", "80"]),
         ("4", ["--pattern", "bursty", "--util", "60"]), ("5", ["--util", "35", "--memory", "12GiB"])]


def get(url):
    return urllib.request.urlopen(url, timeout=60).read().decode()


def wait_for(what, predicate, seconds=120):
    """wait_until, with a server that does not answer yet as not ready."""
    def ready():
        try:
            return predicate()
        except OSError:
            return False
    wait_until(what, ready, tries=seconds * 2, pause=0.5, name="store_bytes")


def prometheus_blocks(tsdb):
    """(samples, series, chunk bytes, index bytes) of the blocks on disk."""
    samples = series = chunks = index = 0
    for block in os.listdir(tsdb):
        meta = os.path.join(tsdb, block, "meta.json")
        if not os.path.exists(meta):
            continue
        stats = json.load(open(meta))["stats"]
        samples += stats["numSamples"]
        series += stats["numSeries"]
        folder = os.path.join(tsdb, block, "chunks")
        chunks += sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
        index += os.path.getsize(os.path.join(tsdb, block, "index"))
    return samples, series, chunks, index


def victoria_figures(url):
    """(rows, data bytes, index bytes) from VictoriaMetrics' own metrics."""
    text = get(f"{url}/metrics")

    def total(name, prefix):
        return sum(float(v) for t, v in re.findall(rf'^{name}{{type="([^"]+)"}} (\S+)$', text, re.M)
                   if t.startswith(prefix))
    return (total("vm_rows", "storage/"), total("vm_data_size_bytes", "storage/"),
            total("vm_data_size_bytes", "indexdb"))


def main():
    children = []
    try:
        for gpu, args in LOADS:
            children.append(subprocess.Popen([f"{build}/bin/tarmac-simload", *args],
                                             env=dict(env, CUDA_VISIBLE_DEVICES=gpu), stderr=subprocess.DEVNULL))
        log = open(f"{work}/agent.log", "w")
        children.append(subprocess.Popen([f"{build}/bin/tarmacd", "--backend", "nvml", "--nvml-library",
                                          f"{build}/fakenvml/libnvidia-ml.so.1", "--socket", f"{work}/t.sock",
                                          "--state-dir", f"{work}/state", "--http-listen", "127.0.0.1:0"],
                                         env=env, stderr=log))
        agent = f"127.0.0.1:{agent_api.http_port(f'{work}/agent.log')}"
        wait_for("the agent's first sample", lambda: "tarmac_gpu_info{" in get(f"http://{agent}/metrics"))
        series = len([line for line in get(f"http://{agent}/metrics").splitlines() if not line.startswith("#")])
        config = os.path.join(work, "scrape.yml")
        with open(config, "w") as f:
            f.write(f"global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tarmac\n"
                    f"    static_configs:\n      - targets: ['{agent}']\n")
        tsdb = os.path.join(work, "tsdb")
        prom_port, vm_port = free_port(), free_port()
        children.append(subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--storage.tsdb.min-block-duration=5m",
             "--storage.tsdb.max-block-duration=5m", "--log.level=error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        vm = f"http://127.0.0.1:{vm_port}"
        children.append(subprocess.Popen(victoria_metrics(work, vm_port, f"-promscrape.config={config}"),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        print(f"store_bytes: an 8-GPU node's {series} series, scraped every second by Prometheus and "
              f"VictoriaMetrics for {minutes:.0f} min")
        time.sleep(minutes * 60)
        # Prometheus cuts a block of the head's first 5 minutes once it spans 7.5.
        wait_for("Prometheus' first block", lambda: prometheus_blocks(tsdb)[0] > 0, seconds=180)
        get(f"{vm}/internal/force_flush")
        get(f"{vm}/internal/force_merge?partition_prefix={time.strftime('%Y_%m', time.gmtime())}")
        time.sleep(10)
        samples, block_series, chunks, index = prometheus_blocks(tsdb)
        rows, data, vm_index = victoria_figures(vm)
        per_day = series * 86400 / 15
        print(f"Prometheus:      {samples:,} samples of {block_series:,} series in its blocks: chunks "
              f"{chunks / samples:.2f} bytes a sample, index {index / block_series:.0f} bytes a series a block")
        print(f"VictoriaMetrics: {rows:,.0f} rows: data {data / rows:.2f} bytes a sample, index "
              f"{vm_index / 1024:.0f} KiB in all")
        print(f"a node a day at 15 s ({per_day / 1e6:.1f} M samples): Prometheus {chunks / samples * per_day / 1e6:.1f}"
              f" MB of chunks (+ {index / block_series * series * 12 / 1e6:.1f} MB of index as 2-hour blocks, less "
              f"once compacted), VictoriaMetrics {data / rows * per_day / 1e6:.1f} MB")
    finally:
        stop_all(children)
        shutil.rmtree(work, ignore_errors=True)


main()
