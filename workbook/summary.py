"""The Summary sheet, first in the workbook: the question and the answer on one screen and one printed page.

* The answer in words: the sentences of :mod:`inference_ledger.graph.summary` (the same definition `plan` prints
  first and the email says), each a live formula over the plan's defined names.
* The key numbers with their targets, a status in words (coloured only where it is a pass or a fail).
* The cheapest scenario that meets the targets (the TCO sheet's comparison of the Scenarios rows) and every
  check that fails, in words (the Checks sheet's failures, numbered there).
* Two charts: monthly cost by scenario (a scenario that does not fit gets no bar and says so in its label)
  and output tokens/s and TPOT against concurrency with the TPOT target (the Load sheet's rows).

It is built after every other sheet (it reads their cells) and placed first (:data:`BUILD_LAST`).
"""

from __future__ import annotations

from typing import Any

from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill

from inference_ledger.formulas import finance_forecast, serving
from inference_ledger.graph import plan, resolve, summary, verdict
from inference_ledger.core.refs import reference
from inference_ledger.core.expr import NOVALUE, Sym
from inference_ledger.core.sheetfuncs import and_, concat, eq, gt, le, or_, where
from inference_ledger.core.refs import count_of, iferror, index, match, min_of
from inference_ledger.core.units import MS_PER_S

from . import style
from .cells import bill, fit_rows, header, named, section, verdict_code, verdict_rules, verdict_words
from .context import Ctx
from .load_chart import X_RANGE, cell_title
from .printing import chart_box, last_row_under
from .tco import SHEET as TCO, scenario_columns

SHEET = "Summary"
#: Rows of the failing checks the sheet lists (the rest are counted).
FAILURES_SHOWN = 5
#: A number format that shows nothing (a lookup key a formula reads but a reader need not see).
HIDDEN_NUMBER = ";;;"
#: Columns: index | label | value | target or also | status, then the charts from G.
WIDTHS = {"A": 3, "B": 42, "C": 16, "D": 16, "E": 19, "F": 2, "G": 12, "H": 12, "I": 12, "J": 12, "K": 12, "L": 12}
#: Where the chart data live (beyond the printed columns).
DATA_COL = 16  # P


class _Refs(dict):
    """Every name as a reference to its defined name, carrying the value it holds (the workbook side of a summary
    sentence; ``quantities``: the plan's values and the choice, for a name not written yet)."""

    def __init__(self, ctx: Ctx, quantities: dict[str, Any]):
        super().__init__()
        self._ctx, self._q = ctx, quantities

    def __missing__(self, key: str) -> Sym:
        return self._ctx.name(named(key), self._q.get(key, NOVALUE))


def quantities(ctx: Ctx) -> dict[str, Any]:
    """The Python side of the summary sentences: the plan's values and the workbook's choice."""
    return summary.quantities({**ctx.inputs, **ctx.values}, {
        "model": ctx.choice["model"], "gpu": ctx.choice["gpu"], "weight_dtype": ctx.choice["weight_dtype"],
        "kv_dtype": ctx.choice["kv_dtype"], "engine": ctx.choice["engine"],
        "model_figures_given": resolve.figures_given(ctx.overrides)})


def _wide(ctx: Ctx, ws, r: int, expr, cols: str = "B{r}:E{r}", st: str = style.ANSWER):
    c = ctx.formula(ws, f"B{r}", expr, st)
    c.alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells(cols.format(r=r))
    return c


