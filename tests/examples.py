"""How many examples a costly property test tries: the count it names in CI (scripts/test.sh sets IL_EXAMPLES=all),
a quarter of it (at least 5) in the fast loop, so `pytest -m "not libreoffice"` stays quick."""

from __future__ import annotations

import os

ALL = os.environ.get("IL_EXAMPLES", "") == "all"


def examples(n: int) -> int:
    return n if ALL else max(5, n // 4)
