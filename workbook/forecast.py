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

from typing import Any, Optional

from openpyxl.chart import BarChart, LineChart, Reference, Series
from openpyxl.utils import get_column_letter

from inference_ledger.formulas import finance_forecast
from inference_ledger.graph import plan

from . import style
from .cells import bill, verdict_code
from .context import Ctx
from .load_chart import chart_title

SHEET = "Forecast"
#: First month's column (C) and the timeline's header row (the summary and the charts above it).
FIRST_COL, HEAD = 3, 43
#: Row of the charts (under the summary, on the first printed page) and months per printed page width.
CHART_ROW, MONTHS_PER_PAGE = 22, 12
#: The timeline and its conclusions are the library's (inference_ledger.finance: plan --json has them too).
VERDICT_BUY, VERDICT_RENT = finance_forecast.VERDICT_BUY, finance_forecast.VERDICT_RENT
RENT_ALL_LABEL, NPV_RENT_LABEL = finance_forecast.RENT_ALL_LABEL, finance_forecast.NPV_RENT_LABEL

#: Plan quantities the timeline reads (shown as =name references above it).
USES = ("target_qps", "requests_per_day", "growth", "headroom_target", "qps_per_replica", "gpus_per_replica",
        "gpus_per_server",
        "lead_time_months", "servers_owned_start", "server_price_per_gpu", "owned_running_cost_per_gpu_month",
        "price_per_gpu_hour", "cost_of_capital", "depreciation_years")


#: The charts' titles (label, title while the plan starts), in the order _charts draws them.
CHART_TITLES = (("GPUs chart", "GPUs needed vs owned"), ("Cash chart", "Monthly cash out by source"))


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
    ctx.put(ws, "A5", "Summary", style.SECTION)
    ctx.put(ws, "A6", "Months in the timeline")
    ctx.put(ws, "B6", n, style.CONSTANT, "0")
    ctx.put_beside(ws, "C6", "set at build: --forecast-months N", style.NOTE)
    ws.merge_cells("C6:F6")
    ctx.define("forecast_months", ws, "B6")
    rows = finance_forecast.forecast_rows(ctx.name("forecast_months"))
    row_of = {key: HEAD + i for i, (key, *_r) in enumerate(rows)}
    first, last = col(0), col(n - 1)
    # --- the timeline (written first: the summary above it reads its cells) -------------------------
    # a what-if for a plan that does not fit: its title says no fleet runs it
    ctx.formula(ws, f"A{HEAD - 1}", ctx.fleet_title("Timeline (one column per month)"), style.SECTION)
    p = ctx.q
    prev: Optional[dict] = None
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
                ctx.formula(ws, coord, fn(p, c, prev), style.HEADER if key == "month" else style.FORMULA, fmt)
            c[key] = ctx.at(ws, coord)
        prev = c

    def span(key: str):
        return ctx.span(ws, f"{first}{row_of[key]}", f"{last}{row_of[key]}")

    def end(key: str):
        return ctx.at(ws, f"{last}{row_of[key]}")

    # --- summary (top): the forecast's conclusions over the timeline's cells --------------------------
    formats = {"GPUs": "0", "servers": "0", "$": style.number_format("$"), "text": None}
    r = 6
    for name, label, unit, fn in finance_forecast.FORECAST_SUMMARY:
        r += 1
        ctx.put(ws, f"A{r}", label)
        # a plan that does not start buys and rents nothing: each conclusion says so, as the Summary's bill does
        ctx.formula(ws, f"B{r}", bill(verdict_code(ctx), fn(span, end, ctx.name)),
                    style.CHECK if name == "forecast_verdict" else style.FORMULA, formats[unit])
        ctx.define(name, ws, f"B{r}")
    ws.merge_cells(f"B{r}:F{r}")
    # --- what it reads from Plan (right of the summary) ---------------------------------------------
    ctx.put(ws, "H5", "Plan quantities the timeline uses (change them on Plan)", style.SECTION)
    for k, name in enumerate(USES):
        q = plan.INPUT_BY_NAME.get(name) or plan.LINE_BY_NAME[name]
        rr = 6 + k
        ctx.put(ws, f"H{rr}", q.label)
        ws.merge_cells(f"H{rr}:K{rr}")
        ctx.formula(ws, f"L{rr}", ctx.name(name), style.FORMULA, style.number_format(q.unit))
    # --- the charts' titles: read from cells, so a plan that does not start says so over its what-if -------
    ctx.put(ws, f"A{r + 2}", "Chart titles", style.SECTION)
    titles = []
    for k, (label, text) in enumerate(CHART_TITLES):
        ctx.put(ws, f"A{r + 3 + k}", label)
        titles.append(chart_title(ctx, ws, f"B{r + 3 + k}", text))
        ws.merge_cells(f"B{r + 3 + k}:F{r + 3 + k}")
    ws.freeze_panes = f"{first}{HEAD + 1}"
    _charts(ws, n, row_of, CHART_ROW, titles)
    ws.print_area = f"A1:{last}{HEAD + len(rows) - 1}"
    # a year of months per printed page width, the labels repeated on every page
    ws.page_setup.fitToWidth = max(1, -(-n // MONTHS_PER_PAGE))
    ws.print_title_cols = "A:B"


def _series(ws, row: int, n: int, title: str, color: str) -> Series:
    s = Series(Reference(ws, min_col=FIRST_COL, max_col=FIRST_COL + n - 1, min_row=row), title=title)
    s.graphicalProperties.line.solidFill = color
    s.graphicalProperties.solidFill = color
    return s


def _charts(ws, n: int, row_of: dict, top: int, titles: list) -> None:
    months = Reference(ws, min_col=FIRST_COL, max_col=FIRST_COL + n - 1, min_row=row_of["month"])
    gpus = LineChart()
    gpus.title = titles[0]
    gpus.y_axis.title, gpus.x_axis.title = "GPUs", "Month"
    for key, title, color in (("gpus_needed", "GPUs needed (peak + headroom)", "C00000"),
                              ("owned_gpus", "GPUs owned", "4472C4"), ("rented_gpus", "GPUs rented", "ED7D31")):
        gpus.series.append(_series(ws, row_of[key], n, title, color))
    gpus.set_categories(months)
    cost = BarChart()
    cost.type, cost.grouping, cost.overlap = "col", "stacked", 100
    cost.title = titles[1]
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
    ws.add_chart(cost, f"F{top}")   # both charts within the first printed page (at G the second crossed its edge)