def summary_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet(SHEET, "Summary: does it fit, how many GPUs, what it costs", WIDTHS, tab="1F3864")
    ctx.put(ws, "A3", "The plan's answer on one page; every number is a live formula over the Plan sheet's inputs "
            "(change them there). The Start sheet explains the workbook; each sheet links back here.", style.NOTE)
    ws.merge_cells("A3:L3")
    q, cur = quantities(ctx), ctx.currency_symbol
    refs = _Refs(ctx, q)
    r = 5
    section(ctx, ws, f"B{r}", "The answer")
    for key, label, _ in summary.SENTENCES:
        r += 1
        _wide(ctx, ws, r, summary.sentence(key, refs, cur))
    r = _alternative(ctx, wb, ws, r + 1)
    r, verdict_cell = _key_numbers(ctx, ws, r + 2)
    r = _failures(ctx, ws, r + 2, verdict_cell)
    last = r
    _cost_chart(ctx, wb, ws)
    _load_chart(ctx, wb, ws)
    fit_rows(ws, ctx.cached)   # the rows' heights as printed, then the page ends below the lowest chart
    bottom = max([chart_box(ws, ch)[3] for ch in ws._charts], default=0.0)
    ws.print_area = f"A1:L{max(last, last_row_under(ws, bottom))}"


def _alternative(ctx: Ctx, wb, ws, r: int) -> int:
    """The cheapest Scenarios row that meets the targets (TCO's comparison), in a sentence."""
    if TCO not in wb.sheetnames or "scenario_cheapest" not in ctx.names:
        return r - 1
    label = finance_forecast.cheapest_of(ctx.name("scenario_labels"), ctx.name("scenario_cheapest"))
    ctx.put(ws, f"T{r}", "Cheapest scenario that meets the targets", style.NOTE)
    ctx.formula(ws, f"U{r}", label, style.FORMULA)
    ctx.formula(ws, f"V{r}", min_of(ctx.name("scenario_meets_cost")), style.FORMULA, style.number_format("$/month"))
    _wide(ctx, ws, r, summary.alternative(ctx.at(ws, f"U{r}"), ctx.at(ws, f"V{r}"), ctx.currency_symbol))
    return r


def _status(ws, coord: str, ok: str, runs: Any = None) -> None:
    """Pass/fail colours on a status cell, from a 1/0 condition; with ``runs`` (the verdict code), green only where a
    replica runs: a plan that does not fit meets no target, whatever its ``ok`` says."""
    good, bad = eq(reference(ok), 1), eq(reference(ok), 0)
    if runs is not None:
        good, bad = and_(good, gt(runs, verdict.DOES_NOT_FIT)), or_(bad, le(runs, verdict.DOES_NOT_FIT))
    for cond, c in ((good, style.GREEN), (bad, style.RED)):
        ws.conditional_formatting.add(coord, FormulaRule(formula=[cond.text], fill=PatternFill("solid", fgColor=c[0],
                                                                                           bgColor=c[0]),
                                                         font=Font(color=c[1], bold=True)))


