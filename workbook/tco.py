"""The TCO sheet: own vs rent per used GPU-hour, by utilization, and the scenarios compared.

* The plan's finance lines (``inference_ledger.graph.plan``, ledger ``finance``; formulas in
  :mod:`inference_ledger.formulas.finance`) side by side: on demand, 1- and 3-year reserved, spot, owned, the
  cheapest, in $ per used GPU-hour and $ per million output tokens; the break-even
  utilization and the months of use for owning to pay back.
* A utilization table (20% to 100%): the cost per used GPU-hour of each source at that
  utilization, the same :mod:`inference_ledger.formulas.finance` formulas with the utilization a cell of the
  row; charted as lines that cross at the break-even.
* Scenario comparison: each Scenarios row's $/Mtok and monthly cost, whether it meets the
  targets, and the cheapest row that does (a formula), charted per row.
* The currency (code and symbol) every money format of the workbook shows.
"""

from __future__ import annotations


from openpyxl.chart import BarChart, LineChart, Reference
from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter

from inference_ledger.catalogs import prices
from inference_ledger.formulas import finance, finance_forecast
from inference_ledger.graph import plan
from inference_ledger.core.refs import cell, name as defined_name
from inference_ledger.core.expr import Sym
from inference_ledger.core.sheetfuncs import concat, eq, ge, isnumber, one_zero, where
from inference_ledger.core.refs import match
from inference_ledger.core.units import VERDICT_MEETS
from inference_ledger.graph.verdict import DOES_NOT_FIT
from inference_ledger.graph.bills import is_bill

from . import style
from .cells import bill, verdict_code
from .context import Ctx
from .printing import chart_box, last_row_under

SHEET = "TCO"
CHEAPEST = finance_forecast.CHEAPEST
#: Rows the cheapest-row test looks at: room for Scenarios rows copied down after the build.
ROOM = 200
#: Utilizations of the own-vs-rent table (the axis of its chart; below 20% every committed cost dwarfs the rest).
UTILIZATIONS = tuple(k / 10 for k in range(2, 11))
#: The Checks finding that holds :func:`price_listed`, and the defined name of its cell, which the Summary's price
#: sentence reads (the lookup written once).
PRICE_LISTED_LABEL = "Hourly price of the chosen GPU is a public list price"
PRICE_LISTED = "price_listed"


def price_listed(ctx: Ctx) -> Sym:
    """1 when the Plan's hourly price is a public list price or the user's, 0 when it is the chosen GPU's catalog
    placeholder (catalogs.prices.on_placeholder): the Checks finding, and what the Summary's price sentence reads."""
    gpu, gpus = defined_name("gpu_id", ctx.choice["gpu"]), ctx.tables["GPUs"]
    return where(prices.on_placeholder(gpus.index_match(gpu, "price_source"), ctx.quantity("price_per_gpu_hour"),
                                       gpus.index_match(gpu, "price_per_gpu_hour")), 0, 1)


def finance_checks(ctx: Ctx) -> list[tuple[str, str, str, Sym, int]]:
    """Rows for the Checks sheet: the chosen GPU has a cost row (counted), a public server price and a public hourly
    price (findings)."""
    t = ctx.tables["GPU costs"]
    has = any(e.id == ctx.choice["gpu"] for e in t.rows)
    public = int(has and t.entry(ctx.choice["gpu"]).price_public == 1)
    gpu = defined_name("gpu_id", ctx.choice["gpu"])
    listed = price_listed(ctx)
    return [
        ("Integrity", "GPU is in the GPU costs catalog", "The chosen GPU has a server price and power row.",
         one_zero(isnumber(match(gpu, t.ids_expr()))), int(has)),
        ("Findings (not in the master check)", "Server price of the chosen GPU is a public figure",
         "0 = the GPU costs row has no public price (an estimate: see its price source); edit it or override it on Plan.",
         one_zero(eq(t.index_match(gpu, "price_public"), 1)), public),
        ("Findings (not in the master check)", PRICE_LISTED_LABEL,
         "0 = the GPUs sheet's price is a placeholder (no public on-demand list price found): every bill on it is one "
         f"too; {prices.WORKBOOK_REMEDY}.",
         listed, int(listed.value)),
    ]


