#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Headless Chromium driven over the DevTools protocol (Debian's chromium and
python3-websocket): one page, evaluate JavaScript in it, collect what it
reports (exceptions, console errors, failed requests), take screenshots.
Used by tests/e2e/web_console.py and bench/web_console.py."""
import base64
import json
import os
import subprocess

import websocket  # Debian's python3-websocket

# Text that overlaps other text in the view: leaf elements with text whose
# boxes cross by more than 2 px (neither inside the other). At most 5.
OVERLAPS = """(() => {
  const leaves = [...document.querySelectorAll('#main *')].filter(e => e.children.length === 0 &&
    e.textContent.trim() && e.getClientRects().length);
  // Each line box of an element on its own: text that wraps is not one box.
  const boxes = leaves.flatMap(e => [...e.getClientRects()].filter(r => r.width > 0 && r.height > 0).map(r => [e, r]));
  const hits = [];
  for (let i = 0; i < boxes.length && hits.length < 5; i++) {
    for (let j = i + 1; j < boxes.length && hits.length < 5; j++) {
      const [a, ra] = boxes[i], [b, rb] = boxes[j];
      if (a === b || a.contains(b) || b.contains(a)) continue;
      const x = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
      const y = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
      if (x > 2 && y > 2) hits.push(a.textContent.trim().slice(0, 24) + " / " + b.textContent.trim().slice(0, 24));
    }
  }
  return hits;
})()"""


class Browser:
    """Headless Chromium, one page, driven over the DevTools protocol."""

    def __init__(self, work, children, shots_dir, profile="chromium"):
        """Starts Chromium with its profile `work`/`profile`; appends its
        process to `children`; screenshots go to `shots_dir`."""
        self.shots_dir = shots_dir
        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
             "--disable-background-networking", "--disable-component-update", "--remote-debugging-port=0",
             f"--user-data-dir={work}/{profile}", "--window-size=1400,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        children.append(self.proc)
        url = None
        for line in self.proc.stderr:
            if "DevTools listening on " in line:
                url = line.split("DevTools listening on ", 1)[1].strip()
                break
        if url is None:
            raise SystemExit("cdp: chromium did not start")
        self.ws = websocket.create_connection(url, timeout=30)
        self.next_id = 0
        self.events = []  # What the page reported: exceptions, console errors, failed requests.
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable", {}, self.session)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            answer = json.loads(self.ws.recv())
            if answer.get("method") in ("Runtime.exceptionThrown", "Log.entryAdded", "Network.loadingFailed",
                                        "Runtime.consoleAPICalled", "Network.responseReceived"):
                self.events.append(answer)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise SystemExit(f"cdp: {method}: {answer['error']}")
                return answer["result"]

    def open(self, url):
        self.call("Page.navigate", {"url": url}, self.session)

    def problems(self, since=0):
        """Exceptions, console errors, failed requests and HTTP errors since event `since`."""
        out = []
        for e in self.events[since:]:
            m, p = e["method"], e["params"]
            if m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')}")
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif m == "Runtime.consoleAPICalled" and p["type"] == "error":
                out.append(f"console.error: {p['args']}")
            elif m == "Network.loadingFailed":
                out.append(f"failed request: {p.get('errorText')}")
            elif m == "Network.responseReceived" and p["response"]["status"] >= 400:
                out.append(f"HTTP {p['response']['status']}: {p['response']['url']}")
        return out

    def screenshot(self, name):
        shots = self.shots_dir
        os.makedirs(shots, exist_ok=True)
        data = self.call("Page.captureScreenshot", {"format": "png"}, self.session)["data"]
        with open(os.path.join(shots, f"{name}.png"), "wb") as f:
            f.write(base64.b64decode(data))

    def eval(self, expression, awaits=False):
        """The expression's value (None when it throws); with `awaits`, the value its promise settles to."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": awaits}, self.session)
        if "exceptionDetails" in result:
            return None
        return result["result"].get("value")

    def overlaps(self):
        """Up to 5 pairs of texts in the view that overlap each other (empty: none)."""
        return self.eval(OVERLAPS)

    def widths(self):
        """[the page's content width, the screen's width] in CSS pixels: wider content scrolls sideways."""
        return self.eval("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")

    def phone(self):
        """From now on the page is on a phone's screen: 390 x 844 CSS pixels, twice as dense."""
        self.call("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2,
                                                        "mobile": True}, self.session)

    def desktop(self):
        """Back to the window's own size (1400 x 1000)."""
        self.call("Emulation.clearDeviceMetricsOverride", {}, self.session)

    def press(self, key, code, key_code):
        """One key pressed and released, as a keyboard would send it."""
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code,
                                                 "windowsVirtualKeyCode": key_code}, self.session)

    def close(self):
        self.ws.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)