def _key_numbers(ctx: Ctx, ws, r: int) -> tuple[int, str]:
    v = {**ctx.inputs, **ctx.values}
    n = ctx.quantity
    section(ctx, ws, f"B{r}", "Key numbers")
    r += 1
    header(ctx, ws, r, 2, ["Quantity", "Plan", "Target or also", "Status"])
    fmt = style.number_format

    def row(label, value, vfmt=None, also=None, afmt=None, status=None, ok=None, runs=None):
        nonlocal r
        r += 1
        ctx.put(ws, f"B{r}", label)
        for col, item, f in (("C", value, vfmt), ("D", also, afmt)):
            if item is not None:
                ctx.formula(ws, f"{col}{r}", item, style.FORMULA, f)
                ws[f"{col}{r}"].alignment = Alignment(horizontal="right", vertical="top")
        if status is not None:
            ctx.formula(ws, f"E{r}", status, style.FORMULA)
            if ok is not None:
                _status(ws, f"E{r}", ok, runs)

    def line(k, transform=None):
        return n(k) if transform is None else transform(n(k))

    def unless_unfit(k, expr=None):   # a bill: the verdict's words when the plan does not start
        return bill(verdict_code(ctx), n(k) if expr is None else expr)

    r += 1
    ctx.put(ws, f"B{r}", "Verdict")
    verdict_cell = f"C{r}"
    ctx.formula(ws, f"C{r}", verdict_words(ctx), style.FORMULA)
    ws.merge_cells(f"C{r}:E{r}")
    verdict_rules(ws, f"C{r}:E{r}", named("verdict"))
    words = lambda ok_name, yes, no: where(eq(n(ok_name), 1), yes, no)  # noqa: E731
    row("Memory per GPU (planned / usable)", line("total_bytes_per_gpu"), fmt("B"), line("usable_bytes_per_gpu"),
        fmt("B"), words("fits", "fits", "does not fit"), named("fits"))
    row(plan.LINE_BY_NAME["headroom_bytes_per_gpu"].label, line("headroom_bytes_per_gpu"), fmt("B"))
    row("GPUs for the target QPS / replicas", unless_unfit("gpus_for_qps"), "#,##0",
        unless_unfit("replicas_for_qps"), "#,##0")
    row("Servers / GPUs per server", unless_unfit("servers_for_qps"), "#,##0", line("gpus_per_server"), "#,##0")
    row("Monthly cost: on demand / owned", unless_unfit("monthly_cost_qps"), fmt("$/month"),
        unless_unfit("owned_monthly_cost_qps"), fmt("$/month"))
    if "gpus_for_qps_low" in v:  # the error bands (inference_ledger/graph/band_lines.py): low / high
        row("GPUs, band low / high (about 80% of new measurements fall inside)", unless_unfit("gpus_for_qps_low"),
            "#,##0", unless_unfit("gpus_for_qps_high"), "#,##0")
        row("Monthly cost on demand, band low / high", unless_unfit("monthly_cost_qps_low"), fmt("$/month"),
            unless_unfit("monthly_cost_qps_high"), fmt("$/month"))
    row("Per million output tokens: on demand / owned", unless_unfit("cost_per_million_output_tokens"),
        fmt("$/Mtok"), unless_unfit("owned_cost_per_million_output_tokens"), fmt("$/Mtok"))
    # buy or rent compares the fleet's two bills, and arrivals at the target QPS spread over the fleet: neither
    # exists when one replica does not fit
    row("Own vs rent: break-even / planned utilization", unless_unfit("breakeven_utilization"), "0%",
        line("utilization"), "0%", unless_unfit("", words("owned_beats_rent", "owning is cheaper", "renting is cheaper")))
    # the target is checked at the target QPS (arrivals one by one); a benchmark's clients start together
    row("TTFT at the target QPS / target", unless_unfit("", line("ttft_open_seconds", lambda x: x * MS_PER_S)),
        fmt("ms"), line("ttft_target", lambda x: x * MS_PER_S), fmt("ms"),
        unless_unfit("", words("ttft_ok", "meets the target", "misses the target")), named("ttft_ok"),
        runs=verdict_code(ctx))
    row("TTFT a benchmark would report, clients started together",
        unless_unfit("", line("ttft_seconds", lambda x: x * MS_PER_S)), fmt("ms"))
    if "ttft_seconds_low" in v:
        row("TTFT a benchmark would report, band low / high",
            unless_unfit("", line("ttft_seconds_low", lambda x: x * MS_PER_S)), fmt("ms"),
            unless_unfit("", line("ttft_seconds_high", lambda x: x * MS_PER_S)), fmt("ms"))
    row("TPOT / target", line("tpot_seconds", lambda x: x * MS_PER_S), fmt("ms"),
        line("tpot_target", lambda x: x * MS_PER_S), fmt("ms"),
        unless_unfit("", words("tpot_ok", "meets the target", "misses the target")), named("tpot_ok"),
        runs=verdict_code(ctx))
    if "tpot_seconds_low" in v:
        row("TPOT, band low / high", unless_unfit("", line("tpot_seconds_low", lambda x: x * MS_PER_S)), fmt("ms"),
            unless_unfit("", line("tpot_seconds_high", lambda x: x * MS_PER_S)), fmt("ms"))
    r += 1
    ctx.put(ws, f"B{r}", "What limits a replica")
    ctx.formula(ws, f"C{r}", serving.limit_words(n("binding_limit")))
    ws.merge_cells(f"C{r}:E{r}")
    return r, verdict_cell


