#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The web console's figures, on a simulated node of GPUS GPUs (a load on
every fourth), in Debian's headless Chromium driven over the DevTools
protocol (tests/e2e/cdp.py):

- first render of the Now page (ms from navigation until every GPU's card
  is on screen), cold (a new browser profile each run) and warm (a reload:
  the assets answered 304 from the browser's cache);
- sample-to-screen latency: for each sample the page draws, the time from
  the sample's `taken_at` to the drawing (same machine, same clock);
- the agent's CPU (% of one core, from /proc) over SECONDS with no client,
  and with STREAMS event streams open (what STREAMS open pages hold), side
  by side; the agent's RSS before and after the streams' run;
- with SOAK_MINUTES, the streams stay open that long more and the agent's
  RSS is read every 5 s: the median of each minute, the growth from the
  first minute to the last and the trend, and the same from the third
  minute, once the streams have settled in (target: none).

Usage: web_console.py BUILD_DIR [GPUS] [SECONDS] [STREAMS] [RUNS] [SOAK_MINUTES]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

build = sys.argv[1]
gpus = int(sys.argv[2]) if len(sys.argv) > 2 else 64
seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
streams = int(sys.argv[4]) if len(sys.argv) > 4 else 20
runs = int(sys.argv[5]) if len(sys.argv) > 5 else 5
soak_minutes = int(sys.argv[6]) if len(sys.argv) > 6 else 0
source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(source, "tests", "e2e"))
from cdp import Browser  # noqa: E402
from e2e_util import cpu_seconds, free_port, status_mib, stop_all, wait_until  # noqa: E402

work = tempfile.mkdtemp(prefix="tarmac-web-bench-")
children = []
bin_dir = os.path.join(build, "bin")
scenario = os.path.join(work, "scenario.toml")
with open(scenario, "w") as f:
    f.write(f"[[gpu]]\ncount = {gpus}\n")
env = dict(os.environ, TARMAC_SIM_SCENARIO=scenario, TARMAC_SIM_DIR=os.path.join(work, "world"),
           TARMAC_NVML_LIBRARY=os.path.join(build, "fakenvml/libnvidia-ml.so.1"))


def rss_mib(pid):
    return status_mib(pid, "VmRSS")