# --- the sheet ---------------------------------------------------------------------------------

#: (label, cost per used GPU-hour line, $/Mtok line or None) of the sources compared.
SOURCES = (("On demand", "price_per_gpu_hour", "cost_per_million_output_tokens"),
           ("1-year reserved", "reserved_1y_cost_per_gpu_hour", None),
           ("3-year reserved", "reserved_3y_cost_per_gpu_hour", None),
           ("Spot (interruptible)", "spot_price_per_gpu_hour", None),
           ("Owned", "owned_cost_per_gpu_hour", "owned_cost_per_million_output_tokens"),
           ("Cheapest", "best_cost_per_gpu_hour", "best_cost_per_million_output_tokens"))
#: What a Scenarios row that does not start adds to its label here (its bars are left out of the charts).
NOT_STARTING = " (does not fit)"
#: Finance lines shown as the verdicts.
VERDICTS = ("breakeven_utilization", "owned_beats_rent", "payback_months", "owned_fixed_cost_per_gpu_year",
            "owned_energy_cost_per_gpu_hour", "owned_running_cost_per_gpu_month", "owned_monthly_cost_qps",
            "monthly_cost_qps")


def _q(name: str):
    return plan.LINE_BY_NAME.get(name) or plan.INPUT_BY_NAME[name]


def _num(v):
    return v.item() if hasattr(v, "item") else v


def add_tco_sheet(wb, ctx: Ctx) -> None:
    """Add the TCO sheet (a workbook sheet builder)."""
    ws = ctx.new_sheet(SHEET, "TCO: own vs rent, by utilization, and the scenarios compared",
                       {"A": 40, "B": 16, "C": 16, "D": 16, "E": 16, "F": 16, "G": 40, "H": 16, "I": 16}, tab="C00000")
    ctx.put(ws, "A3", "What a used GPU-hour costs when owned (capex over the depreciation years at the cost of capital, "
            "support, hosting per kW, energy x PUE) or rented (on demand, reserved, spot). Inputs: Plan, Finance "
            "group; server prices and power per GPU: GPU costs sheet. Every number is a formula.", style.NOTE)
    ws.merge_cells("A3:H3")
    r = 5
    ctx.put(ws, f"A{r}", "Currency", style.SECTION)
    for label, name, value in (("Currency code", "currency_code", ctx.currency_code),
                               ("Currency symbol", "currency_symbol", ctx.currency_symbol)):
        r += 1
        ctx.put(ws, f"A{r}", label)
        ctx.put(ws, f"B{r}", value, style.INPUT)
        ctx.define(name, ws, f"B{r}")
    ctx.put(ws, f"C{r - 1}", "Every money format shows this currency (set at build: --currency, --currency-symbol). "
            "Amounts are not converted: the catalogs' prices are USD; override them in your currency.", style.NOTE)
    ws.merge_cells(f"C{r - 1}:H{r}")
    r += 2
    r = _sources(ctx, ws, r) + 2
    r = _by_utilization(ctx, ws, r) + 2
    _scenarios(ctx, wb, ws, r)


def _sources(ctx: Ctx, ws, r: int) -> int:
    ctx.put(ws, f"A{r}", "Own vs rent (at the Plan's utilization)", style.SECTION)
    r += 1
    for k, h in enumerate(("Source", "Per used GPU-hour", "Per million output tokens")):
        ctx.put(ws, f"{get_column_letter(1 + k)}{r}", h, style.HEADER)
    for label, hour, mtok in SOURCES:
        r += 1
        ctx.put(ws, f"A{r}", label)
        ctx.formula(ws, f"B{r}", ctx.quantity(hour), style.FORMULA, style.number_format("$/GPU-h"))
        # $ per output token is a bill: a plan that does not start shows the verdict's words (inference_ledger.workbook.cells.bill)
        code = verdict_code(ctx)
        if mtok:
            ctx.formula(ws, f"C{r}", bill(code, ctx.quantity(mtok)), style.FORMULA, style.number_format("$/Mtok"))
        else:
            expr = finance.cost_per_million_tokens(ctx.at(ws, f"B{r}"), ctx.q.gpus_per_replica, ctx.q.tokens_per_second)
            ctx.formula(ws, f"C{r}", bill(code, expr), style.FORMULA, style.number_format("$/Mtok"))
    r += 1
    for name in VERDICTS:
        r += 1
        q = _q(name)
        ctx.put(ws, f"A{r}", q.label)
        v = _num(ctx.values[name])
        expr = ctx.quantity(name).at(int(v) if q.unit == "1/0" else v)
        if is_bill(name):
            expr = bill(verdict_code(ctx), expr)
        ctx.formula(ws, f"B{r}", expr, style.CHECK if q.unit == "1/0" else style.FORMULA,
                    style.number_format(q.unit, v))
        ctx.put_beside(ws, f"C{r}", q.doc, style.NOTE)
        ws.merge_cells(f"C{r}:H{r}")
    return r


