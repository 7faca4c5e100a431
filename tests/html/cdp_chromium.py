"""Headless Chromium driven over the DevTools protocol (CDP), for the HTML report's tests and
benchmark.

Why CDP and not ``--dump-dom``: the tests type into the filter box, read console errors and
CSP violations (``Log.entryAdded``, ``Runtime.exceptionThrown``) and see every request the
page makes (``Network.requestWillBeSent``); ``--dump-dom`` can do none of that. The client is
the ``websockets`` package's synchronous API, one connection to the browser with flattened
target sessions.

Chromium is started in its own process group and the whole group is killed on ``close()``
(its renderer, GPU and zygote children included), also when a test fails.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any, Self

CHROMIUM_MISSING = ("Debian's chromium is not installed (needed to open the HTML report): "
                    "apt-get update && apt-get install -y chromium")


class CDPError(RuntimeError):
    pass


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    def __init__(self, timeout: float = 30.0) -> None:
        from websockets.sync.client import connect

        exe = chromium_path()
        if exe is None:
            raise RuntimeError(CHROMIUM_MISSING)
        self.timeout = timeout
        self._tmp = tempfile.mkdtemp(prefix="segtools-chromium-")
        # kept open for the browser's lifetime (its stderr), closed in close()
        self._stderr = open(os.path.join(self._tmp, "stderr.log"), "wb")  # noqa: SIM115
        profile = os.path.join(self._tmp, "profile")
        cmd = [exe, "--headless", "--disable-gpu", "--remote-debugging-port=0",
               "--remote-debugging-address=127.0.0.1", f"--user-data-dir={profile}",
               "--no-first-run", "--no-default-browser-check", "--disable-extensions",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", "--hide-scrollbars", "about:blank"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.insert(1, "--no-sandbox")      # Chromium refuses to run as root with a sandbox
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._stderr,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.ws = None
        try:
            port_file = os.path.join(profile, "DevToolsActivePort")
            deadline = time.monotonic() + timeout
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"chromium exited with {self.proc.returncode}: {self.stderr_tail()}")
                if os.path.exists(port_file):
                    with open(port_file) as fh:
                        lines = fh.read().split()
                    if len(lines) >= 2:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"chromium did not open its DevTools port: {self.stderr_tail()}")
                time.sleep(0.05)
            # entered by hand: websockets wants connect() used as a context manager
            self.ws = connect(f"ws://127.0.0.1:{lines[0]}{lines[1]}", max_size=None,
                              open_timeout=timeout).__enter__()
        except BaseException:
            self.close()
            raise
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def stderr_tail(self) -> str:
        try:
            with open(os.path.join(self._tmp, "stderr.log"), "rb") as fh:
                return fh.read()[-800:].decode("utf-8", "replace")
        except OSError:
            return ""

    # ------------------------------------------------------------------ protocol
    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float | None = None) -> dict[str, Any]:
        assert self.ws is not None
        self._id += 1
        mid = self._id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._recv(deadline, method)
            if m.get("id") == mid:
                if "error" in m:
                    raise CDPError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def _recv(self, deadline: float, what: str) -> dict[str, Any]:
        assert self.ws is not None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"chromium: no answer to {what}")
        try:
            return json.loads(self.ws.recv(timeout=remaining))
        except TimeoutError:
            raise TimeoutError(f"chromium: no answer to {what}") from None

    def wait_event(self, method: str, session: str, timeout: float | None = None) -> dict[str, Any]:
        for i, m in enumerate(self.events):
            if m.get("method") == method and m.get("sessionId") == session and not m.get("_seen"):
                m["_seen"] = True
                return m
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._recv(deadline, method)
            self.events.append(m)
            if m.get("method") == method and m.get("sessionId") == session:
                m["_seen"] = True
                return m

    def open(self, url: str, width: int = 1200, height: int = 900) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        for domain in ("Page", "Runtime", "Log", "Network", "Performance"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        page.navigate(url)
        return page

    def close(self) -> None:
        """Stop the browser and every process it started; remove its profile."""
        try:
            if self.ws is not None:
                with contextlib.suppress(Exception):     # a browser already gone
                    self.ws.__exit__(None, None, None)
        finally:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGTERM)
                    self.proc.wait(timeout=10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)   # stragglers of the group
            except (ProcessLookupError, PermissionError):
                pass
            if self.proc.poll() is None:
                self.proc.wait(timeout=10)
            self._stderr.close()
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    def __init__(self, browser: Chromium, session: str, target: str) -> None:
        self.browser, self.session, self.target = browser, session, target

    def navigate(self, url: str) -> None:
        self.browser.call("Page.navigate", {"url": url}, session=self.session)
        self.browser.wait_event("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        r = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                   "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in r:
            raise CDPError(f"evaluate {expression!r}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 10.0) -> Any:
        """Evaluate until the value is truthy (events such as ``toggle`` run in a later task)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.02)

    def type_into(self, selector: str, text: str) -> None:
        """Focus the element, select its text and type ``text`` as a user would (input events)."""
        self.evaluate(f"(function(){{var e=document.querySelector({json.dumps(selector)});"
                      f"e.focus();e.select();}})()")
        if text:
            self.browser.call("Input.insertText", {"text": text}, session=self.session)
        else:
            for kind in ("rawKeyDown", "keyUp"):
                self.browser.call("Input.dispatchKeyEvent", {"type": kind, "key": "Backspace",
                                                             "code": "Backspace",
                                                             "windowsVirtualKeyCode": 8},
                                  session=self.session)

    def screenshot(self, path: str, width: int = 1200, max_height: int | None = None) -> None:
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        if max_height is not None:
            height = min(height, max_height)
        r = self.browser.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}, session=self.session)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(r["data"]))

    def metrics(self) -> dict[str, float]:
        """The renderer's counters since the page was opened (ProcessTime: CPU seconds of the
        renderer process; TaskDuration, LayoutDuration, ScriptDuration: main-thread seconds)."""
        r = self.browser.call("Performance.getMetrics", session=self.session)
        return {m["name"]: m["value"] for m in r["metrics"]}

    def _events(self) -> list[dict[str, Any]]:
        return [m for m in self.browser.events if m.get("sessionId") == self.session]

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations)."""
        # a round trip flushes the events the browser sent before it
        self.evaluate("0")
        out = []
        for m in self._events():
            p = m.get("params", {})
            if m.get("method") == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(json.dumps(p.get("args", []))[:500])
            elif m.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(str(p["entry"].get("text"))[:500])
        return out

    def requests(self) -> list[str]:
        self.evaluate("0")
        return [m["params"]["request"]["url"] for m in self._events()
                if m.get("method") == "Network.requestWillBeSent"]

    def dialogs(self) -> list[str]:
        self.evaluate("0")
        return [m["params"].get("message", "") for m in self._events()
                if m.get("method") == "Page.javascriptDialogOpening"]
