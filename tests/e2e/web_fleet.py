#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The web console's fleet page in a real browser, against a real
Prometheus (the Debian package) scraping three agents on different
simulated machines (lab-8gpu, a MIG lab, a small box).

node-a's agent names that Prometheus in [fleet] prometheus_url; its
console's Fleet page must show the three nodes, each GPU as tarmac fleet
status says, the held-idle GPU as held, each node linking to its own
console, and the fleet report by node. node-c's agent then stops: the page
must show it down. /api/v1/fleet answers what `tarmac fleet status --json`
does; an agent without [fleet] says what is missing. With
FLEET_STORE=victoria-metrics the store is VictoriaMetrics scraping the
agents itself (e2e.web_fleet_victoria).

Usage: web_fleet.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from e2e_util import victoria_metrics, check, free_port, stop_all, wait_until  # noqa: E402

build, source = sys.argv[1], sys.argv[2]
bin_dir = os.path.join(build, "bin")
work = tempfile.mkdtemp(prefix="tarmac-web-fleet-")
children = []
base_env = dict(os.environ, TARMAC_NVML_LIBRARY=os.path.join(build, "fakenvml/libnvidia-ml.so.1"))
base_env.pop("TARMAC_PROMETHEUS_URL", None)


def node_env(name, scenario):
    return dict(base_env, TARMAC_SIM_SCENARIO=os.path.join(source, "examples/scenarios", scenario),
                TARMAC_SIM_DIR=os.path.join(work, name, "world"))