def _by_utilization(ctx: Ctx, ws, r: int) -> int:
    ctx.put(ws, f"A{r}", "Cost per used GPU-hour by utilization", style.SECTION)
    r += 1
    heads = ("Utilization", "Owned", "On demand", "1-year reserved", "3-year reserved", "Spot")
    for k, h in enumerate(heads):
        ctx.put(ws, f"{get_column_letter(1 + k)}{r}", h, style.HEADER)
    top = r
    p = ctx.q
    money = style.number_format("$/GPU-h")
    for u in UTILIZATIONS:
        r += 1
        ctx.put(ws, f"A{r}", u, style.CONSTANT, "0%")
        cells = ((lambda q, x: finance.owned_cost_per_gpu_hour(q.owned_fixed_cost_per_gpu_year,
                                                             q.owned_energy_cost_per_gpu_hour, x)),
                 (lambda q, x: q.price_per_gpu_hour),
                 (lambda q, x: finance.committed_cost_per_used_hour(q.reserved_1y_price_per_gpu_hour, x)),
                 (lambda q, x: finance.committed_cost_per_used_hour(q.reserved_3y_price_per_gpu_hour, x)),
                 (lambda q, x: q.spot_price_per_gpu_hour))
        for k, fn in enumerate(cells):
            ctx.formula(ws, f"{get_column_letter(2 + k)}{r}", fn(p, ctx.at(ws, f"A{r}", fix="col")), style.FORMULA, money)
    chart = LineChart()
    chart.title = "Cost per used GPU-hour by utilization"
    chart.y_axis.title, chart.x_axis.title = "per used GPU-hour", "Utilization"
    chart.y_axis.numFmt = money
    chart.add_data(Reference(ws, min_col=2, max_col=6, min_row=top, max_row=r), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=top + 1, max_row=r))
    chart.height, chart.width = 8, 15
    chart.legend.position = "b"
    chart.x_axis.delete = chart.y_axis.delete = False
    chart.y_axis.scaling.min = 0
    ws.add_chart(chart, f"J{top - 1}")
    return r


def scenario_columns(wb) -> tuple[dict[str, str], list[int]]:
    """Column of each quantity on the Scenarios sheet (its name row) and the scenario rows."""
    sc = wb["Scenarios"]
    cols: dict[str, str] = {}
    for c in sc[8]:
        if isinstance(c.value, str) and c.value not in cols:
            cols[c.value] = c.column_letter
    rows = [r for r in range(9, sc.max_row + 1) if sc[f"A{r}"].value not in (None, "")]
    return cols, rows


