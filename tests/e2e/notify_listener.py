#!/usr/bin/env python3
"""Plays systemd's side of sd_notify for a test: binds a datagram socket at
argv[1], starts the command after it with NOTIFY_SOCKET (and WATCHDOG_USEC)
set, prints every message it receives for argv[2] seconds, then stops the
command with SIGTERM and prints its exit code."""
import os
import signal
import socket
import subprocess
import sys
import time

path, seconds, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
sock.settimeout(0.2)
env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="2000000")
proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    try:
        print(sock.recv(4096).decode().replace("\n", " "), flush=True)
    except socket.timeout:
        pass
proc.send_signal(signal.SIGTERM)
code = proc.wait(timeout=10)
try:
    while True:
        print(sock.recv(4096).decode().replace("\n", " "), flush=True)
except socket.timeout:
    pass
print(f"exit {code}")
