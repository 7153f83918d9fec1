"""The finance outlook of a plan: a capacity timeline (one column per month on the Forecast sheet) with its cash
and NPV, the cheapest deployment that meets the targets (the TCO sheet), and what drives the cost and the GPU count
(the Sensitivity sheet).

Written with the expression helpers, like :mod:`inference_ledger.formulas.finance` (whose owned and rented costs
these read): each formula computes on numbers (``plan --json``'s ``forecast_*`` and ``sensitivity`` keys) and
renders as the workbook's formula.
"""

from __future__ import annotations

from typing import Any, Optional

from inference_ledger.formulas import ledger
from inference_ledger.formulas.finance import DEFAULT_MONTHS, _f
from inference_ledger.core.sheetfuncs import abs_, and_, ceil, eq, gt, isblank, lt, maximum, where
from inference_ledger.core.refs import iferror, index, match, min_of, sum_of, sumproduct
from inference_ledger.core.units import MONTHS_PER_YEAR, SECONDS_PER_DAY


# --- the capacity timeline (one column per month on the Forecast sheet) --------------------------


def grown(start, growth, month):
    """A load after compound monthly growth: start x (1 + g)^(month - 1)."""
    return start * (1 + growth) ** (month - 1)


def gpus_for_load(qps, headroom, qps_per_replica, tp):
    """GPUs for a QPS plus a headroom share: whole replicas x TP (the plan's replicas_for_qps)."""
    return ledger.replicas_needed(qps * (1 + headroom), _f(qps_per_replica)) * tp


def servers_for(gpus, gpus_per_server):
    """Whole servers holding a number of GPUs."""
    return ceil(gpus / _f(gpus_per_server))


def servers_owned(previous, target, month, lead_time_months, start):
    """Servers in service: the start fleet until orders can arrive (lead time), then never fewer than the
    target (orders placed lead_time months ahead from the forecast); servers are kept, never sold."""
    return where(gt(month, lead_time_months), maximum(previous, target), start)


def rented_gpus(needed, owned):
    """The peak above the owned fleet, rented on demand."""
    return maximum(needed - owned, 0)


def discount_factor(rate, month):
    """Present value of 1 paid at the end of a month, at a yearly cost of capital."""
    return (1 + rate) ** (-(month / MONTHS_PER_YEAR))


def remaining_value_share(month, horizon, depreciation_years):
    """Straight-line book value left at the end of the horizon of a server bought in a month."""
    return maximum(1 - (horizon - month + 1) / (depreciation_years * MONTHS_PER_YEAR), 0)


# --- the forecast: a monthly timeline of demand, purchases and cash, and its NPV ------------------------------

#: The forecast's verdicts (the Forecast sheet's, and ``plan --json``'s ``forecast_verdict``).
VERDICT_BUY, VERDICT_RENT = "Buy servers for the base load, rent the peak", "Rent every GPU on demand"
#: Renting everything runs the same fleet as buying (the peak + headroom, every hour): requests per day size only
#: the base the buy option owns, so this alternative does not move with them (at 0 requests a day the two agree).
RENT_ALL_LABEL = "Alternative: the same peak fleet, every GPU on demand (requests per day do not enter)"
NPV_RENT_LABEL = "NPV of cash out: everything on demand (the peak fleet every hour; requests per day do not enter)"


