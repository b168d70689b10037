"""One request to a tarmac agent over its Unix socket (docs/protocol.md)."""
import json
import socket


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