def agent_cpu(pid, span):
    """% of one core the agent used over `span` seconds."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(span)
    return 100 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def read_stream(url, stop):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            while not stop.is_set():
                if not r.read1(65536):
                    return
    except Exception:  # The agent went at the end of the run.
        return


def main():
    for i in range(0, gpus, 4):
        load = subprocess.Popen([os.path.join(bin_dir, "tarmac-simload"), "--memory", "4GiB", "--util", "60"],
                                env=dict(env, CUDA_VISIBLE_DEVICES=str(i)), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        children.append(load)
    port = free_port()
    agent = subprocess.Popen([os.path.join(bin_dir, "tarmac"), "agent", "--socket", os.path.join(work, "t.sock"),
                              "--state-dir", os.path.join(work, "state"), "--http-listen", f"127.0.0.1:{port}"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(agent)
    url = f"http://127.0.0.1:{port}/"

    def serving():
        try:
            urllib.request.urlopen(url + "api/v1/leases", timeout=1)
            return True
        except OSError:
            return False
    wait_until("the agent", serving)
    time.sleep(3)  # Every load seen.
    shots = os.path.join(work, "shots")

    def first_render(browser):
        return wait_until("every card", lambda: browser.eval(
            f"document.querySelectorAll('.gpu').length === {gpus} && tarmacConsole.probe.firstRenderMs"))

    cold, warm = [], []
    for i in range(runs):
        browser = Browser(work, children, shots, profile=f"cold-{i}")
        browser.open(url)
        cold.append(first_render(browser))
        browser.close()
    browser = Browser(work, children, shots, profile="warm")
    browser.open(url)
    first_render(browser)
    for _ in range(runs):
        browser.call("Page.reload", {}, browser.session)
        time.sleep(0.2)
        warm.append(first_render(browser))
    print(f"web console, {gpus} GPUs: first render of the Now page (ms from navigation, {runs} runs)")
    print(f"  cold (a new profile)   median {statistics.median(cold):6.0f}  max {max(cold):6.0f}")
    print(f"  warm (a reload)        median {statistics.median(warm):6.0f}  max {max(warm):6.0f}")
    # Where the last reload's time went (ms since navigation).
    timeline = browser.eval("(() => { const p = tarmacConsole.probe; const n = performance.getEntriesByType("
                            "'navigation')[0]; return [n.responseEnd, p.script, p.open, p.status, p.parsed, "
                            "p.firstRenderMs].map(x => Math.round(x)); })()")
    print("  the last reload: page {} · script {} · stream open {} · first sample {} · parsed {} · "
          "cards {}".format(*timeline))

    # Sample to screen: the page open for the run.
    browser.eval("tarmacConsole.probe.lagsMs.splice(0).length")
    time.sleep(seconds)
    lags = sorted(browser.eval("tarmacConsole.probe.lagsMs"))
    p99 = lags[min(len(lags) - 1, int(0.99 * len(lags)))]
    print(f"sample-to-screen latency over {len(lags)} samples (sampling every 1000 ms): median "
          f"{statistics.median(lags):.0f} ms, p99 {p99:.0f} ms, max {max(lags):.0f} ms")
    browser.close()

    idle = agent_cpu(agent.pid, seconds)
    rss_before = rss_mib(agent.pid)
    stop = threading.Event()
    readers = [threading.Thread(target=read_stream, args=(url + "api/v1/stream", stop), daemon=True)
               for _ in range(streams)]
    for r in readers:
        r.start()
    time.sleep(2)
    with_streams = agent_cpu(agent.pid, seconds)
    rss_after = rss_mib(agent.pid)
    print(f"agent CPU over {seconds} s: no client {idle:.2f} % of a core; {streams} streams open {with_streams:.2f} % "
          f"(+{with_streams - idle:.2f}); RSS {rss_before:.1f} MiB before the streams, {rss_after:.1f} MiB after "
          f"(+{rss_after - rss_before:.1f})", flush=True)
    if soak_minutes:
        # RSS every 5 s; each minute stands as the median of its twelve
        # readings. A single reading moves by up to 1 MiB with what the
        # agent is doing at that instant (a sample's transient blocks, the
        # minute's fold of the history, freed pages not yet released), so
        # one reading against another says little about growth.
        series, readings = [], []
        for _ in range(soak_minutes):
            minute = []
            for _ in range(12):
                time.sleep(5)
                minute.append(rss_mib(agent.pid))
            series.append(statistics.median(minute))
            readings += minute
        alive = sum(r.is_alive() for r in readers)

        def trend(values):
            """The least-squares slope of the minutes, MiB per 10 min."""
            mean_t, mean_v = (len(values) - 1) / 2, statistics.mean(values)
            return 10 * (sum((t - mean_t) * (v - mean_v) for t, v in enumerate(values))
                         / max(sum((t - mean_t) ** 2 for t in range(len(values))), 1))
        # The streams' first two minutes are their settling in (the RSS
        # with twenty pages, above); from the third on, any growth is the
        # soak's.
        settled = series[2:] if len(series) > 3 else series
        print(f"soak: {streams} streams ({alive} still open) for {soak_minutes} min; RSS each minute (MiB, the median "
              "of 12 readings): " + " ".join(f"{v:.2f}" for v in series)
              + f"; growth (last minute against the first) {series[-1] - series[0]:+.2f} MiB, "
              f"trend {trend(series):+.2f} MiB per 10 min; from the third minute {settled[-1] - settled[0]:+.2f} MiB, "
              f"trend {trend(settled):+.2f} MiB per 10 min, range {max(settled) - min(settled):.2f} MiB; "
              f"single readings {min(readings):.1f} to {max(readings):.1f} MiB")
    stop.set()


try:
    main()
finally:
    stop_all(children)
    shutil.rmtree(work, ignore_errors=True)