def forecast_rows(months) -> list[tuple[str, str, str, Any]]:
    """(key, label, unit, fn(p, c, prev)) of every timeline row, one definition for the Forecast sheet's cells and
    :func:`forecast`: ``p`` the plan's quantities by attribute, ``c`` this month's rows above, ``prev`` the month
    before's (None in the first); fn None: a row of optional typed cells (a peak QPS typed over the growth)."""
    def before(prev, key, start):
        return start if prev is None else prev[key]

    return [
        ("month", "Month", "month", lambda p, c, prev: before(prev, "month", 0) + 1),
        ("typed_qps", "Peak QPS typed (optional: overrides the growth)", "requests/s", None),
        ("peak_qps", "Peak QPS", "requests/s",
         lambda p, c, prev: where(isblank(c["typed_qps"]), grown(p.target_qps, p.growth, c["month"]), c["typed_qps"])),
        ("avg_qps", "Average QPS (peak x the Plan's average / peak)", "requests/s",
         lambda p, c, prev: c["peak_qps"] * (p.requests_per_day / SECONDS_PER_DAY) / p.target_qps),
        ("gpus_needed", "GPUs needed (peak + headroom)", "GPUs",
         lambda p, c, prev: gpus_for_load(c["peak_qps"], p.headroom_target, p.qps_per_replica, p.gpus_per_replica)),
        ("base_gpus", "GPUs for the average load", "GPUs",
         lambda p, c, prev: gpus_for_load(c["avg_qps"], 0, p.qps_per_replica, p.gpus_per_replica)),
        ("servers_target", "Servers for the average load", "servers",
         lambda p, c, prev: servers_for(c["base_gpus"], p.gpus_per_server)),
        ("servers_owned", "Servers in service", "servers",
         lambda p, c, prev: servers_owned(before(prev, "servers_owned", p.servers_owned_start), c["servers_target"],
                                          c["month"], p.lead_time_months, p.servers_owned_start)),
        ("servers_bought", "Servers arriving", "servers",
         lambda p, c, prev: c["servers_owned"] - before(prev, "servers_owned", p.servers_owned_start)),
        ("owned_gpus", "GPUs owned", "GPUs", lambda p, c, prev: c["servers_owned"] * p.gpus_per_server),
        ("rented_gpus", "GPUs rented on demand (the peak)", "GPUs",
         lambda p, c, prev: rented_gpus(c["gpus_needed"], c["owned_gpus"])),
        ("capex", "Capex (servers arriving)", "$/month",
         lambda p, c, prev: c["servers_bought"] * p.gpus_per_server * p.server_price_per_gpu),
        ("running", "Running cash of owned GPUs", "$/month",
         lambda p, c, prev: c["owned_gpus"] * p.owned_running_cost_per_gpu_month),
        ("rent", "Rent on demand", "$/month",
         lambda p, c, prev: ledger.monthly_cost(p.price_per_gpu_hour, c["rented_gpus"])),
        ("cash", "Cash out", "$/month", lambda p, c, prev: c["capex"] + c["running"] + c["rent"]),
        ("cumulative", "Cumulative cash out", "$", lambda p, c, prev: before(prev, "cumulative", 0) + c["cash"]),
        ("discount", "Discount factor", "x", lambda p, c, prev: discount_factor(p.cost_of_capital, c["month"])),
        ("pv", "Present value of the cash out", "$", lambda p, c, prev: c["cash"] * c["discount"]),
        ("book_share", "Book value left at the end (share of its capex)", "fraction",
         lambda p, c, prev: remaining_value_share(c["month"], months, p.depreciation_years)),
        ("rent_all", RENT_ALL_LABEL, "$/month", lambda p, c, prev: ledger.monthly_cost(p.price_per_gpu_hour,
                                                                                      c["gpus_needed"])),
        ("rent_all_pv", "Alternative: its present value", "$", lambda p, c, prev: c["rent_all"] * c["discount"]),
    ]


#: The forecast's conclusions: (name, label, unit, fn(row, end, q)), each over the timeline (``row(key)``: a row's
#: months, a range in the workbook; ``end(key)``: its last month) and the conclusions above it (``q(name)``). The
#: names are the Forecast sheet's defined names and ``plan --json``'s keys.
FORECAST_SUMMARY: tuple[tuple[str, str, str, Any], ...] = (
    ("forecast_gpus_end", "GPUs needed in the last month", "GPUs", lambda row, end, q: end("gpus_needed")),
    ("forecast_servers_bought", "Servers bought over the timeline", "servers",
     lambda row, end, q: sum_of(row("servers_bought"))),
    ("forecast_cash_total", "Cash out over the timeline", "$", lambda row, end, q: end("cumulative")),
    ("forecast_residual", "Book value of the servers at the end", "$",
     lambda row, end, q: sumproduct(row("capex"), row("book_share"))),
    ("forecast_npv_buy", "NPV of cash out: buy the base, rent the peak", "$",
     lambda row, end, q: sum_of(row("pv")) - q("forecast_residual") * end("discount")),
    ("forecast_npv_rent", NPV_RENT_LABEL, "$", lambda row, end, q: sum_of(row("rent_all_pv"))),
    ("forecast_saving", "NPV saved by buying (negative: renting is cheaper)", "$",
     lambda row, end, q: q("forecast_npv_rent") - q("forecast_npv_buy")),
    ("forecast_verdict", "Verdict", "text",
     lambda row, end, q: where(lt(q("forecast_npv_buy"), q("forecast_npv_rent")), VERDICT_BUY, VERDICT_RENT)),
)


class _Quantities:
    """A mapping's values by attribute (the numeric side of ``p.target_qps``)."""

    def __init__(self, values: Any):
        self._values = values

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._values[name]


def forecast_timeline(values: Any, months: int) -> dict[str, list]:
    """Every timeline row over ``months`` months, from the plan's values (no peak typed over the growth)."""
    p = _Quantities(values)
    rows = forecast_rows(months)
    out: dict[str, list] = {k: [] for k, *_ in rows}
    prev: Optional[dict] = None
    for _ in range(months):
        c: dict[str, Any] = {}
        for key, _label, _unit, fn in rows:
            v = None if fn is None else fn(p, c, prev)
            c[key] = v.item() if hasattr(v, "item") else v
            out[key].append(c[key])
        prev = c
    return out


def forecast(values: Any, months: int = 0) -> dict[str, Any]:
    """The forecast's conclusions for a plan's values (``months``: the timeline's length, DEFAULT_MONTHS unless
    given): ``forecast_months`` and every :data:`FORECAST_SUMMARY` name, e.g. ``forecast_npv_buy``."""
    n = int(months or DEFAULT_MONTHS)
    t = forecast_timeline(values, n)
    out: dict[str, Any] = {"forecast_months": n}
    for name, _label, _unit, fn in FORECAST_SUMMARY:
        v = fn(lambda k: t[k], lambda k: t[k][-1], out.__getitem__)
        out[name] = v.item() if hasattr(v, "item") else v
    return out


