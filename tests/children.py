"""A test's function run in a forked child of the test process (its modules and the session's renders already
loaded): for what must not touch this process, a resource limit or a dropped user, or a costly pure result the
session wants later (conftest.py starts the leave-one-source-out study this way, on the machine's other core)."""

from __future__ import annotations

import os
import pickle
import signal
from typing import Any, Callable, Optional


class Child:
    """``fn()`` in a child forked now (as user and group ``uid`` when given, dropped before it runs);
    :meth:`result` waits for it."""

    def __init__(self, fn: Callable[[], Any], uid: Optional[int] = None):
        self._r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover (child)
            try:
                os.close(self._r)
                if uid is not None:
                    os.setgid(uid)
                    os.setuid(uid)
                data = memoryview(pickle.dumps(fn()))
                while data:
                    data = data[os.write(w, data):]
            finally:
                os._exit(0)
        os.close(w)

    def result(self) -> Any:
        """The child's return value, None when it returned none (it failed before it could)."""
        with os.fdopen(self._r, "rb") as f:
            got = f.read()
        os.waitpid(self.pid, 0)
        self.pid = None
        return pickle.loads(got) if got else None

    def stop(self) -> None:
        """End the child if its result was never asked for."""
        if self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            os.close(self._r)
            self.pid = None


def forked(fn: Callable[[], Any], uid: Optional[int] = None) -> Any:
    """``fn()`` in a forked child, waited for: its result, None when the child wrote none."""
    return Child(fn, uid).result()
