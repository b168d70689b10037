"""One request to a tarmac agent over its Unix socket (docs/protocol.md)."""
import json
import socket


def call(sock_path, method):
    """Sends {"v":1,"method":method} and returns the decoded response."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sock_path)
    s.sendall(json.dumps({"v": 1, "method": method}).encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)
