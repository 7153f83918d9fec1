"""The Memory, Compute and Bandwidth sheets: one plan line per row, its formula over named quantities.

A family of lines (:data:`inference_ledger.graph.plan.FAMILIES`, e.g. the fit test at each TP degree of one node) whose
members belong to a sheet's ledger follows the lines as a table: one row per member, one column per candidate.
"""

from __future__ import annotations

from openpyxl.utils import get_column_letter

from inference_ledger.graph import plan, verdict
from inference_ledger.core.refs import absolute
from inference_ledger.core.line import Family

from . import style
from .cells import LEDGER_SHEETS, flag_rules, header, line_row, named, py_value, quantity_format, section, unit_text
from .context import Ctx, SheetBuilder

__all__ = ["LEDGER_SHEETS", "ledger_sheet", "family_table"]


def ledger_sheet(ledger: str, title: str) -> SheetBuilder:
    def build(wb, ctx: Ctx) -> None:
        # a bill of a plan that does not fit is a what-if: its title says so
        heading = ctx.fleet_title(f"{title} ledger") if ledger in verdict.FLEET_LEDGERS else f"{title} ledger"
        ws = ctx.new_sheet(title, heading, {"A": 36, "B": 18, "C": 13, "D": 12, "E": 80, "F": 30}, tab="4472C4")
        ctx.put(ws, "A3", "One line per row: the formula refers to named quantities (click a value to read it); "
                "inputs live on the Plan sheet.", style.NOTE)
        ws.merge_cells("A3:F3")
        header(ctx, ws, 5, 1, ["Line", "Value", "Unit", "Also", "Why (one sentence)", "Name"])
        ws.freeze_panes = "A6"
        lines = [l for l in plan.LINES if l.ledger == ledger]
        families = [f for f in plan.FAMILIES if f.members[0].ledger == ledger]
        r = 6 + len(lines) + 1
        tables = []
        for fam in families:   # where each table goes, so the lines that read it know its cells
            tables.append((fam, r))
            r = place_family(ctx, ws, fam, r) + 2
        r = 6
        for line in lines:
            line_row(ctx, ws, r, "A", line)
            ctx.put(ws, f"F{r}", named(line.name), style.NOTE)
            r += 1
        for fam, top in tables:
            family_table(ctx, ws, fam, top)
    build.__name__ = f"{ledger}_sheet"
    return build


def _layout(ctx: Ctx, fam: Family, top: int) -> tuple[dict[str, int], dict[float, str]]:
    """(row of the candidate and of each member, column of each candidate) of a family table starting at row top."""
    rows = {name: top + 2 + k for k, name in enumerate((fam.param, *fam.member_names))}
    cols = {c: get_column_letter(2 + j) for j, c in enumerate(ctx.family_candidates[fam.name])}
    return rows, cols


def place_family(ctx: Ctx, ws, fam: Family, top: int) -> int:
    """Register where each member of a family's table sits (ctx.family_cells); returns the table's last row."""
    rows, cols = _layout(ctx, fam, top)
    for c, col in cols.items():
        for name, r in rows.items():
            ctx.family_cells[fam.flat_name(c, name)] = absolute(ws.title, f"{col}{r}")
    return max(rows.values())


def family_table(ctx: Ctx, ws, fam: Family, top: int) -> None:
    """The family as a table: a row of candidates (formulas of named constants), then each member's row, every cell
    the member's one formula over its own column's candidate and members."""
    rows, cols = _layout(ctx, fam, top)
    cands = ctx.family_candidates[fam.name]
    values = fam.evaluate(ctx.values, cands)
    last = get_column_letter(1 + len(cands))
    section(ctx, ws, f"A{top}", f"{fam.label} ({fam.name})")
    ctx.put(ws, f"A{top + 1}", fam.doc + f" Columns: every candidate up to the largest {fam.bound} in the GPUs table; "
            f"min_gpus_to_fit reads those within the Plan's {fam.bound}. plan --json nests the same figures "
            f"({fam.name}: {{\"1\": {{...}}, \"2\": {{...}}}}).", style.NOTE)
    ws.merge_cells(f"A{top + 1}:F{top + 1}")
    ws.row_dimensions[top + 1].height = 42
    unit_col, name_col = get_column_letter(2 + len(cands)), get_column_letter(3 + len(cands))
    ctx.put(ws, f"A{rows[fam.param]}", f"{fam.param.upper()} degree (GPUs)", style.HEADER)
    for c, col in cols.items():
        ctx.formula(ws, f"{col}{rows[fam.param]}", fam.candidate_formula(c), style.HEADER, "0")
    ctx.put(ws, f"{unit_col}{rows[fam.param]}", "Unit", style.HEADER)
    ctx.put(ws, f"{name_col}{rows[fam.param]}", "Name (plan --json)", style.HEADER)
    for m in fam.members:
        r = rows[m.name]
        ctx.put(ws, f"A{r}", m.label)
        fmt = None
        for c, col in cols.items():
            v = py_value(values[fam.key(c)][m.name])
            fmt = quantity_format(m.name, m.unit, v)
            expr, _ = plan.member_expression(fam.flat_name(c, m.name), ctx.ref, value=v)
            ctx.formula(ws, f"{col}{r}", expr, style.FORMULA, fmt)
        ctx.put_beside(ws, f"{unit_col}{r}", unit_text(m.unit, fmt or ""))
        ctx.put(ws, f"{name_col}{r}", f"{fam.name}.<{fam.param}>.{m.name}", style.NOTE)
        if m.unit == "1/0":
            flag_rules(ws, f"B{r}:{last}{r}", f"B{r}")
    # the table's grid under the family's own name (its plan --json key): rows the candidate then each member,
    # one column per candidate
    ctx.define(named(fam.name), ws, f"B{rows[fam.param]}:{last}{max(rows.values())}")
