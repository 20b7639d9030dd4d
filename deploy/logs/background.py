"""A `RolloutLog` written by a background thread, so a control loop never waits on the log.

Encoding a ROS 2 message to CDR and compressing MCAP chunks costs a few hundred
microseconds per control tick, which a 500 Hz loop with a 1 ms jitter budget cannot
spend. The loop calls the same methods as on `RolloutLog` (`joint_state`, `imu`,
`command`, ...); each call only puts the method name and its arguments on a bounded
queue. A writer thread takes them in order and writes them. If the writer falls so
far behind that the queue is full, the call drops the message and counts it
(`dropped`) instead of blocking: the loop's timing wins over the log's completeness,
and the count says so (it is stored in the bag's metadata.yaml custom data as
`dropped_messages`). In normal operation nothing is dropped and the log is complete.

Arguments are kept as given: pass arrays the caller does not modify afterwards.

`close()` lets the writer drain the queue, then closes the bag, which is moved into
place atomically (`Rosbag2Writer`): the log directory appears complete or not at all.
A writer error stops logging (later calls count as dropped) and is raised from `close`.

The writer competes with the loop for the GIL: `deploy.g1.clock.realtime_process`
shortens the interpreter's switch interval so that a loop waking from its sleep gets
the GIL back within about 0.1 ms instead of the default 5 ms.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path

from simreal.deploy.logs.rollout import RolloutLog

QUEUE_SIZE = 20_000
"""Messages waiting at most: 8 s of a 500 Hz loop logging five messages per tick."""

_WRITES = frozenset(
    [
        "joint_state",
        "imu",
        "base_pose",
        "base_twist",
        "wrench",
        "odometry",
        "observation",
        "action",
        "command",
        "loop_timing",
    ]
)
_STOP = object()


class BackgroundLog:
    """Forwards `RolloutLog` writes to a writer thread through a bounded queue."""

    def __init__(self, log: RolloutLog, queue_size: int = QUEUE_SIZE):
        self.log = log
        self.meta = log.meta
        self.path = log.path
        self.dropped = 0
        self.written = 0
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._write_all, name="log-writer", daemon=True)
        self._thread.start()

    def __getattr__(self, name: str):
        if name not in _WRITES:
            raise AttributeError(name)

        def submit(*args, **kwargs) -> None:
            self._submit(name, args, kwargs)

        return submit

    def _submit(self, name: str, args: tuple, kwargs: dict) -> None:
        if self._error is not None or self._closed:
            self.dropped += 1
            return
        try:
            self._queue.put_nowait((name, args, kwargs))
        except queue.Full:
            self.dropped += 1

    def _write_all(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if self._error is not None:
                continue
            name, args, kwargs = item
            try:
                getattr(self.log, name)(*args, **kwargs)
                self.written += 1
            except BaseException as error:  # kept and raised from close()
                self._error = error

    def close(self) -> Path:
        """Write what is queued, close the bag (published atomically) and return its path."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join()
            self.log.bag.custom_data["dropped_messages"] = str(self.dropped)
        path = self.log.close()
        if self._error is not None:
            raise RuntimeError(f"writing the log {self.path} failed") from self._error
        return path

    def __enter__(self) -> BackgroundLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
