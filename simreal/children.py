"""`python -m simreal ...` as a child process whose output lines a thread collects: how
the cross-process tests and the fault benchmark run the virtual robot and the deploy
node side by side and wait (always bounded) for what they print."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time


class SimrealChild:
    """One `python -m simreal ARGS...` process; `seen` keeps every line read so far."""

    def __init__(self, *args: str, stdin=None):
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "simreal", *args],
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_match(self, pattern: str, timeout_s: float) -> str | None:
        """The next line matching `pattern` within `timeout_s`; None if none came (or the
        process ended first)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.02)
            except queue.Empty:
                if self.popen.poll() is not None and self.lines.empty():
                    return None
                continue
            self.seen.append(line)
            if re.search(pattern, line):
                return line
        return None

    def poll_for(self, pattern: str) -> str | None:
        """The first line so far (not yet seen) that matches, without waiting."""
        while not self.lines.empty():
            line = self.lines.get_nowait()
            self.seen.append(line)
            if re.search(pattern, line):
                return line
        return None

    def stop(self, sig: int = signal.SIGTERM) -> dict | None:
        """Signal (after a SIGCONT, in case it was stopped), wait (bounded) and return the
        JSON summary printed at exit, if any."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.popen.pid, signal.SIGCONT)
            self.popen.send_signal(sig)
        try:
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=5)
        time.sleep(0.1)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        found = [json.loads(s) for s in self.seen if s.startswith("{")]
        return found[-1] if found else None
