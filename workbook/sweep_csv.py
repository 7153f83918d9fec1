"""A sweep or recommend table as CSV: one row per combination, values (no formulas).

Text cells go through :func:`inference_ledger.core.files.csv_text`, so no spreadsheet runs them as
a formula; whole numbers are written as ``1``, not ``1.0``.
"""

from __future__ import annotations

import csv

import numpy as np

from inference_ledger.core.files import csv_text
from inference_ledger.graph.sweep import Table, columns, evaluate_block


def write_csv(table: Table, tmp: str, progress) -> None:
    """Every row of the table to ``tmp``, a block at a time; ``progress(rows)`` after each block."""
    cols = columns(table)
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([c.key for c in cols])
        for labels, inputs in table.blocks():
            vals = evaluate_block(table, inputs)
            data = [csv_column(labels[c.key] if c.kind == "label" else vals[c.key]) for c in cols]
            w.writerows(zip(*data))
            if progress:
                progress(len(data[0]))


def csv_column(values) -> list:
    """A column's CSV cells: text that no spreadsheet runs as a formula, whole numbers as 1 (not 1.0)."""
    a = np.asarray(values)
    if a.dtype.kind in "USO":
        return [csv_text(str(x)) for x in a.tolist()]
    a = a.astype(float)
    whole = np.isfinite(a) & (a == np.round(a)) & (np.abs(a) < 2.0**53)
    if whole.all():
        return a.astype(np.int64).tolist()
    return [int(x) if w else x for x, w in zip(a.tolist(), whole.tolist())]
