"""What the two kernel-table distillers (scripts/distill_kernels.py, scripts/distill_amd_kernels.py) share: the M axis
of their GEMM tables' columns m<M>, and writing a table in one go."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

#: Tokens (M) of the GEMM tables' columns m<M>, NVIDIA's and AMD's alike.
GEMM_M = (1, 4, 16, 64, 256, 1024, 4096, 16384)


def write(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file beside it: a reader never sees half a table."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def table(rows) -> str:
    """The rows as CSV text, one line each."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow(r)
    return buf.getvalue()