#: The failures section's sentence when the master check passes.
NO_FAILURE = "None: all checks pass."
#: ... when no check fails but the verdict is not "fits, meets targets" (the master check's other half).
VERDICT_ONLY = "Every check passes, but the master check fails: the verdict is \""
#: ... when no counted check fails but an input breaks a range or choice rule.
RULE_ONLY = "A rule is broken: "


def failures_sentence(master, checks_pass, failing, rule_broken, verdict_words):
    """The failures section's sentence from the cells the master check reads: the master check, the rules, the
    count of failing checks, the first broken rule and the verdict in words (numbers and texts, or references to
    render it)."""
    return where(eq(master, 1), NO_FAILURE,
                 where(gt(failing, 0), concat(summary.count(failing), " checks fail (Checks sheet):"),
                       where(eq(checks_pass, 0), concat(RULE_ONLY, rule_broken, "."),
                             concat(VERDICT_ONLY, verdict_words, "\"."))))


def _failures(ctx: Ctx, ws, r: int, verdict_cell: str) -> int:
    """Every counted check that fails, in words (the Checks sheet numbers its failures), under a sentence that reads
    the same cells as the master check (a plan that does not fit never reads "None")."""
    section(ctx, ws, f"B{r}", "Checks that fail")
    r += 1
    if "check_failure_no" not in ctx.names:
        return r
    failures = ctx.name("check_failure_no")
    ctx.formula(ws, f"B{r}", failures_sentence(ctx.name("master_check"), ctx.name("checks_pass"), count_of(failures),
                                               ctx.name("rule_broken"), ctx.at(ws, verdict_cell)))
    ws.merge_cells(f"B{r}:E{r}")
    for k in range(1, FAILURES_SHOWN + 1):
        r += 1
        # the k-th failure's number reads in its sentence, so a row with no failure is blank, not a bare "3."; the
        # k the lookup matches sits in column A, not shown (;;; shows nothing)
        ctx.put(ws, f"A{r}", k, style.NOTE, HIDDEN_NUMBER)
        k_cell = ctx.at(ws, f"A{r}")
        _wide(ctx, ws, r, iferror(concat(k_cell, ". ", index(ctx.name("check_labels"), match(k_cell, failures))), ""))
    return r


def _cost_chart(ctx: Ctx, wb, ws) -> None:
    """Monthly cost by scenario: a bar per scenario that fits; one that does not says so in its label."""
    if "Scenarios" not in wb.sheetnames:
        return
    cols, rows = scenario_columns(wb)
    c = lambda k: chr(ord("A") + DATA_COL - 1 + k)  # noqa: E731
    top = 4
    section(ctx, ws, f"{c(0)}{top}", "Chart data: monthly cost by scenario")
    header(ctx, ws, top + 1, DATA_COL, ["Scenario", "Monthly cost (target QPS)"])
    r = top + 1
    for sr in rows:
        r += 1
        ref = lambda k, sr=sr: ctx.at("Scenarios", f"{cols[k]}{sr}", fix="col", qualified=True)  # noqa: E731
        unfit = eq(ref("verdict"), verdict.DOES_NOT_FIT)
        label = ctx.at("Scenarios", f"A{sr}", fix="col", qualified=True)
        ctx.formula(ws, f"{c(0)}{r}", where(unfit, concat(label, ": does not fit"), label))
        ctx.formula(ws, f"{c(1)}{r}", where(unfit, 0, ref("monthly_cost_qps")), style.FORMULA,
                    style.number_format("$/month"))
    ch = BarChart()
    ch.type = "bar"
    ch.title = "Monthly cost by scenario (target QPS, on demand)"
    ch.add_data(Reference(ws, min_col=DATA_COL + 1, min_row=top + 1, max_row=r), titles_from_data=True)
    ch.set_categories(Reference(ws, min_col=DATA_COL, min_row=top + 2, max_row=r))
    ch.x_axis.scaling.orientation = "maxMin"   # the first scenario on top, the value axis below
    ch.y_axis.crosses = "max"
    ch.gapWidth = 60
    ch.y_axis.numFmt = style.money('"$"#,##0,"k"')
    ch.y_axis.scaling.min = 0
    ch.x_axis.delete = ch.y_axis.delete = False
    ch.legend = None
    ch.x_axis.tickLblSkip = 1   # every scenario named, in small type
    ch.x_axis.txPr = style.axis_text(7)
    ch.height, ch.width = 12.5, 17.5
    ws.add_chart(ch, "G5")


