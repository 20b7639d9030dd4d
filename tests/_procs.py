"""Child processes for the cross-process deploy tests: `python -m simreal ...` with its
output lines collected by a thread, waited for by pattern (every wait bounded)."""

from simreal.children import SimrealChild


class Proc(SimrealChild):
    """A simreal child whose waits fail the test, naming what it printed so far."""

    def wait_for(self, pattern: str, timeout_s: float) -> str:
        line = self.next_match(pattern, timeout_s)
        if line is None:
            raise AssertionError(f"no line matching {pattern!r}; output so far: {self.seen}")
        return line
