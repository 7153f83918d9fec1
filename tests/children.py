"""A test's function run in a forked child of the test process (its modules and the session's renders already
loaded): for what must not touch this process, a resource limit or a dropped user."""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Optional


def forked(fn: Callable[[], Any], uid: Optional[int] = None) -> Any:
    """``fn()`` in a forked child (as user and group ``uid`` when given, dropped before it runs): its JSON result,
    None when the child wrote none."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (child)
        try:
            os.close(r)
            if uid is not None:
                os.setgid(uid)
                os.setuid(uid)
            os.write(w, json.dumps(fn()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read()
    os.waitpid(pid, 0)
    return json.loads(got or "null")
