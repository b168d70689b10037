"""A tarmac agent for benchmarks: started on the simulated 8-GPU lab, and one
request to it over its Unix socket (docs/protocol.md)."""
import json
import os
import re
import socket
import subprocess
import time


def call(sock_path, method, params=None, timeout=10):
    """Sends {"v":1,"method":method[,"params":params]}; returns the decoded response."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock_path)
    request = {"v": 1, "method": method}
    if params:
        request["params"] = params
    s.sendall(json.dumps(request).encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)


def http_port(log_path, tries=200):
    """The port an agent logging to `log_path` serves HTTP on, once it says
    so ("http: listening on http://127.0.0.1:PORT/metrics"); 0 if it never does."""
    for _ in range(tries):
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/metrics", open(log_path).read())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    return 0


def start_agent(build, work, config_text, http_listen="off"):
    """Starts `tarmac agent` on examples/scenarios/lab-8gpu.toml (over the fake
    libnvidia-ml) in directory `work` with `config_text` as its config, and
    waits until it answers. Returns (agent process, environment for clients,
    socket path); the caller stops the agent. With `http_listen`
    ("127.0.0.1:0"), http_port(work + "/agent.log") says where it serves."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["TARMAC_SIM_SCENARIO"] = os.path.join(root, "examples/scenarios/lab-8gpu.toml")
    env["TARMAC_SIM_DIR"] = os.path.join(work, "world")
    sock = os.path.join(work, "tarmac.sock")
    env["TARMAC_SOCKET"] = sock
    config = os.path.join(work, "agent.toml")
    with open(config, "w") as f:
        f.write(config_text)
    agent = subprocess.Popen(
        [os.path.join(build, "bin", "tarmac"), "agent", "--backend", "nvml",
         "--nvml-library", os.path.join(build, "fakenvml/libnvidia-ml.so.1"), "--socket", sock,
         "--state-dir", os.path.join(work, "state"), "--http-listen", http_listen, "--config", config],
        env=env, stderr=open(os.path.join(work, "agent.log"), "w"))
    for _ in range(200):
        if os.path.exists(sock):
            try:
                call(sock, "hello")
                break
            except OSError:
                pass
        time.sleep(0.05)
    return agent, env, sock


def submit_batch(build, env, work, requests, gpus, concurrency, latency_ms):
    """Submits a batch of `requests` prompt lines to the agent in `env`, run
    with a tarmac-simengine (`latency_ms` to answer, 8 GiB) started in each
    of up to `gpus` backfill leases. Returns the batch file's path."""
    batch = os.path.join(work, "batch.jsonl")
    with open(batch, "w") as f:
        for i in range(requests):
            f.write('{"prompt":"question %d"}\n' % i)
    engine = os.path.join(build, "bin", "tarmac-simengine") + f" --port {{port}} --latency-ms {latency_ms} --memory 8GiB"
    subprocess.run([os.path.join(build, "bin", "tarmac"), "backfill", "submit", batch, "--model", "sim-model",
                    "--engine-command", engine, "--gpus", str(gpus), "--concurrency", str(concurrency)],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    return batch
