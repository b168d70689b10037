# SPDX-License-Identifier: Apache-2.0
"""What the Python end-to-end tests and benchmarks share: a free port,
bounded readiness waits, checks that say what they checked, and stopping
the processes a test started."""
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
