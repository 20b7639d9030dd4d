"""Child processes for the cross-process deploy tests: `python -m simreal ...` with its
output lines collected by a thread, waited for by pattern (every wait bounded)."""

import itertools
import os
import pty
from collections.abc import Iterator
from contextlib import contextmanager

from simreal.children import SimrealChild


class Proc(SimrealChild):
    """A simreal child whose waits fail the test, naming what it printed so far."""

    def wait_for(self, pattern: str, timeout_s: float) -> str:
        line = self.next_match(pattern, timeout_s)
        if line is None:
            raise AssertionError(f"no line matching {pattern!r}; output so far: {self.seen}")
        return line


_DOMAINS = itertools.count()


def domain() -> int:
    """A DDS domain for one test: a new one at every call in this run, so that a process
    one test left behind never talks to the next, and, offset by the pid, most likely not
    one another run on the machine is using (CycloneDDS takes 0-232)."""
    return 1 + (os.getpid() * 7 + next(_DOMAINS)) % 230


STATE_TIMEOUT_MS = 200
"""The deploy tests' watchdog (the node's default is 50 ms): a loaded CI machine stalls
processes for 100 ms."""


def g1_node(policy, dom: int, *args: str, duration_s: int = 60, stdin=None) -> Proc:
    """`simreal deploy POLICY --robot g1 ARGS` in another process on DDS domain `dom`,
    with the tests' watchdog; `stdin` a terminal for its keys."""
    return Proc(
        "deploy", str(policy), "--robot", "g1", "--domain", str(dom),
        "--state-timeout", str(STATE_TIMEOUT_MS), "--duration", str(duration_s), *args,
        stdin=stdin,
    )  # fmt: skip


def virtual_g1(dom: int, *args: str, duration_s: int = 60) -> Proc:
    """The virtual G1 (`simreal sim-robot g1 ARGS`) in another process on DDS domain
    `dom`, returned once it says it is ready; stopped again if it never does, so that no
    test leaves a robot running."""
    robot = Proc("sim-robot", "g1", *args, "--domain", str(dom), "--duration", str(duration_s))
    try:
        robot.wait_for("virtual g1 ready", 30)
    except AssertionError:
        robot.stop()
        raise
    return robot


@contextmanager
def terminal() -> Iterator[tuple[int, int]]:
    """A pseudo-terminal (master, slave) for a node's keyboard, closed on the way out."""
    master, slave = pty.openpty()
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)
