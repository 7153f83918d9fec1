"""The Checks sheet, and what the verdict and the master check read from it.

The checks themselves (the seed's checklist, the plan's integrity rules, the findings) are defined in
:mod:`inference_ledger.workbook.checks`; this module lays them out, adds the plan inputs' choice and range rules, and
concludes (:func:`standing`): every counted check and rule passes (``checks_pass``), else the Plan's
verdict is "invalid input" and names the first broken rule (``rule_broken``); the master check is 1 only
when they all pass and the verdict is "fits, meets targets".  A check row added to
:func:`inference_ledger.workbook.checks.check_rows` lands inside the block the verdict reads: no further wiring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from inference_ledger.graph import plan
from inference_ledger.core.refs import name as defined_name
from inference_ledger.core.expr import Sym
from inference_ledger.core.sheetfuncs import concat, eq, isnumber, one_zero, where
from inference_ledger.core.refs import count_of, iferror, index, match, min_of
from inference_ledger.core.units import VERDICT_MEETS

from . import style
from .cells import SELECTOR_NAMES, flag_rules, header, named, quantity_format, section
from .checks import check_rows, in_range
from .context import Ctx
from .tables import SELECTORS
from .tco import PRICE_LISTED, PRICE_LISTED_LABEL


def choice_rows(ctx: Ctx) -> list[tuple[str, str, Sym, int]]:
    """(defined name, allowed, formula, 1/0) of every dropdown choice: its id is on its catalog sheet."""
    rows = []
    for key, _label, sheet in SELECTORS:
        t = ctx.tables[sheet]
        found = one_zero(isnumber(match(defined_name(SELECTOR_NAMES[key], ctx.choice[key]), t.ids_expr())))
        rows.append((SELECTOR_NAMES[key], f"an id of the {sheet} sheet", found,
                     int(any(e.id == ctx.choice[key] for e in t.rows))))
    return rows


def range_rows(ctx: Ctx) -> list[tuple[plan.Input, int]]:
    """(input, 1/0 in range) of every plan input, in plan order."""
    rows = []
    for inp in plan.INPUTS:
        a = inp.arg
        rows.append((inp, int(in_range(ctx.inputs[inp.name], a.lo, int(a.lo_inclusive), a.hi, int(a.integer)))))
    return rows


def range_rule(inp: plan.Input) -> str:
    """The words of an input's range rule (the Checks sheet's Input & " must be " & Allowed)."""
    return f"{inp.name}{MUST_BE}{allowed_text(inp)}"


def allowed_text(inp: plan.Input) -> str:
    """An input's allowed range for a reader: numbers with separators, never 1e+15."""
    a = inp.arg

    def num(x: float) -> str:
        return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.{style.decimals_for(x)}f}"
    kind = "a whole number" if a.integer else "a number"
    return f"{kind} {'>=' if a.lo_inclusive else '>'} {num(a.lo)} and <= {num(a.hi)} ({inp.unit})"


#: What joins an input's name to its allowed range in the words of a broken rule.
MUST_BE = " must be "
#: The broken-rule cell's text when every rule holds.
NO_RULE_BROKEN = "none"


@dataclass(frozen=True)
class Standing:
    """What the Checks sheet concludes, computed as its formulas do (the build caches these values)."""

    checks_pass: int     # every counted check and range rule is 1
    rule_broken: str     # the first broken rule's words (range rules first: they name the input), or NO_RULE_BROKEN
    verdict_meets: int   # the Plan's verdict is "fits, meets targets"
    master: int          # min(checks_pass, verdict_meets)


def standing(ctx: Ctx, verdict_code: Any) -> Standing:
    """The Checks sheet's conclusions for the build's plan (its verdict code as the plan computes it)."""
    counted = [(label, v) for g, label, _d, _f, v in check_rows(ctx) if not g.startswith("Findings")]
    broken = [f"{name}{MUST_BE}{allowed}" for name, allowed, _f, v in choice_rows(ctx) if v == 0] \
        + [range_rule(inp) for inp, v in range_rows(ctx) if v == 0] + [label for label, v in counted if v == 0]
    ok = int(not broken)
    meets = int(ok == 1 and float(verdict_code) == float(VERDICT_MEETS))
    return Standing(ok, broken[0] if broken else NO_RULE_BROKEN, meets, min(ok, meets))