def _scenarios(ctx: Ctx, wb, ws, r: int) -> int:
    if "Scenarios" not in wb.sheetnames:
        return r
    cols, rows = scenario_columns(wb)
    ctx.put(ws, f"A{r}", "Scenarios compared", style.SECTION)
    ctx.put(ws, f"C{r}", "One row per Scenarios row of the build; for a row added there, copy the last row here "
            "down (the charts keep the built rows).", style.NOTE)
    ws.merge_cells(f"C{r}:H{r}")
    r += 1
    heads = ("Scenario", "$/Mtok (on demand)", "Monthly cost (target QPS)", "Meets the targets (1/0)",
             "Cost if it meets them", "Cheapest that meets them", "Charted as", "$/Mtok if it fits",
             "Monthly cost if it fits")
    for k, h in enumerate(heads):
        ctx.put(ws, f"{get_column_letter(1 + k)}{r}", h, style.HEADER)
    top, first = r, r + 1
    last = r + len(rows)
    cached: list[int] = []
    for sr in rows:
        r += 1
        ref = lambda n, sr=sr: ctx.at("Scenarios", f"{cols[n]}{sr}", fix="col", qualified=True)  # noqa: E731  (copy down)
        label = ctx.at("Scenarios", f"A{sr}", fix="col", qualified=True)
        # a row that does not start is marked in the label (its costs are words, so its bars are left out)
        ctx.formula(ws, f"A{r}", concat(label, where(ge(ref("verdict"), 1), "", NOT_STARTING)), style.FORMULA)
        ctx.formula(ws, f"B{r}", ref("cost_per_million_output_tokens"), style.FORMULA, style.number_format("$/Mtok"))
        ctx.formula(ws, f"C{r}", ref("monthly_cost_qps"), style.FORMULA, style.number_format("$/month"))
        # the one verdict: fits, meets targets
        ctx.formula(ws, f"D{r}", one_zero(ge(ref("verdict"), VERDICT_MEETS)), style.CHECK, "0")
        ctx.formula(ws, f"E{r}", finance_forecast.cost_if_meets(ctx.at(ws, f"D{r}"), ctx.at(ws, f"C{r}")), style.FORMULA,
                    style.number_format("$/month"))
        cached.append(r)
        # the charts: a scenario that does not fit gets no bar (its cost would dwarf the rest) and says so
        unfit = eq(ref("verdict"), DOES_NOT_FIT)
        ctx.formula(ws, f"G{r}", where(unfit, concat(label, ": does not fit"), ctx.at(ws, f"A{r}", fix="col")),
                    style.FORMULA)
        for col, src in (("H", "B"), ("I", "C")):
            ctx.formula(ws, f"{col}{r}", where(unfit, 0, ctx.at(ws, f"{src}{r}")), style.FORMULA,
                        ws[f"{src}{r}"].number_format)
    for name, col in (("scenario_labels", "A"), ("scenario_meets_cost", "E"), ("scenario_cheapest", "F")):
        ctx.define(name, ws, f"{col}{first}:{col}{first + ROOM}")   # the Summary's cheapest alternative
    for rr in cached:
        ctx.formula(ws, f"F{rr}", finance_forecast.cheapest_mark(ctx.at(ws, f"D{rr}"), ctx.at(ws, f"C{rr}"),
                                                        ctx.span(ws, f"E{first}", f"E{first + ROOM}", fix="both")),
                    style.CHECK)
    fill = PatternFill("solid", fgColor=style.GREEN[0], bgColor=style.GREEN[0])
    ws.conditional_formatting.add(f"A{first}:F{last}", FormulaRule(formula=[eq(cell(f"F{first}", fix="col"), CHEAPEST).text], fill=fill,
                                                                   font=Font(color=style.GREEN[1], bold=True)))
    # below the utilization chart above them (charts on a grid, never over each other)
    row = max(top, last_row_under(ws, max([chart_box(ws, c)[3] for c in ws._charts], default=0.0)) + 1)
    for k, (col, title, fmt) in enumerate((("H", "$/Mtok per scenario that fits (on demand)",
                                            style.number_format("$/Mtok")),
                                           ("I", "Monthly cost per scenario that fits (target QPS)",
                                            style.money('"$"#,##0,"k"')))):
        ch = BarChart()
        ch.type = "bar"
        ch.title = title
        ch.y_axis.numFmt = fmt
        ci = ord(col) - ord("A") + 1
        ch.add_data(Reference(ws, min_col=ci, min_row=top, max_row=last), titles_from_data=True)
        ch.set_categories(Reference(ws, min_col=7, min_row=first, max_row=last))
        ch.x_axis.scaling.orientation = "maxMin"   # the first scenario on top, the value axis below
        ch.y_axis.crosses = "max"
        ch.x_axis.tickLblSkip = 1
        ch.x_axis.txPr = style.axis_text(7)
        ch.x_axis.tickLblPos = "low"
        ch.height, ch.width = 12, 12
        ch.legend = None
        ch.x_axis.delete = ch.y_axis.delete = False
        ws.add_chart(ch, f"{'J' if k == 0 else 'R'}{row}")
    return last
