"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe` (no extra packages).

Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4.
`Browser.open(url)` loads a page in a fresh target and records console messages, exceptions,
log entries and every network request, so a test can assert that a page is silent and offline.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
    "--window-size=1400,1000",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def _onto_3_and_4(read_fd: int, write_fd: int) -> Any:
    def child() -> None:
        # Park both ends out of the way first: either may itself be fd 3 or 4.
        os.dup2(read_fd, 200)
        os.dup2(write_fd, 201)
        os.dup2(200, 3)
        os.dup2(201, 4)

    return child


@dataclass
class PageLog:
    console: list[dict[str, Any]] = field(default_factory=list)  # {"type", "text"}
    exceptions: list[str] = field(default_factory=list)
    log_entries: list[dict[str, Any]] = field(default_factory=list)  # {"level", "text", "url"}
    requests: list[str] = field(default_factory=list)  # every URL the page asked for

    def errors(self) -> list[str]:
        out = [c["text"] for c in self.console if c["type"] in ("error", "assert")]
        out += self.exceptions
        out += [f"{x['level']}: {x['text']}" for x in self.log_entries if x["level"] == "error"]
        return out


class Browser:
    """One headless Chromium process driven over the pipe; use as a context manager."""

    def __init__(self, binary: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="ncclscope-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The child must see the command pipe as fd 3 and the reply pipe as fd 4.
        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=_onto_3_and_4(to_child_r, from_child_w),  # noqa: PLW1509 (no threads here)
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass  # already gone
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- protocol ------------------------------------------------------------------------------
    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            for m in self._read(deadline):
                if m.get("id") == self._next:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return dict(m.get("result", {}))
                self._events.append(m)

    def _read(self, deadline: float) -> list[dict[str, Any]]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("chromium did not answer in time")
        ready, _, _ = select.select([self._from_child], [], [], left)
        if not ready:
            raise TimeoutError("chromium did not answer in time")
        chunk = os.read(self._from_child, 1 << 20)
        if not chunk:
            raise RuntimeError("chromium closed the DevTools pipe")
        self._buf += chunk
        *msgs, self._buf = self._buf.split(b"\0")
        return [json.loads(m) for m in msgs if m]

    def pump(self, seconds: float) -> None:
        """Collect events for a while (replies to nothing)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                self._events.extend(self._read(min(end, time.monotonic() + 0.2)))
            except TimeoutError:
                pass

    # -- pages -----------------------------------------------------------------------------------
    def open(self, url: str) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.send(f"{domain}.enable", session=session)
        self._events.clear()
        self.send("Page.navigate", {"url": url}, session=session)
        return Page(self, session)


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.b = browser
        self.session = session

    def evaluate(self, expression: str) -> Any:
        r = self.b.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=self.session
        )
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate {expression!r}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 60.0) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = self.evaluate(expression)
            if value:
                return value
            self.b.pump(0.25)
        raise TimeoutError(f"page never satisfied {expression!r}")

    def screenshot(self, path: Path) -> None:
        height = int(self.evaluate("document.documentElement.scrollHeight") or 1000)
        self.b.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": min(height, 16000), "deviceScaleFactor": 1, "mobile": False},
            session=self.session,
        )
        self.b.pump(0.5)
        shot = self.b.send(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=self.session
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def log(self) -> PageLog:
        out = PageLog()
        for m in self.b._events:
            if m.get("sessionId") != self.session:
                continue
            p = m.get("params", {})
            method = m.get("method")
            if method == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.console.append({"type": p.get("type"), "text": text})
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.exceptions.append(str(d.get("exception", {}).get("description") or d.get("text")))
            elif method == "Log.entryAdded":
                e = p.get("entry", {})
                out.log_entries.append({"level": e.get("level"), "text": e.get("text"), "url": e.get("url")})
            elif method == "Network.requestWillBeSent":
                out.requests.append(p.get("request", {}).get("url", ""))
        return out
