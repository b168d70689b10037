#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The web console on a lab that looks like one, and the README's pictures of it.

Five people share a simulated 8-GPU node, each as their own user (a private
/etc/passwd names them, in a mount namespace of this test's own):

- amira trains on GPUs 0 and 1 (`tarmac run`, 92 % SM);
- ben reserved GPU 2 and left a notebook open on it (20 GiB at 0 % SM);
- chen fine-tunes on GPUs 3 and 4, in bursts;
- farid runs an evaluation on GPU 7 without a lease;
- dana's batch of prompts runs as backfill on the idle GPUs 5 and 6, through
  an OpenAI-compatible server;
- eva waits in the queue for 4 GPUs.

Every process has a command line a lab's would have (`tarmac-simload
--title`). Headless Chromium opens every view at a desktop's width (1400 px)
and a phone's (390 px). Each must show the lab (the owners, commands, the
loan and the queue as the agent has them), scroll nothing sideways and have
no text over other text. The views are captured as pictures; with OUT_DIR,
the ones the README and docs/web.md show are written there (`make
screenshots` writes docs/images).

Needs root (the users, the namespace); without it, says so and exits 77
(skipped).

Usage: web_lab.py BUILD_DIR SOURCE_DIR [OUT_DIR]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from e2e_util import check, free_port, stop_all, wait_until  # noqa: E402

USERS = ["amira", "ben", "chen", "dana", "eva", "farid"]
# The README's pictures: the view, the screen, the file under OUT_DIR.
PICTURES = [("now", "desktop", "console-now.png"), ("now", "phone", "console-phone.png"),
            ("gpu/3", "desktop", "console-gpu.png"), ("leases", "desktop", "console-leases.png")]
VIEWS = ["now", "gpu/3", "leases", "events", "report", "doctor", "fleet"]

if os.geteuid() != 0:
    print("web_lab: skipped: needs root (the lab's users and a private /etc/passwd)")
    sys.exit(77)
if os.environ.get("TARMAC_LAB_NAMESPACE") != "1":
    # Into a mount namespace of our own, where /etc/passwd can name the lab's users.
    os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, *sys.argv],
               dict(os.environ, TARMAC_LAB_NAMESPACE="1"))

build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
out_dir = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
bin_dir = os.path.join(build, "bin")
work = tempfile.mkdtemp(prefix="tarmac-lab-")
os.chmod(work, 0o755)
sock = os.path.join(work, "tarmac.sock")
env = dict(os.environ,
           TARMAC_SIM_SCENARIO=os.path.join(source, "examples/scenarios/lab-8gpu.toml"),
           TARMAC_SIM_DIR=os.path.join(work, "world"),
           TARMAC_NVML_LIBRARY=os.path.join(build, "fakenvml/libnvidia-ml.so.1"),
           TARMAC_SOCKET=sock)
children = []


def name_users():
    """The lab's users, at uids nothing else has, in this namespace's /etc/passwd."""
    with open("/etc/passwd") as f:
        passwd = f.read()
    taken = {int(line.split(":")[2]) for line in passwd.splitlines() if line.count(":") >= 6}
    uids, uid = {}, 4100
    for user in USERS:
        while uid in taken:
            uid += 1
        uids[user] = uid
        uid += 1
        home = os.path.join(work, "home", user)
        os.makedirs(home)
        os.chown(home, uids[user], uids[user])
        passwd += f"{user}:x:{uids[user]}:{uids[user]}:{user}:{home}:/bin/sh\n"
    with open(os.path.join(work, "passwd"), "w") as f:
        f.write(passwd)
    subprocess.run(["mount", "--bind", os.path.join(work, "passwd"), "/etc/passwd"], check=True)
    return uids


def as_user(uids, user, argv, gpus=None, wait=False):
    """`argv` as `user`, in their home, on `gpus` (CUDA_VISIBLE_DEVICES) when given."""
    home = os.path.join(work, "home", user)
    user_env = dict(env, HOME=home, USER=user, LOGNAME=user)
    if gpus is not None:
        user_env["CUDA_VISIBLE_DEVICES"] = gpus
    line = ["setpriv", f"--reuid={uids[user]}", f"--regid={uids[user]}", "--clear-groups", *argv]
    if wait:
        out = subprocess.run(line, env=user_env, cwd=home, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"web_lab: {user}: {' '.join(argv)}: {out.stderr}")
        return out.stdout
    child = subprocess.Popen(line, env=user_env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(child)
    return child


def start_agent():
    port = free_port()
    for d in ("world", "world/loads"):
        os.makedirs(os.path.join(work, d), exist_ok=True)
        os.chmod(os.path.join(work, d), 0o1777)
    with open(os.path.join(work, "agent.toml"), "w") as f:
        f.write('[http]\nhostname = "gpu-node-7"\n[backfill]\nidle_for = "5s"\n')
    log = open(os.path.join(work, "agent.log"), "a")
    children.append(subprocess.Popen(
        [os.path.join(bin_dir, "tarmac"), "agent", "--socket", sock, "--state-dir", os.path.join(work, "state"),
         "--http-listen", f"127.0.0.1:{port}", "--config", os.path.join(work, "agent.toml")],
        env=env, stdout=log, stderr=log))

    def answers():
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return os.path.exists(sock)
        except OSError:
            return False
    wait_until("the agent's HTTP", answers, name="web_lab")
    return port


def api(port, path):
    return json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/{path}", timeout=10))


def make_lab(uids, port):
    """Everyone's work, as the module docstring has it. Returns the lab's lease IDs by owner."""
    simload = os.path.join(bin_dir, "tarmac-simload")
    tarmac = os.path.join(bin_dir, "tarmac")
    as_user(uids, "farid", [simload, "--title", "python3 eval.py --suite mmlu --ckpt runs/ft-0412/last.pt",
                            "--memory", "18GiB", "--util", "35"], gpus="7")
    as_user(uids, "amira", [tarmac, "run", "--gpu", "0,1", "--", simload, "--title",
                            "torchrun --nproc-per-node 2 train.py --config llama3-8b.yaml", "--memory", "71GiB",
                            "--util", "92", "--tensor", "60"])
    # (Each lease granted before the next is asked for: lease 1 is amira's.)
    wait_until("amira's lease", lambda: len(api(port, "leases")["leases"]) == 1, name="web_lab")
    as_user(uids, "ben", [tarmac, "reserve", "--gpu", "2", "--for", "4h"], wait=True)
    as_user(uids, "ben", [simload, "--title", "python3 -m jupyterlab --no-browser --port 8888", "--memory",
                          "20GiB", "--pattern", "idle"], gpus="2")
    as_user(uids, "chen", [tarmac, "run", "--gpu", "3,4", "--", simload, "--title",
                           "python3 finetune.py --base mistral-7b --lora-r 16", "--memory", "38GiB", "--util",
                           "75", "--pattern", "bursty"])
    prompts = os.path.join(work, "home", "dana", "summaries.jsonl")
    with open(prompts, "w") as f:
        for i in range(20000):
            f.write(json.dumps({"custom_id": f"doc-{i:05d}", "prompt": f"Summarize support ticket {i}."}) + "\n")
    os.chown(prompts, uids["dana"], uids["dana"])
    model = "meta-llama/Llama-3.2-3B-Instruct"
    engine = (f"exec {os.path.join(bin_dir, 'tarmac-simengine')} --port {{port}} --model {model} "
              f"--title 'vllm serve {model} --port {{port}}' --memory 24GiB --util 85 --latency-ms 400")
    as_user(uids, "dana", [tarmac, "backfill", "submit", prompts, "--model", model, "--engine", "openai",
                           "--engine-command", engine, "--gpus", "2"], wait=True)
    wait_until("dana's batch on GPUs 5 and 6", lambda: sorted(
        g for lease in api(port, "leases")["leases"] if lease.get("priority") == "backfill"
        for g in lease.get("gpus", [])) == [5, 6], tries=600, name="web_lab")
    as_user(uids, "eva", [tarmac, "run", "--gpus", "4", "--", simload, "--title",
                          "torchrun --nproc-per-node 4 pretrain.py --data /datasets/fineweb-edu"])
    wait_until("eva in the queue", lambda: api(port, "queue")["queue"], name="web_lab")


def main():
    uids = name_users()
    port = start_agent()
    make_lab(uids, port)
    browser = Browser(work, children, os.path.join(build, "web-screenshots", "lab"))
    browser.open(f"http://127.0.0.1:{port}/")
    wait_until("8 GPU cards", lambda: browser.eval("document.querySelectorAll('.gpu').length") == 8, name="web_lab")

    def card(gpu):
        return browser.eval(f"document.querySelector('.gpu[data-gpu=\"{gpu}\"]').textContent") or ""
    # Each card names its holder and its process as the lab has them.
    wait_until("every holder on its card", lambda: all(
        who in card(gpu) for gpu, who in ((0, "amira"), (2, "ben"), (3, "chen"), (5, "dana"), (7, "farid"))),
        name="web_lab")
    # (Command lines stay off the console unless [http] show_command_lines:
    # the names.)
    for gpu, name in ((0, "torchrun"), (2, "python3"), (5, "vllm"), (7, "python3")):
        wait_until(f"{name} on GPU {gpu}'s card", lambda: name in card(gpu), name="web_lab")
    check(True, "every card names its holder and its process, as the users started them")
    waiting = [q["user"] for q in api(port, "queue")["queue"]]
    check(waiting == ["eva"], f"eva waits in the queue for 4 GPUs ({waiting})")
    # The charts want some history: 20 s of it, 3 minutes for the README's
    # pictures (chen's bursts, 8 s of every 20, show as bursts).
    time.sleep(180 if out_dir else 20)
    shots = {}
    for screen in ("desktop", "phone"):
        browser.phone() if screen == "phone" else browser.desktop()
        for view in VIEWS:
            browser.eval(f"location.hash = '#{view}'")
            wait_until(f"the {view} view", lambda: len(browser.eval(
                "document.getElementById('main').textContent") or "") > 20, name="web_lab")
            if view.startswith("gpu/"):
                wait_until("the charts", lambda: browser.eval(
                    "document.querySelectorAll('.chart canvas').length") == 4, name="web_lab")
            time.sleep(0.5)  # Its fetches and charts.
            text = browser.eval("document.getElementById('main').textContent")
            check("null" not in text and "undefined" not in text and "NaN" not in text,
                  f"the {view} view at the {screen}'s width writes no null, undefined or NaN")
            if view == "leases":
                check("eva" in text and "dana" in text, f"the {screen}'s Leases view shows the queue and the batch")
            if screen == "phone":
                inner = browser.eval("[...document.querySelectorAll('#main table.rows')]"
                                     ".filter(t => t.scrollWidth > t.clientWidth + 1).length")
                check(inner == 0, f"at the phone's width the {view} view's tables fit, row by row ({inner} scroll)")
            widths = browser.widths()
            check(widths[0] <= widths[1], f"the {view} view at the {screen}'s width scrolls nothing sideways "
                                          f"(content {widths[0]} of {widths[1]} px)")
            overlaps = browser.overlaps()
            check(not overlaps, f"no text of the {view} view at the {screen}'s width overlaps other text: {overlaps}")
            name = f"{view.replace('/', '-')}-{screen}"
            browser.screenshot(name)
            shots[(view, screen)] = os.path.join(browser.shots_dir, name + ".png")
    # (Without [fleet] the fleet routes answer 404, which the Fleet view explains.)
    problems = [p for p in browser.problems() if "/api/v1/fleet" not in p]
    check(not problems, f"no error on any page: {problems}")
    if out_dir:
        for view, screen, file in PICTURES:
            shutil.copyfile(shots[(view, screen)], os.path.join(out_dir, file))
            print(f"web_lab: wrote {os.path.join(out_dir, file)}")


def end_the_lab():
    """Every process of the lab, the batch's runner and engines too (the agent
    leaves them running by design): those whose environment names its world."""
    stop_all(children)
    mark = f"TARMAC_SIM_DIR={work}/world".encode()

    def signal_all(sig):
        hit = 0
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if mark in f.read().split(b"\0") and int(pid) != os.getpid():
                        os.kill(int(pid), sig)
                        hit += 1
            except OSError:
                pass
        return hit
    # The runner stops its engines and waits for them; what is left after 10 s is killed.
    signal_all(signal.SIGTERM)
    for _ in range(100):
        if not signal_all(0):
            break
        time.sleep(0.1)
    signal_all(signal.SIGKILL)


try:
    main()
finally:
    end_the_lab()
    shutil.rmtree(work, ignore_errors=True)