def horizon_gpus(target_qps, growth, months, headroom, qps_per_replica, gpus_per_replica):
    """GPUs needed in the last month of the forecast (the timeline's gpus_needed row at its last month)."""
    return gpus_for_load(grown(target_qps, growth, months), headroom, qps_per_replica, gpus_per_replica)


# --- the cheapest deployment that meets the targets (the TCO sheet's comparison of the Scenarios rows) -----------

#: The mark of the cheapest deployment that meets the targets.
CHEAPEST = "cheapest meeting the targets"


def cost_if_meets(meets, monthly_cost):
    """A deployment's monthly cost when it meets the targets (meets 1/0), else "" (left out of the minimum)."""
    return where(eq(meets, 1), monthly_cost, "")


def cheapest_mark(meets, monthly_cost, costs_if_meets):
    """CHEAPEST on the deployment that meets the targets at the lowest monthly cost (``costs_if_meets``: every
    deployment's :func:`cost_if_meets`), else "" (ties: each cheapest one)."""
    return where(and_(eq(meets, 1), eq(monthly_cost, min_of(costs_if_meets))), CHEAPEST, "")


def cheapest_of(labels, marks):
    """The label of the first deployment marked CHEAPEST, "" when none meets the targets."""
    return iferror(index(labels, match(CHEAPEST, marks)), "")


# --- sensitivity: what drives the cost and the GPU count -------------------------------------------------------

#: The key inputs, each moved down and up by the step (one case each way), and the outputs watched.
SENSITIVITY_INPUTS = ("bw_efficiency", "output_tokens", "input_tokens", "concurrency", "price_per_gpu_hour",
                      "utilization", "growth")
SENSITIVITY_STEP = 0.2
#: (key, label, unit); gpus_at_horizon is the forecast's last month (forecast_gpus_end at the plan's months).
SENSITIVITY_OUTPUTS = (("best_cost_per_million_output_tokens", "Cheapest $/Mtok", "$/Mtok"),
                       ("gpus_for_qps", "GPUs for the target QPS", "GPUs"),
                       ("gpus_at_horizon", "GPUs needed in the last forecast month", "GPUs"))


def sensitivity_outputs(values: Any, months) -> dict[str, Any]:
    """The watched outputs of one evaluated plan (``months``: the forecast's horizon, a number or a reference)."""
    out = {k: values[k] for k, _l, _u in SENSITIVITY_OUTPUTS if k != "gpus_at_horizon"}
    out["gpus_at_horizon"] = horizon_gpus(values["target_qps"], values["growth"], months, values["headroom_target"],
                                          values["qps_per_replica"], values["gpus_per_replica"])
    return out


def sensitivity_case(values: Any, evaluate: Any, input_names, name: str, factor: float) -> dict[str, Any]:
    """The plan with one input multiplied by ``factor``: its inputs and every line (``evaluate``: the plan's own
    evaluation, inference_ledger.plan.evaluate, passed in: the finance formulas sit below the plan)."""
    inputs = {i: values[i] for i in input_names}
    inputs[name] = values[name] * factor
    return evaluate(inputs, validate=False)


def swing_rank(swings, swings_to_here, swing):
    """A swing's rank, 1 the largest: the swings above it, plus the equal ones up to it (ties in order); ``swings``
    every swing, ``swings_to_here`` those up to this one (ranges on the Sensitivity sheet)."""
    return sumproduct(gt(swings, swing) * 1) + sumproduct(eq(swings_to_here, swing) * 1)


def sensitivity(values: Any, evaluate: Any, input_names, months: int = 0) -> dict[str, Any]:
    """Every key input moved down and up by :data:`SENSITIVITY_STEP`: per output, per input, the output at -step and
    at +step, the swing |high - low| and its rank among the inputs (the Sensitivity sheet's tornado tables)."""
    n = int(months or DEFAULT_MONTHS)
    cases = {(name, sign): sensitivity_outputs(sensitivity_case(values, evaluate, input_names, name,
                                                                1 + sign * SENSITIVITY_STEP), n)
             for name in SENSITIVITY_INPUTS for sign in (-1, 1)}
    out: dict[str, Any] = {"step": SENSITIVITY_STEP, "months": n}
    for key, _label, _unit in SENSITIVITY_OUTPUTS:
        lo = [float(cases[(name, -1)][key]) for name in SENSITIVITY_INPUTS]
        hi = [float(cases[(name, 1)][key]) for name in SENSITIVITY_INPUTS]
        swings = [abs_(h - l) for l, h in zip(lo, hi)]
        out[key] = {name: {"low": lo[i], "high": hi[i], "swing": swings[i],
                           "rank": int(swing_rank(swings, swings[:i + 1], swings[i]))}
                    for i, name in enumerate(SENSITIVITY_INPUTS)}
    return out