def _guarded(formula: Sym) -> Sym:
    """A check's formula that reads an error value (a text typed for a number, an id not in a catalog) as a failure."""
    return iferror(formula, 0)


def checks_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Checks", "Checks", {"A": 26, "B": 70, "C": 10, "D": 80}, tab="7F7F7F")
    ctx.put(ws, "A3", "Each check is 1 (pass) or 0 (fail); one that cannot be computed (a text typed for a number, "
            "an id not in a catalog) fails. The Plan's verdict reads every counted check and range rule: one at 0 "
            "makes it \"invalid input\" and names the first broken rule. The master check is 1 only when all of them "
            "pass and the verdict is \"fits, meets targets\"; it shows on every sheet. Findings describe the plan "
            "and are not counted.", style.NOTE)
    ws.merge_cells("A3:D3")
    header(ctx, ws, 5, 1, ["Group", "Check", "Result", "What it verifies", "Failure no."])
    rows = check_rows(ctx)
    # the counted checks first, in one block (the verdict looks for the first broken one), then the findings
    rows = [x for x in rows if not x[0].startswith("Findings")] + [x for x in rows if x[0].startswith("Findings")]
    r = 5
    counted: list[int] = []
    for group, label, doc, formula, value in rows:
        r += 1
        ctx.put(ws, f"A{r}", group, style.NOTE)
        ctx.put(ws, f"B{r}", label, style.NOTE)
        ctx.formula(ws, f"C{r}", _guarded(formula), style.CHECK, style.PASS_FAIL)
        flag_rules(ws, f"C{r}", f"C{r}")
        if label == PRICE_LISTED_LABEL:   # the Summary's price sentence reads this cell
            ctx.define(PRICE_LISTED, ws, f"C{r}")
        ctx.put(ws, f"D{r}", doc, style.NOTE)
        if not group.startswith("Findings"):
            counted.append(r)
            # the failures numbered 1, 2 ... in sheet order: the Summary lists them in words
            ctx.formula(ws, f"E{r}", where(eq(ctx.at(ws, f"C{r}"), 0),
                                           count_of(ctx.span(ws, "E5", f"E{r - 1}", fix="row", fix_last="")) + 1, ""),
                        style.FORMULA, "0")
    ctx.define("check_labels", ws, f"B6:B{r}")
    ctx.define("check_failure_no", ws, f"E6:E{r}")
    r += 2
    section(ctx, ws, f"A{r}", "Plan inputs: choices in their catalogs, numbers in range (ranges from "
            "inference_ledger.core.args)")
    r += 1
    header(ctx, ws, r, 1, ["Input", "Value", "In range", "Allowed"])
    for col, text in (("E", "Min"), ("F", "Min allowed (1/0)"), ("G", "Max"), ("H", "Whole (1/0)")):
        ctx.put(ws, f"{col}{r}", text, style.HEADER)
    for col in "EFGH":
        ws.column_dimensions[col].width = 12
    in_range_rows: list[int] = []
    for name, allowed, formula, ok in choice_rows(ctx):   # the choices first: an unknown id breaks every lookup
        r += 1
        ctx.put(ws, f"A{r}", name)
        ctx.formula(ws, f"B{r}", ctx.name(name), style.FORMULA)
        ctx.formula(ws, f"C{r}", _guarded(formula), style.CHECK, style.PASS_FAIL)
        flag_rules(ws, f"C{r}", f"C{r}")
        ctx.put(ws, f"D{r}", allowed, style.NOTE)
        in_range_rows.append(r)
    for inp, ok in range_rows(ctx):
        r += 1
        a = inp.arg
        ctx.put(ws, f"A{r}", inp.name)
        v = ctx.inputs[inp.name]
        ctx.formula(ws, f"B{r}", ctx.name(named(inp.name)), style.FORMULA, quantity_format(inp.name, inp.unit, v))
        ctx.put(ws, f"E{r}", a.lo, style.CONSTANT, style.number_format("", a.lo))
        ctx.put(ws, f"F{r}", int(a.lo_inclusive), style.CONSTANT, style.number_format("1/0"))
        ctx.put(ws, f"G{r}", a.hi, style.CONSTANT, style.number_format("", a.hi))
        ctx.put(ws, f"H{r}", int(a.integer), style.CONSTANT, style.number_format("1/0"))
        cells = [ctx.at(ws, f"{c}{r}") for c in "BEFGH"]
        ctx.formula(ws, f"C{r}", _guarded(in_range(*cells)), style.CHECK, style.PASS_FAIL)
        flag_rules(ws, f"C{r}", f"C{r}")
        ctx.put(ws, f"D{r}", allowed_text(inp), style.NOTE)
        in_range_rows.append(r)
    r += 2
    section(ctx, ws, f"A{r}", "What the verdict and the master check read")
    r += 1
    ctx.put(ws, f"A{r}", "Rules")
    ctx.put(ws, f"B{r}", "Every counted check and range rule above passes (else the verdict is \"invalid input\")",
            style.NOTE)
    ranges = [ctx.span(ws, f"C{a}", f"C{b}") if a != b else ctx.at(ws, f"C{a}")
              for a, b in _runs(counted + in_range_rows)]
    ctx.formula(ws, f"C{r}", min_of(*ranges), style.CHECK, style.PASS_FAIL)
    flag_rules(ws, f"C{r}", f"C{r}")
    ctx.define("checks_pass", ws, f"C{r}")
    r += 1
    ctx.put(ws, f"B{r}", "First rule broken (range rules first: they name the input)", style.NOTE)
    ctx.formula(ws, f"D{r}", _first_broken(ctx, ws, counted, in_range_rows), style.FORMULA)
    ctx.define("rule_broken", ws, f"D{r}")
    r += 1
    ctx.put(ws, f"A{r}", "Verdict")
    ctx.put(ws, f"B{r}", "The Plan's verdict is \"fits, meets targets\"", style.NOTE)
    ctx.formula(ws, f"C{r}", one_zero(eq(ctx.name(named("verdict")), VERDICT_MEETS)), style.CHECK, style.PASS_FAIL)
    flag_rules(ws, f"C{r}", f"C{r}")
    verdict_row = r
    r += 2
    ctx.put(ws, f"A{r}", "Master check", style.SECTION)
    ctx.formula(ws, f"C{r}", min_of(ctx.at(ws, f"C{verdict_row - 2}"), ctx.at(ws, f"C{verdict_row}")), style.CHECK,
                style.PASS_FAIL)
    flag_rules(ws, f"C{r}", f"C{r}")
    ctx.define("master_check", ws, f"C{r}")
    # every sheet's row 2 read the master check before this sheet existed (ctx.master_value, from standing()): the
    # cells' own values must agree with it
    got = (ctx.held(ws.title, f"C{verdict_row - 2}"), ctx.held(ws.title, f"C{verdict_row}"), ctx.held(ws.title, f"C{r}"))
    st = standing(ctx, ctx.values["verdict"])
    if got != (st.checks_pass, st.verdict_meets, st.master) or got[2] != ctx.master_value:
        raise AssertionError(f"Checks sheet: the cells give checks_pass, verdict, master {got}, the build read {st}")


