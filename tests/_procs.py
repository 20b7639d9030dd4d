"""Child processes for the cross-process deploy tests: `python -m simreal ...` with its
output lines collected by a thread, waited for by pattern (every wait bounded)."""

import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time


class Proc:
    """A `python -m simreal ...` child whose output lines are collected by a thread."""

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

    def wait_for(self, pattern: str, timeout_s: float) -> str:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.05)
            except queue.Empty:
                if self.popen.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matching {pattern!r}; output so far: {self.seen}")

    def stop(self, sig=signal.SIGTERM) -> dict | None:
        """Signal, wait (bounded) and return the JSON summary printed at exit, if any."""
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        try:
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=5)
        time.sleep(0.1)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        summaries = [json.loads(line) for line in self.seen if line.startswith("{")]
        return summaries[-1] if summaries else None
