#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The web console in a real browser.

A real agent over the fake NVML library serves the simulated lab. Headless
Chromium opens the console and is driven over the DevTools protocol. The
test reads what a user would see:

- every GPU's card, filled from the live stream;
- the lease on its GPU;
- a process named `<img src=x>`, which must show as text and never as markup;
- the page following the agent's samples.

It then stops and restarts the agent on the same port. The page must say
it is reconnecting, reconnect by itself and show a lease made after the
restart. It opens the GPU charts, the leases and events, the report and
the doctor; reaches a view with the keyboard; fits a phone's width. Last,
the agent asks for a token ([http] auth): the page must ask for it,
refuse a wrong one and open with the right one.

Usage: web_console.py BUILD_DIR SOURCE_DIR
"""
import json
import time
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from e2e_util import check, free_port, stop_all, wait_until  # noqa: E402


build, source = sys.argv[1], sys.argv[2]
bin_dir = os.path.join(build, "bin")
work = tempfile.mkdtemp(prefix="tarmac-web-")
env = dict(os.environ,
           TARMAC_SIM_SCENARIO=os.path.join(source, "examples/scenarios/lab-8gpu.toml"),
           TARMAC_SIM_DIR=os.path.join(work, "world"),
           TARMAC_NVML_LIBRARY=os.path.join(build, "fakenvml/libnvidia-ml.so.1"))
sock = os.path.join(work, "t.sock")
children = []


def tarmac(*args):
    out = subprocess.run([os.path.join(bin_dir, "tarmac"), *args, "--socket", sock], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"web_console: tarmac {' '.join(args)}: {out.stderr}")
    return out.stdout


def start_agent(port, extra=()):
    log = open(os.path.join(work, "agent.log"), "a")
    agent = subprocess.Popen([os.path.join(bin_dir, "tarmac"), "agent", "--socket", sock, "--state-dir",
                              os.path.join(work, "state"), "--http-listen", f"127.0.0.1:{port}", *extra],
                             env=env, stdout=log, stderr=log)
    children.append(agent)

    def answers():
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return True
        except OSError:
            return False
    wait_until("the agent's HTTP", answers)
    return agent


def main():
    port = free_port()
    # A process whose name is markup: it must show as text.
    hostile = os.path.join(work, "bin", "<img src=x>")
    os.makedirs(os.path.dirname(hostile))
    shutil.copy(os.path.join(bin_dir, "tarmac-simload"), hostile)
    load = subprocess.Popen([hostile, "--memory", "2GiB", "--util", "40"], env=dict(env, CUDA_VISIBLE_DEVICES="1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(load)
    loads = os.path.join(work, "world", "loads")
    wait_until("the load", lambda: os.path.isdir(loads) and any(f.startswith(f"{load.pid}-") for f in os.listdir(loads)))
    agent = start_agent(port)
    first = json.loads(tarmac("reserve", "--gpus", "1", "--for", "1h", "--json"))
    browser = Browser(work, children, os.path.join(build, "web-screenshots"))
    browser.open(f"http://127.0.0.1:{port}/")

    wait_until("8 GPU cards", lambda: browser.eval("document.querySelectorAll('.gpu').length") == 8)
    wait_until("the header to say live", lambda: browser.eval("document.getElementById('live').textContent") == "live")
    gpu = first["gpus"][0]
    card = f"document.querySelector('.gpu[data-gpu=\"{gpu}\"]').textContent"
    wait_until("the lease on its card", lambda: f"lease {first['id']} · root · reservation" in (browser.eval(card) or ""))
    check(True, f"GPU {gpu}'s card names lease {first['id']}, its owner and kind")
    names = wait_until("the hostile process's row", lambda: browser.eval(
        "[...document.querySelectorAll('.gpu[data-gpu=\"1\"] td')].map(td => td.textContent).join('|')")
        if "<img src=x>" in (browser.eval("document.querySelector('.gpu[data-gpu=\"1\"]').textContent") or "") else None)
    check("<img src=x>" in names, "a process named <img src=x> shows as text")
    check(browser.eval("document.querySelectorAll('main img').length") == 0, "and makes no image element")

    # A GPU drained by hand says so on its card, with who and why, as text.
    tarmac("drain", "5", "--reason", "fan <b>rattles</b>")
    wait_until("the drain on GPU 5's card", lambda: "DRAIN (drained by root: fan <b>rattles</b>)" in (
        browser.eval("document.querySelector('.gpu[data-gpu=\"5\"]').textContent") or ""))
    check(browser.eval("document.querySelectorAll('main b').length") == 0, "a drain's reason shows as text")
    tarmac("undrain", "5")

    # Every number on a card is the status's.
    status = json.loads(tarmac("status", "--json"))
    for g in status["gpus"]:
        text = browser.eval(f"document.querySelector('.gpu[data-gpu=\"{g['index']}\"]').textContent")
        total = f"{g['memory_total_bytes'] / 1024 ** 3:.1f} GiB"
        limit = f"/ {g['power_limit_milliwatts'] / 1000:.0f} W"
        for want in (g["name"], g["uuid"][:12], total, limit):
            check(want in text, f"GPU {g['index']}'s card shows {want!r}")
    # The load's utilization (40 %, as the simulated GPU reads it) as the
    # sample the page holds says it.
    shown = browser.eval("[document.querySelector('.gpu[data-gpu=\"1\"]').textContent, "
                         "tarmacConsole.state.status.gpus[1].utilization_gpu_ratio]")
    check(f"utilization{round(100 * shown[1])} %" in shown[0] and 0.3 <= shown[1] <= 0.5,
          f"GPU 1's card shows its load's utilization ({shown[1]:.2f})")
    browser.screenshot("now")

    # A load started now shows within two samples.
    started_at = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status"))["sequence"]
    newcomer = subprocess.Popen([os.path.join(bin_dir, "tarmac-simload"), "--memory", "1GiB", "--util", "20"],
                                env=dict(env, CUDA_VISIBLE_DEVICES="2"), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    children.append(newcomer)
    shown_at = wait_until("the new load on GPU 2's card", lambda: browser.eval(
        "document.querySelector('.gpu[data-gpu=\"2\"]').textContent.includes('tarmac-simload') "
        "&& tarmacConsole.state.status.sequence"), pause=0.02)
    check(shown_at <= started_at + 2, f"a load started at sample {started_at} shows at sample {shown_at}")

    # Live: the page follows the agent's samples, at most one behind.
    def in_step():
        agent_sequence = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status"))["sequence"]
        page_sequence = browser.eval("tarmacConsole.state.status.sequence")
        return page_sequence >= agent_sequence - 1
    wait_until("the page to be within one sample of the agent", in_step, tries=20)
    before = browser.eval("tarmacConsole.state.status.sequence")
    wait_until("a newer sample on the page", lambda: browser.eval("tarmacConsole.state.status.sequence") > before)
    check(True, "the page is within one sample of the agent and follows it")

    # Each sample replaces only the cards that would show something new: an
    # idle GPU's card is the same element three samples later (its energy
    # counter, which the card does not show, grows), a loaded one's is new.
    browser.eval("document.querySelectorAll('.gpu').forEach(c => { c.tarmacSeen = true; }); 0")
    seen_at = browser.eval("tarmacConsole.state.status.sequence")
    wait_until("three newer samples", lambda: browser.eval("tarmacConsole.state.status.sequence") >= seen_at + 3)
    kept = browser.eval("[...document.querySelectorAll('.gpu')].filter(c => c.tarmacSeen).map(c => c.dataset.gpu)")
    cards = browser.eval("document.querySelectorAll('.gpu').length")
    check(cards == 8 and "7" in kept and "1" not in kept, f"unchanged cards kept across samples ({kept} of {cards})")

    check(not browser.problems(), f"no error on the page so far: {browser.problems()}")
    # The agent restarts: the page says so, then reconnects by itself.
    restart_began = len(browser.events)
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=60)
    wait_until("the page to say it is reconnecting",
               lambda: "reconnecting" in (browser.eval("document.getElementById('live').textContent") or ""))
    check(True, "with the agent gone the header says it is reconnecting")
    agent = start_agent(port)
    second = json.loads(tarmac("reserve", "--gpus", "1", "--for", "1h", "--json"))
    card = f"document.querySelector('.gpu[data-gpu=\"{second['gpus'][0]}\"]').textContent"
    wait_until("the new lease on the page", lambda: f"lease {second['id']} · root" in (browser.eval(card) or ""))
    check(browser.eval("tarmacConsole.state.opens") >= 2, "the page reconnected by itself after the restart")
    wait_until("the header to say live again", lambda: browser.eval("document.getElementById('live').textContent") == "live")
    # While the agent was away only the stream's own reconnects failed.
    during = [p for p in browser.problems(restart_began) if "api/v1/stream" not in p and "ERR_CONNECTION_REFUSED" not in p
              and "net::ERR" not in p]
    check(not during, f"nothing but the stream failed while the agent restarted: {during}")
    after_restart = len(browser.events)
    tarmac("release", str(second["id"]))
    wait_until("the released lease to leave the page", lambda: f"lease {second['id']} ·" not in (browser.eval(card) or ""))
    check(True, f"lease {second['id']} leaves its card when released")
    summary = wait_until("the summary to count one lease",
                         lambda: "· 1 lease ·" in (browser.eval("document.getElementById('summary')?.textContent") or ""))
    check(summary, "the summary says '1 lease', not '1 leases'")

    # A GPU's charts from the history, its lease's grant on the time axis.
    browser.eval(f"location.hash = '#gpu/{gpu}'")
    wait_until("four charts", lambda: browser.eval("document.querySelectorAll('.chart canvas').length") == 4)
    util = '.chart[data-series="utilization_percent"]'
    points = browser.eval(f"Number(document.querySelector('{util}').dataset.points)")
    check(points > 0, f"GPU {gpu} has its four charts (uPlot), the utilization from {points} points of the history")
    # The window is the data's, not an hour of which most is before the agent.
    window = browser.eval(f"(() => {{ const d = document.querySelector('{util}').dataset; return d.to - d.from; }})()")
    check(0 <= window < 600, f"the charts' window is the data's own ({window:.0f} s), not the whole hour")
    # The charts follow the history while the view is open (each step of
    # its tier, 10 s at least), without a reload.
    shown_to = browser.eval(f"Number(document.querySelector('{util}').dataset.to)")
    wait_until("the charts to follow the history", lambda: browser.eval(
        f"Number(document.querySelector('{util}')?.dataset.to || 0)") > shown_to, tries=300)
    check(browser.eval("document.querySelectorAll('.chart canvas').length") == 4,
          "the charts follow the history while the view is open, four still")
    title = browser.eval(f"document.querySelector('{util} .u-title')?.textContent || ''")
    legend = browser.eval(f"document.querySelector('{util} .u-legend')?.textContent || ''")
    check(title == "utilization (%)" and "utilization" in legend, f"each chart says its unit: {title!r}, {legend[:40]!r}")
    marks = browser.eval(f"[...document.querySelectorAll('{util} .event')].map(e => e.title).join('|')")
    check("granted" in marks, f"the grant of lease {first['id']} is marked on its GPU's time axis")
    browser.screenshot("gpu")

    browser.eval("location.hash = '#leases'")
    rows = wait_until("the leases table", lambda: browser.eval("document.querySelectorAll('#leases tr').length"))
    check(rows == 2, f"the leases table has the lease left ({rows - 1} rows)")
    browser.screenshot("leases")
    browser.eval("location.hash = '#events'")
    events = wait_until("the events", lambda: browser.eval("document.getElementById('events')?.textContent"))
    check("granted" in events, "the events list the grants")
    browser.eval("location.hash = '#report'")
    verdict = wait_until("the report's verdict", lambda: browser.eval("document.getElementById('verdict')?.textContent"))
    check(len(verdict) > 10 and browser.eval("document.querySelectorAll('#report iframe').length") == 0
          and "format=html" in browser.eval("document.getElementById('report-html').href"),
          f"the report shows its verdict once, and links the HTML report with the heatmap: {verdict!r}")
    report = json.loads(tarmac("report", "--since", "7d", "--format", "json"))
    check(verdict == report["verdict"], "the report page's verdict is tarmac report's")
    owners = browser.eval("[...document.querySelectorAll('#report table tr')].slice(1).map(r => r.cells[0].textContent)")
    check(owners == [o["owner"] for o in report["owners"]], f"and so are its owners: {owners}")
    aligned = browser.eval("[...document.querySelectorAll('#report th')].map(t => getComputedStyle(t).textAlign)")
    check(aligned == ["left", "right", "right", "right"], f"the numbers' titles sit over them, right: {aligned}")
    browser.screenshot("report")
    browser.eval("location.hash = '#doctor'")
    findings = wait_until("the doctor's findings", lambda: browser.eval("document.querySelectorAll('.finding').length"))
    check(findings >= 1, f"the doctor shows {findings} findings of the simulated lab")
    text = browser.eval("document.getElementById('doctor').textContent")
    check("next:" in text and "evidence:" in text, "each with its evidence and next step")
    browser.screenshot("doctor")
    check(not browser.problems(after_restart), f"no error on any page: {browser.problems(after_restart)}")

    # The keyboard reaches every view: Tab to a link, Enter to follow it.
    browser.eval("location.hash = '#now'; document.activeElement.blur()")
    for _ in range(12):
        browser.press("Tab", "Tab", 9)
        if browser.eval("document.activeElement.textContent") == "Leases & queue":
            break
    check(browser.eval("document.activeElement.textContent") == "Leases & queue", "Tab reaches the Leases link")
    browser.press("Enter", "Enter", 13)
    wait_until("the leases view from the keyboard", lambda: browser.eval("location.hash") == "#leases")
    check(True, "Enter on it opens the leases view")
    # The desktop width: no text of any view overlaps other text.
    for view in ("now", "leases", "events", "gpu/0", "report", "doctor", "fleet"):
        browser.eval(f"location.hash = '#{view}'")
        wait_until(f"the {view} view", lambda: len(browser.eval("document.getElementById('main').textContent") or "") > 20)
        time.sleep(0.5)  # Its fetches and charts.
        overlaps = browser.overlaps()
        check(not overlaps, f"at the desktop's width no text of the {view} view overlaps other text: {overlaps}")
    # A phone's width: every card fits, nothing scrolls sideways.
    browser.phone()
    browser.eval("location.hash = '#now'")
    wait_until("the cards at a phone's width", lambda: browser.eval("document.querySelectorAll('.gpu').length") == 8)
    widths = browser.widths()
    check(widths[0] <= widths[1], f"at 390 px nothing is wider than the screen (content {widths[0]} px)")
    browser.screenshot("now-phone")
    # Every other view at that width too: nothing scrolls sideways.
    for view in ("leases", "events", "gpu/0", "report", "doctor", "fleet"):
        browser.eval(f"location.hash = '#{view}'")
        wait_until(f"the {view} view at a phone's width",
                   lambda: len(browser.eval("document.getElementById('main').textContent") or "") > 20)
        time.sleep(1.0)  # Its fetches and charts.
        widths = browser.widths()
        check(widths[0] <= widths[1], f"at 390 px the {view} view is no wider than the screen "
                                      f"(content {widths[0]} px)")
        overlaps = browser.overlaps()
        check(not overlaps, f"at 390 px no text of the {view} view overlaps other text: {overlaps}")
        browser.screenshot(view.replace("/", "-") + "-phone")
    # This agent has no [fleet]: the Fleet view says how to give it one, with no error.
    fleet = browser.eval("document.getElementById('fleet').textContent")
    check("prometheus_url" in fleet and browser.eval("document.querySelectorAll('#main .error').length") == 0,
          f"without [fleet] the Fleet view says how to configure it, and shows no error: {fleet[:80]!r}")
    browser.desktop()

    # With [http] auth the page asks for the token, refuses a wrong one and
    # keeps the right one in a cookie scripts cannot read.
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=60)
    token = "0123456789abcdef-console-token"
    with open(os.path.join(work, "token"), "w") as f:
        f.write(token + "\n")
    with open(os.path.join(work, "auth.toml"), "w") as f:
        f.write(f'[http]\nauth = "{os.path.join(work, "token")}"\n')
    agent = start_agent(port, ["--config", os.path.join(work, "auth.toml")])
    browser.open(f"http://127.0.0.1:{port}/")
    wait_until("the login form", lambda: browser.eval("!!document.getElementById('token')"))
    check(browser.eval("document.querySelectorAll('.gpu').length") == 0, "without the token the page shows no GPU")
    login = "document.getElementById('token').value = {!r}; document.querySelector('main button').click()"
    browser.eval(login.format("not-the-token-0123456789"))
    refused = wait_until("the refusal", lambda: browser.eval("document.querySelector('main .error').textContent"))
    check("refused" in refused, f"a wrong token is refused: {refused!r}")
    browser.eval(login.format(token))
    wait_until("the cards after the login", lambda: browser.eval("document.querySelectorAll('.gpu').length") == 8)
    check(True, "the right token opens the console")
    check(browser.eval("document.cookie") == "", "the token's cookie is out of scripts' reach (HttpOnly)")


try:
    main()
finally:
    stop_all(children)
    shutil.rmtree(work, ignore_errors=True)