def _first_broken(ctx: Ctx, ws, counted: Sequence[int], in_range_rows: Sequence[int]) -> Sym:
    """The words of the first broken rule: an input's name and range, else a check's label, else NO_RULE_BROKEN.

    Each block is one run of rows (MATCH over a range: a row added to the checks lands inside it)."""
    assert counted == list(range(counted[0], counted[-1] + 1))
    assert in_range_rows == list(range(in_range_rows[0], in_range_rows[-1] + 1))
    c0, c1, i0, i1 = counted[0], counted[-1], in_range_rows[0], in_range_rows[-1]
    col = lambda c, a, b: ctx.span(ws, f"{c}{a}", f"{c}{b}", fix="both")  # noqa: E731
    at = match(0, col("C", i0, i1))
    name = concat(index(col("A", i0, i1), at), MUST_BE, index(col("D", i0, i1), at))
    label = index(col("B", c0, c1), match(0, col("C", c0, c1)))
    return iferror(name, iferror(label, NO_RULE_BROKEN))


def _runs(rows: Sequence[int]) -> list[tuple[int, int]]:
    """Rows as runs of consecutive rows: 6, 7, 8, 10 -> (6, 8), (10, 10)."""
    out: list[list[int]] = []
    for row in rows:
        if out and row == out[-1][1] + 1:
            out[-1][1] = row
        else:
            out.append([row, row])
    return [(a, b) for a, b in out]


def master_value(ctx: Ctx) -> int:
    """The master check's value for the build's plan."""
    return standing(ctx, ctx.values["verdict"]).master