def get(url):
    """(status, body) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:  # Not listening (yet).
        return 0, str(e)


def start_node(name, scenario, extra_config=""):
    """An agent of its own (world, socket, state, HTTP port, host label);
    returns (process, HTTP port)."""
    d = os.path.join(work, name)
    os.makedirs(d)
    port = free_port()
    with open(os.path.join(d, "agent.toml"), "w") as f:
        f.write(f'[sampler]\nfast_interval = "200ms"\n[http]\nhostname = "{name}"\n[doctor]\nenabled = false\n'
                + extra_config)
    log = open(os.path.join(d, "agent.log"), "w")
    agent = subprocess.Popen([os.path.join(bin_dir, "tarmac"), "agent", "--backend", "nvml", "--config",
                              os.path.join(d, "agent.toml"), "--socket", os.path.join(d, "t.sock"), "--state-dir",
                              os.path.join(d, "state"), "--http-listen", f"127.0.0.1:{port}"],
                             env=node_env(name, scenario), stdout=log, stderr=log)
    children.append(agent)
    wait_until(f"{name}'s HTTP", lambda: get(f"http://127.0.0.1:{port}/health")[0] == 200, name="web_fleet")
    return agent, port


def prom_query(prom_port, query):
    status, body = get(f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
    if status != 200:
        return None
    result = json.loads(body)["data"]["result"]
    return float(result[0]["value"][1]) if result else 0


def fleet_cli(prom_port, *args):
    out = subprocess.run([os.path.join(bin_dir, "tarmac"), "fleet", *args, "--prometheus",
                          f"http://127.0.0.1:{prom_port}"], env=base_env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"web_fleet: tarmac fleet {' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout)


def main():
    prom_port = free_port()
    _, port_a = start_node("node-a", "lab-8gpu.toml", f'[fleet]\nprometheus_url = "http://127.0.0.1:{prom_port}"\n')
    _, port_b = start_node("node-b", "mig-lab.toml")
    agent_c, port_c = start_node("node-c", "small.toml")
    # A job on node-a holding 3 GiB at 0 % SM: a held-idle GPU.
    load = subprocess.Popen([os.path.join(bin_dir, "tarmac-simload"), "--memory", "3GiB", "--util", "0"],
                            env=dict(node_env("node-a", "lab-8gpu.toml"), CUDA_VISIBLE_DEVICES="2"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(load)

    # Before Prometheus answers: the fleet routes say it cannot be reached.
    status, body = get(f"http://127.0.0.1:{port_a}/api/v1/fleet")
    check(status == 502 and f"127.0.0.1:{prom_port}" in body,
          f"with Prometheus down /api/v1/fleet answers 502 naming it: {status} {body.strip()}", "web_fleet")
    # An agent without [fleet] says what it needs.
    status, body = get(f"http://127.0.0.1:{port_b}/api/v1/fleet")
    check(status == 404 and "[fleet] prometheus_url" in body,
          f"without [fleet] /api/v1/fleet answers 404 saying what is missing: {body.strip()}", "web_fleet")

    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        targets = ", ".join(f"'127.0.0.1:{p}'" for p in (port_a, port_b, port_c))
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: tarmac\n"
                f"    static_configs:\n      - targets: [{targets}]\n")
    prom_log = open(os.path.join(work, "prometheus.log"), "w")
    if os.environ.get("FLEET_STORE") == "victoria-metrics":
        # The same scrape config, read by VictoriaMetrics' own scraper (its
        # newest second hidden from queries, not its default 30 s).
        store = victoria_metrics(work, prom_port, f"-promscrape.config={work}/prometheus.yml")
    else:
        store = ["prometheus", f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/tsdb",
                 f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"]
    children.append(subprocess.Popen(store, stdout=prom_log, stderr=prom_log))
    wait_until("three nodes up and the held-idle GPU in Prometheus",
               lambda: prom_query(prom_port, "count(up == 1)") == 3
               and prom_query(prom_port, "sum(tarmac_gpu_held_idle)") == 1, tries=900, name="web_fleet")

    # Two scrapes of every node, so the report's counters have a rise.
    wait_until("two scrapes of every node", lambda: prom_query(prom_port, "count(count_over_time(up[1m]) >= 2)") == 3,
               tries=900, name="web_fleet")
    # The API answers what the CLI does.
    api = json.loads(get(f"http://127.0.0.1:{port_a}/api/v1/fleet")[1])
    cli = fleet_cli(prom_port, "status", "--json")
    for key in ("taken_at_unix",):
        api.pop(key)
        cli.pop(key)
    strip = lambda f: [(n["name"], n["up"], [(g["index"], g["uuid"], g["memory_total_bytes"]) for g in n["gpus"]])
                       for n in f["nodes"]]
    check(strip(api) == strip(cli) and api["totals"]["gpus"] == cli["totals"]["gpus"],
          f"/api/v1/fleet has the nodes and GPUs tarmac fleet status --json has ({api['totals']['line']})", "web_fleet")
    filtered = json.loads(get(f"http://127.0.0.1:{port_a}/api/v1/fleet?node=node-b")[1])
    check([n["name"] for n in filtered["nodes"]] == ["node-b"], "?node=REGEX keeps only the matching nodes", "web_fleet")
    status, body = get(f"http://127.0.0.1:{port_a}/api/v1/fleet?node=(")
    check(status == 400 and "regular expression" in body, "a bad ?node= is refused with 400", "web_fleet")
    status, _ = get(f"http://127.0.0.1:{port_a}/api/v1/fleet/report?by=everyone")
    check(status == 400, "a bad ?by= is refused with 400", "web_fleet")

    # Every node in the week's report (its counters have risen twice).
    wait_until("three nodes in the fleet report",
               lambda: len(fleet_cli(prom_port, "report", "--since", "7d", "--by", "node", "--json")["rows"]) == 3,
               tries=900, name="web_fleet")
    browser = Browser(work, children, os.path.join(build, "web-screenshots"))
    browser.open(f"http://127.0.0.1:{port_a}/#fleet")
    try:
        wait_until("three nodes on the page",
                   lambda: browser.eval("document.querySelectorAll('.fleet-node').length") == 3, tries=600,
                   name="web_fleet")
    except SystemExit:
        print(browser.eval("document.getElementById('main').textContent"), browser.problems())
        raise
    for name, port in (("node-a", port_a), ("node-b", port_b), ("node-c", port_c)):
        node = next(n for n in cli["nodes"] if n["name"] == name)
        cells = browser.eval(f"document.querySelectorAll('.fleet-node[data-node=\"{name}\"] .cell').length")
        check(cells == len(node["gpus"]), f"{name} shows its {cells} GPUs", "web_fleet")
        href = browser.eval(f"document.querySelector('.fleet-node[data-node=\"{name}\"] a').getAttribute('href')")
        check(href == f"http://127.0.0.1:{port}/", f"{name} links to its own console ({href})", "web_fleet")
    # An instance label is whatever a scrape configuration says: a link only
    # to a plain HOST:PORT, never elsewhere.
    for instance, want in (("127.0.0.1:9477", "http://127.0.0.1:9477/"), ("node-7:9477", "http://node-7:9477/"),
                           ("[::1]:9477", "http://[::1]:9477/"), ("evil.example/phish?x=", None),
                           ("user@evil.example:80", None), ("javascript:alert(1)", None), ("a:99999", None),
                           ("evil.example:80/x", None), ("", None), ("x:1#y", None)):
        got = browser.eval(f"import('./console/fleet.js').then(m => m.nodeConsoleUrl({json.dumps(instance)}))",
                           awaits=True)
        check(got == want, f"instance {instance!r} links to {want!r} (got {got!r})", "web_fleet")
    held = browser.eval("document.querySelector('.fleet-node[data-node=\"node-a\"] .cell[data-gpu=\"2\"]').textContent")
    check(held == "held", "node-a's GPU 2 shows as held (idle, its memory held)", "web_fleet")
    totals = browser.eval("document.getElementById('fleet-totals').textContent")
    check(totals.startswith(cli["totals"]["line"]), f"the totals line is tarmac fleet status's: {totals!r}", "web_fleet")
    idle = wait_until("the idle list", lambda: browser.eval("document.getElementById('fleet-idle').textContent"),
                      name="web_fleet")
    check("held idle" in idle and "node-a" in idle, "the idle-now list names the held-idle GPU", "web_fleet")
    check("1 process, 3.0 GiB" in idle, f"and who holds it, as tarmac fleet idle says: {idle[-120:]!r}", "web_fleet")
    rows = wait_until("the fleet report", lambda: browser.eval(
        "[...document.querySelectorAll('#fleet-report tr[data-node]')].map(r => r.dataset.node)"), tries=900,
        name="web_fleet")
    report = fleet_cli(prom_port, "report", "--since", "7d", "--by", "node", "--json")
    # Each node's GPU time as tarmac fleet report prints it (common/units.h FormatHours).
    def hours(h):
        return f"{h:.1f}h" if h >= 0.995 else f"{round(h * 60)}m" if h * 60 >= 0.5 else "<1m" if h > 0 else "0"
    cells = browser.eval("Object.fromEntries([...document.querySelectorAll('#fleet-report tr[data-node]')]"
                         ".map(r => [r.dataset.node, r.cells[2].textContent]))")
    want = {r["key"]: hours(r["busy_hours"]) for r in report["rows"]}
    check(cells == want, f"busy time as the CLI prints it: {cells} for {want}", "web_fleet")
    check(sorted(rows) == sorted(r["key"] for r in report["rows"]),
          f"the report's rows are tarmac fleet report's: {rows}", "web_fleet")
    browser.screenshot("fleet")

    # node-c stops: the page shows it down (Prometheus marks it at its next
    # scrape; the page asks again every 10 s).
    agent_c.terminate()
    agent_c.wait(timeout=30)
    wait_until("node-c down on the page", lambda: browser.eval(
        "document.querySelector('.fleet-node[data-node=\"node-c\"]').dataset.up") == "false", tries=900,
        name="web_fleet")
    text = browser.eval("document.querySelector('.fleet-node[data-node=\"node-c\"]').textContent")
    check("DOWN since" in text, f"node-c shows as down with since when: {text!r}", "web_fleet")
    check("1 node down" in browser.eval("document.getElementById('fleet-totals').textContent"),
          "the totals count it", "web_fleet")
    check(not browser.problems(), f"no error on the page: {browser.problems()}", "web_fleet")


try:
    main()
finally:
    stop_all(children)
    shutil.rmtree(work, ignore_errors=True)