def _load_chart(ctx: Ctx, wb, ws) -> None:
    """Output tokens/s (left axis) and TPOT (right axis) against concurrency, with the TPOT target."""
    if "Load" not in wb.sheetnames:
        return
    load = wb["Load"]
    head = next((c.row for c in load["A"] if c.value == "Concurrency"), None)
    if head is None:
        return
    labels = {c.value: c.column for c in load[head] if isinstance(c.value, str)}
    tok, tpot = labels.get(plan.LINE_BY_NAME["tokens_per_second"].label), labels.get(plan.LINE_BY_NAME["tpot_seconds"].label)
    first = head + 2
    last = first
    while isinstance(load.cell(last + 1, 1).value, (int, float)):
        last += 1
    target = next((c.row for c in load["A"] if c.value == "TPOT target"), None)
    if tok is None or tpot is None or target is None:
        return
    xs = Reference(load, min_col=1, min_row=first, max_row=last)

    def series(col, rows, x, title, color, dash=False):
        s = Series(Reference(load, min_col=col, min_row=rows[0], max_row=rows[1]), x, title=title)
        s.graphicalProperties.line.solidFill = color
        s.marker.symbol = "none" if dash else "circle"
        if dash:
            s.graphicalProperties.line.dashStyle = "dash"
        s.smooth = False
        return s

    a = ScatterChart(scatterStyle="lineMarker")
    a.title = next(cell_title(ctx, "Load", f"B{c.row}") for c in load["A"] if c.value == "Summary chart")
    a.y_axis.title = "Output tokens/s"
    a.x_axis.scaling.logBase = 2
    a.x_axis.scaling.min, a.x_axis.scaling.max = X_RANGE   # the candidate rows' range (the first is a formula)
    a.y_axis.scaling.min = 0
    a.y_axis.numFmt = "#,##0"
    a.x_axis.numFmt = "#,##0"
    a.y_axis.majorGridlines = None
    a.series.append(series(tok, (first, last), xs, "Output tokens/s", "4472C4"))
    b = ScatterChart(scatterStyle="lineMarker")
    b.y_axis.axId = 200
    b.y_axis.title = "TPOT, seconds"
    b.y_axis.numFmt = "0.000"
    b.y_axis.scaling.min = 0
    b.y_axis.crosses = "max"
    b.x_axis = a.x_axis
    b.series.append(series(tpot, (first, last), xs, "TPOT", "ED7D31"))
    b.series.append(series(4, (target, target + 1), Reference(load, min_col=2, min_row=target, max_row=target + 1),
                           "TPOT target", "70AD47", dash=True))
    for ax in (a.x_axis, a.y_axis, b.y_axis):
        ax.delete = False
    a += b
    a.legend.position = "b"
    a.height, a.width = 7.5, 17.5
    ws.add_chart(a, "G31")


#: Built after every other sheet (it reads their cells), shown first.
BUILD_LAST = (summary_sheet,)
