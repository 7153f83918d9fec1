"""The Forecast sheet: a monthly capacity timeline, what to buy and what to rent, and its NPV.

One column per month (``--forecast-months``, 36 by default), one formula per row, each
written once with :mod:`inference_ledger.formulas.finance` (and :mod:`inference_ledger.formulas.ledger`) helpers over
the plan's defined names, so the sheet is the plan's own arithmetic:

* demand: the Plan's peak (``target_qps``) grown by ``growth`` a month, or typed month by
  month in the optional row above it; the average load keeps the Plan's ratio of
  ``requests_per_day`` to the peak: the one demand family, extended in time;
* GPUs needed: whole replicas for the peak plus ``headroom_target``, from the plan's
  ``qps_per_replica`` and TP; the base: replicas for the average load;
* purchases: whole servers (``gpus_per_server``) for the base load, arriving no earlier
  than ``lead_time_months``; servers are kept (never sold) and the peak above them is
  rented on demand for the month;
* cash: capex when servers arrive, their running cash (support, hosting, energy), the
  rent; cumulative cash; a discount factor at ``cost_of_capital`` and the NPV, with the
  servers' straight-line book value at the end of the horizon credited back;
* the verdict: that NPV against renting every needed GPU on demand.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from openpyxl.chart import BarChart, LineChart, Reference, Series
from openpyxl.utils import get_column_letter

from inference_ledger.formulas import finance
from inference_ledger.formulas import ledger
from inference_ledger.graph import plan
from inference_ledger.core.expr import Sym, isblank, lt, where
from inference_ledger.core.units import SECONDS_PER_DAY

from . import style
from .calibration import _Names
from .context import Ctx

SHEET = "Forecast"
#: First month's column (C) and the timeline's header row (the summary and the charts above it).
FIRST_COL, HEAD = 3, 43
#: Row of the charts (under the summary, on the first printed page) and months per printed page width.
CHART_ROW, MONTHS_PER_PAGE = 22, 12
VERDICT_BUY, VERDICT_RENT = "Buy servers for the base load, rent the peak", "Rent every GPU on demand"

#: Plan quantities the timeline reads (shown as =name references above it).
USES = ("target_qps", "requests_per_day", "growth", "headroom_target", "qps_per_replica", "gpus_per_replica",
        "gpus_per_server",
        "lead_time_months", "servers_owned_start", "server_price_per_gpu", "owned_running_cost_per_gpu_month",
        "price_per_gpu_hour", "cost_of_capital", "depreciation_years")

#: Renting everything runs the same fleet as buying (the peak + headroom, every hour): requests per day size only
#: the base the buy option owns, so this alternative does not move with them (at 0 requests a day the two agree).
RENT_ALL_LABEL = "Alternative: the same peak fleet, every GPU on demand (requests per day do not enter)"
NPV_RENT_LABEL = "NPV of cash out: everything on demand (the peak fleet every hour; requests per day do not enter)"

Row = tuple[str, str, str, Optional[Callable[..., Any]]]  # fn None: a row of optional input cells


def _rows(n) -> list[Row]:
    """(key, label, unit, fn(p, c, prev)) of every timeline row; c: this month, prev: the month before (None)."""
    def before(prev, key, start):
        return start if prev is None else prev[key]

    return [
        ("month", "Month", "month", lambda p, c, prev: before(prev, "month", 0) + 1),
        ("typed_qps", "Peak QPS typed (optional: overrides the growth)", "requests/s", None),
        ("peak_qps", "Peak QPS", "requests/s",
         lambda p, c, prev: where(isblank(c["typed_qps"]), finance.grown(p.target_qps, p.growth, c["month"]),
                                  c["typed_qps"])),
        ("avg_qps", "Average QPS (peak x the Plan's average / peak)", "requests/s",
         lambda p, c, prev: c["peak_qps"] * (p.requests_per_day / SECONDS_PER_DAY) / p.target_qps),
        ("gpus_needed", "GPUs needed (peak + headroom)", "GPUs",
         lambda p, c, prev: finance.gpus_for_load(c["peak_qps"], p.headroom_target, p.qps_per_replica,
                                                  p.gpus_per_replica)),
        ("base_gpus", "GPUs for the average load", "GPUs",
         lambda p, c, prev: finance.gpus_for_load(c["avg_qps"], 0, p.qps_per_replica, p.gpus_per_replica)),
        ("servers_target", "Servers for the average load", "servers",
         lambda p, c, prev: finance.servers_for(c["base_gpus"], p.gpus_per_server)),
        ("servers_owned", "Servers in service", "servers",
         lambda p, c, prev: finance.servers_owned(before(prev, "servers_owned", p.servers_owned_start), c["servers_target"],
                                             c["month"], p.lead_time_months, p.servers_owned_start)),
        ("servers_bought", "Servers arriving", "servers",
         lambda p, c, prev: c["servers_owned"] - before(prev, "servers_owned", p.servers_owned_start)),
        ("owned_gpus", "GPUs owned", "GPUs", lambda p, c, prev: c["servers_owned"] * p.gpus_per_server),
        ("rented_gpus", "GPUs rented on demand (the peak)", "GPUs",
         lambda p, c, prev: finance.rented_gpus(c["gpus_needed"], c["owned_gpus"])),
        ("capex", "Capex (servers arriving)", "$/month",
         lambda p, c, prev: c["servers_bought"] * p.gpus_per_server * p.server_price_per_gpu),
        ("running", "Running cash of owned GPUs", "$/month",
         lambda p, c, prev: c["owned_gpus"] * p.owned_running_cost_per_gpu_month),
        ("rent", "Rent on demand", "$/month", lambda p, c, prev: ledger.monthly_cost(p.price_per_gpu_hour, c["rented_gpus"])),
        ("cash", "Cash out", "$/month", lambda p, c, prev: c["capex"] + c["running"] + c["rent"]),
        ("cumulative", "Cumulative cash out", "$", lambda p, c, prev: before(prev, "cumulative", 0) + c["cash"]),
        ("discount", "Discount factor", "x", lambda p, c, prev: finance.discount_factor(p.cost_of_capital, c["month"])),
        ("pv", "Present value of the cash out", "$", lambda p, c, prev: c["cash"] * c["discount"]),
        ("book_share", "Book value left at the end (share of its capex)", "fraction",
         lambda p, c, prev: finance.remaining_value_share(c["month"], n, p.depreciation_years)),
        ("rent_all", RENT_ALL_LABEL, "$/month",
         lambda p, c, prev: ledger.monthly_cost(p.price_per_gpu_hour, c["gpus_needed"])),
        ("rent_all_pv", "Alternative: its present value", "$", lambda p, c, prev: c["rent_all"] * c["discount"]),
    ]


def timeline_values(values: dict, months: int) -> dict[str, list]:
    """Every timeline row computed in Python (the cached values, and the tests' reference)."""
    p = _Names(values)
    rows = _rows(months)
    out: dict[str, list] = {k: [] for k, *_ in rows}
    prev: Optional[dict] = None
    for _ in range(months):
        c: dict[str, Any] = {}
        for key, _label, _unit, fn in rows:
            c[key] = None if fn is None else _plain(fn(p, c, prev))
            out[key].append(c[key])
        prev = c
    return out


def summary_values(t: dict[str, list]) -> dict[str, Any]:
    residual = sum(a * b for a, b in zip(t["capex"], t["book_share"]))
    npv_buy = sum(t["pv"]) - residual * t["discount"][-1]
    npv_rent = sum(t["rent_all_pv"])
    return {"gpus_end": t["gpus_needed"][-1], "servers_bought": sum(t["servers_bought"]),
            "cash_total": t["cumulative"][-1], "residual": residual, "npv_buy": npv_buy, "npv_rent": npv_rent,
            "saving": npv_rent - npv_buy, "verdict": VERDICT_BUY if npv_buy < npv_rent else VERDICT_RENT}


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def col(k: int) -> str:
    """Column letter of month k (0-based)."""
    return get_column_letter(FIRST_COL + k)


def add_forecast_sheet(wb, ctx: Ctx) -> None:
    """Add the Forecast sheet (a workbook sheet builder)."""
    n = ctx.forecast_months
    ws = ctx.new_sheet(SHEET, f"Forecast: {n} months of demand, GPUs, purchases and cash", {"A": 44, "B": 14},
                       tab="C00000")
    for k in range(n):
        ws.column_dimensions[col(k)].width = 11
    ctx.put(ws, "A3", "Demand grows from the Plan's peak QPS and requests per day at the monthly growth rate. Servers "
            "are bought for the average load (whole servers, after the lead time) and kept; the peak above them is "
            "rented on demand. Change the inputs on Plan (Finance group); every cell here is a formula.", style.NOTE)
    ws.merge_cells("A3:N3")
    p_sym, p_num = _Names(), _Names(ctx.values)
    t = timeline_values(ctx.values, n)
    s = summary_values(t)
    rows = _rows(Sym("forecast_months"))
    row_of = {key: HEAD + i for i, (key, *_r) in enumerate(rows)}
    first, last = col(0), col(n - 1)

    def span(key: str) -> str:
        return f"{first}{row_of[key]}:{last}{row_of[key]}"

    # --- summary (top) ----------------------------------------------------------------------
    ctx.put(ws, "A5", "Summary", style.SECTION)
    ctx.put(ws, "A6", "Months in the timeline")
    ctx.put(ws, "B6", n, style.CONSTANT, "0")
    ctx.put(ws, "C6", "set at build: --forecast-months N", style.NOTE)
    ws.merge_cells("C6:F6")
    ctx.define("forecast_months", ws, "B6")
    money = style.number_format("$")
    disc_last = Sym(f"{last}{row_of['discount']}")
    summary = (
        ("forecast_gpus_end", "GPUs needed in the last month", Sym(f"{last}{row_of['gpus_needed']}"), s["gpus_end"], "0"),
        ("forecast_servers_bought", "Servers bought over the timeline", Sym(f"SUM({span('servers_bought')})"),
         s["servers_bought"], "0"),
        ("forecast_cash_total", "Cash out over the timeline", Sym(f"{last}{row_of['cumulative']}"), s["cash_total"], money),
        ("forecast_residual", "Book value of the servers at the end", Sym(f"SUMPRODUCT({span('capex')},{span('book_share')})"),
         s["residual"], money),
        ("forecast_npv_buy", "NPV of cash out: buy the base, rent the peak", Sym(f"SUM({span('pv')})")
         - Sym("forecast_residual") * disc_last, s["npv_buy"], money),
        ("forecast_npv_rent", NPV_RENT_LABEL, Sym(f"SUM({span('rent_all_pv')})"), s["npv_rent"],
         money),
        ("forecast_saving", "NPV saved by buying (negative: renting is cheaper)",
         Sym("forecast_npv_rent") - Sym("forecast_npv_buy"), s["saving"], money),
        ("forecast_verdict", "Verdict", where(lt(Sym("forecast_npv_buy"), Sym("forecast_npv_rent")), VERDICT_BUY,
                                                VERDICT_RENT), s["verdict"], None),
    )
    r = 6
    for name, label, expr, value, fmt in summary:
        r += 1
        ctx.put(ws, f"A{r}", label)
        ctx.formula(ws, f"B{r}", expr, value, style.CHECK if name == "forecast_verdict" else style.FORMULA, fmt)
        ctx.define(name, ws, f"B{r}")
    ws.merge_cells(f"B{r}:F{r}")
    # --- what it reads from Plan (right of the summary) ---------------------------------------------
    ctx.put(ws, "H5", "Plan quantities the timeline uses (change them on Plan)", style.SECTION)
    for k, name in enumerate(USES):
        q = plan.INPUT_BY_NAME.get(name) or plan.LINE_BY_NAME[name]
        rr = 6 + k
        ctx.put(ws, f"H{rr}", q.label)
        ws.merge_cells(f"H{rr}:K{rr}")
        ctx.formula(ws, f"L{rr}", Sym(name), _plain(ctx.values[name]), style.FORMULA, style.number_format(q.unit))
    # --- the timeline -----------------------------------------------------------------------------
    ctx.put(ws, f"A{HEAD - 1}", "Timeline (one column per month)", style.SECTION)
    prev_sym: Optional[dict] = None
    for k in range(n):
        c: dict[str, Any] = {}
        for key, label, unit, fn in rows:
            coord = f"{col(k)}{row_of[key]}"
            if k == 0:
                ctx.put(ws, f"A{row_of[key]}", label, style.HEADER if key == "month" else None)
                ctx.put(ws, f"B{row_of[key]}", style.shown_as(unit), style.HEADER if key == "month" else style.NOTE)
            fmt = "0" if key == "month" else "0.0000" if key == "discount" else style.number_format(unit)
            if key == "month" and k == 0:
                ctx.put(ws, coord, 1, style.HEADER, "0")
            elif fn is None:  # a row of optional inputs
                ctx.put(ws, coord, None, style.INPUT, fmt)
            else:
                ctx.formula(ws, coord, fn(p_sym, c, prev_sym), t[key][k], style.HEADER if key == "month" else style.FORMULA,
                            fmt)
            c[key] = Sym(coord)
        prev_sym = c
    ws.freeze_panes = f"{first}{HEAD + 1}"
    _charts(ws, n, row_of, CHART_ROW)
    ws.print_area = f"A1:{last}{HEAD + len(rows) - 1}"
    # a year of months per printed page width, the labels repeated on every page
    ws.page_setup.fitToWidth = max(1, -(-n // MONTHS_PER_PAGE))
    ws.print_title_cols = "A:B"


def _series(ws, row: int, n: int, title: str, color: str) -> Series:
    s = Series(Reference(ws, min_col=FIRST_COL, max_col=FIRST_COL + n - 1, min_row=row), title=title)
    s.graphicalProperties.line.solidFill = color
    s.graphicalProperties.solidFill = color
    return s


def _charts(ws, n: int, row_of: dict, top: int) -> None:
    months = Reference(ws, min_col=FIRST_COL, max_col=FIRST_COL + n - 1, min_row=row_of["month"])
    gpus = LineChart()
    gpus.title = "GPUs needed vs owned"
    gpus.y_axis.title, gpus.x_axis.title = "GPUs", "Month"
    for key, title, color in (("gpus_needed", "GPUs needed (peak + headroom)", "C00000"),
                              ("owned_gpus", "GPUs owned", "4472C4"), ("rented_gpus", "GPUs rented", "ED7D31")):
        gpus.series.append(_series(ws, row_of[key], n, title, color))
    gpus.set_categories(months)
    cost = BarChart()
    cost.type, cost.grouping, cost.overlap = "col", "stacked", 100
    cost.title = "Monthly cash out by source"
    cost.y_axis.title, cost.x_axis.title = "per month", "Month"
    cost.y_axis.numFmt = style.number_format("$")
    for key, title, color in (("capex", "Capex (servers)", "4472C4"), ("running", "Running cash (owned)", "A5A5A5"),
                              ("rent", "Rent on demand", "ED7D31")):
        cost.series.append(_series(ws, row_of[key], n, title, color))
    cost.set_categories(months)
    for ch in (gpus, cost):
        ch.height, ch.width = 9, 16
        ch.legend.position = "b"
        ch.x_axis.delete = ch.y_axis.delete = False
    ws.add_chart(gpus, f"A{top}")
    ws.add_chart(cost, f"G{top}")
