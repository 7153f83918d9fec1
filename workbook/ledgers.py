"""The Memory, Compute and Bandwidth sheets: one plan line per row, its formula over named quantities."""

from __future__ import annotations

from inference_ledger import plan

from . import style
from .cells import LEDGER_SHEETS, header, line_row, named
from .context import Ctx, SheetBuilder

__all__ = ["LEDGER_SHEETS", "ledger_sheet"]


def ledger_sheet(ledger: str, title: str) -> SheetBuilder:
    def build(wb, ctx: Ctx) -> None:
        ws = ctx.new_sheet(title, f"{title} ledger", {"A": 36, "B": 18, "C": 13, "D": 12, "E": 80, "F": 30},
                           tab="4472C4")
        ctx.put(ws, "A3", "One line per row: the formula refers to named quantities (click a value to read it); "
                "inputs live on the Plan sheet.", style.NOTE)
        ws.merge_cells("A3:F3")
        header(ctx, ws, 5, 1, ["Line", "Value", "Unit", "Also", "Why (one sentence)", "Name"])
        ws.freeze_panes = "A6"
        r = 6
        for line in [l for l in plan.LINES if l.ledger == ledger]:
            line_row(ctx, ws, r, "A", line)
            ctx.put(ws, f"F{r}", named(line.name), style.NOTE)
            r += 1
    build.__name__ = f"{ledger}_sheet"
    return build

