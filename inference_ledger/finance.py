"""Finance: the cost of an owned GPU-hour, renting it instead, and a capacity timeline.

Every formula here is written once with the :mod:`inference_ledger.expr` helpers, so it computes on
numbers and numpy arrays (the CLI, the cached values) and renders as a portable Excel
formula (the TCO, Forecast and Sensitivity sheets, and the plan's finance lines).

Owning one GPU for a year costs (a standard levelised-cost / TCO split, as in the
ICAEW/FAST modelling convention of separating capital from operating cost):

* **capital**: the server price per GPU spread over the depreciation years at the cost
  of capital: ``price x CRF``, the capital recovery factor ``CRF = r / (1 - (1 + r)^-n)``
  (the annuity that repays ``price`` in ``n`` equal yearly payments at rate ``r``;
  Brealey, Myers & Allen, *Principles of Corporate Finance*, ch. 2, "annuities");
* **support and software**: a share of the capex per year;
* **hosting**: the colocation charge per kW of IT load per month (space, cooling plant,
  power delivery), for the GPU's power plus its share of the server's
  (CBRE *North America Data Center Trends* quotes colocation per kW-month);
* **energy**: the IT power x PUE (The Green Grid, *PUE: a comprehensive examination of
  the metric*, White Paper 49, 2012) x the price of a kWh, for the hours the GPU works
  (idle hours are not charged: the figure is optimistic by the idle draw).

Capital, support and hosting are fixed (paid whether the GPU works or not); energy is
paid per hour of use.  At a utilization ``u`` (share of the year's hours the GPU does
useful work) the cost of a used hour is ``fixed / (8760 u) + energy``, and owning beats
renting on demand at ``price_per_gpu_hour`` once ``u >= fixed_per_hour / (rent - energy)``
(the break-even utilization).  Reserved capacity is paid for every hour, so its cost per
used hour is its rate / ``u``; on demand and spot are paid per used hour.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from inference_ledger import csvfile, ledger
from inference_ledger.args import LedgerInputError, echo
from inference_ledger.expr import and_, ceil, eq, ge, gt, is_sym, maximum, minimum, where
from inference_ledger.units import HOURS_PER_MONTH, MONTHS_PER_YEAR, W_PER_KW

GPU_COSTS_CSV = Path(__file__).resolve().parent / "data" / "gpu_costs.csv"


def _f(x):
    """Numbers as numpy floats (so a division by zero gives inf, not an exception); Syms untouched."""
    return x if is_sym(x) or isinstance(x, np.ndarray) else np.float64(x)


# --- owning ------------------------------------------------------------------------------------


def capital_recovery_factor(rate, years):
    """The annuity per 1 of capital: r / (1 - (1 + r)^-n) per year (r > 0)."""
    r = _f(rate)
    return r / (1 - (1 + r) ** (-years))


def power_kw(gpu_power_w, server_power_w_per_gpu):
    """IT power of one GPU and its share of the server, kW."""
    return (gpu_power_w + server_power_w_per_gpu) / W_PER_KW


def owned_fixed_cost_per_year(server_price_per_gpu, crf, support_fraction, kw, hosting_per_kw_month):
    """What one owned GPU costs per year whether it works or not: capital + support + hosting."""
    return server_price_per_gpu * crf + server_price_per_gpu * support_fraction + kw * hosting_per_kw_month * MONTHS_PER_YEAR


def energy_cost_per_hour(kw, pue, electricity_price):
    """Energy of one working GPU-hour: IT kW x PUE x price per kWh."""
    return kw * pue * electricity_price


def owned_cost_per_gpu_hour(fixed_per_year, energy_per_hour, utilization):
    """Cost of a used GPU-hour when owned: fixed cost over the hours used + energy."""
    return fixed_per_year / MONTHS_PER_YEAR / HOURS_PER_MONTH / _f(utilization) + energy_per_hour


def breakeven_utilization(fixed_per_year, energy_per_hour, rent_per_hour):
    """Utilization above which owning beats renting at rent_per_hour (negative or > 1: never)."""
    return fixed_per_year / MONTHS_PER_YEAR / HOURS_PER_MONTH / (_f(rent_per_hour) - energy_per_hour)


def own_beats_rent(utilization, breakeven):
    """1 when the utilization reaches a break-even that exists (0 < break-even <= utilization)."""
    return where(and_(gt(breakeven, 0), ge(utilization, breakeven)), 1, 0)


def running_cost_per_month(server_price_per_gpu, support_fraction, kw, hosting_per_kw_month, energy_per_hour,
                           utilization):
    """Cash one owned GPU costs per month once bought: support, hosting, and energy for the hours used."""
    return (server_price_per_gpu * support_fraction / MONTHS_PER_YEAR + kw * hosting_per_kw_month
            + energy_per_hour * HOURS_PER_MONTH * utilization)


def payback_months(server_price_per_gpu, running_per_month, rent_per_hour, utilization):
    """Months of use after which buying (price up front, then its running cost) has cost less than renting the
    same used hours on demand: price / (monthly rent - running cost); undiscounted, negative = never."""
    return server_price_per_gpu / (_f(rent_per_hour) * HOURS_PER_MONTH * utilization - running_per_month)


# --- renting -----------------------------------------------------------------------------------


def discounted(price_per_hour, discount):
    """A rate after a discount off on demand."""
    return price_per_hour * (1 - discount)


def committed_cost_per_used_hour(rate, utilization):
    """Reserved capacity is paid for every hour: its cost per used hour is rate / utilization."""
    return rate / _f(utilization)


def cheapest_option(on_demand, reserved_1y, reserved_3y, owned, spot, use_spot):
    """The cheapest cost per used GPU-hour of on demand, reserved and owned; spot too when use_spot is 1."""
    best = minimum(on_demand, reserved_1y, reserved_3y, owned)
    return where(eq(use_spot, 1), minimum(best, spot), best)


def cost_per_million_tokens(cost_per_gpu_hour, tp, tokens_per_second):
    """$ per million output tokens at a cost per used GPU-hour (the plan's formula, another rate)."""
    return ledger.cost_per_million_output_tokens(cost_per_gpu_hour, tp, _f(tokens_per_second))


def monthly_fleet_cost(gpus, fixed_per_year, energy_per_hour, utilization):
    """A month of an owned fleet: fixed cost / 12 + energy for the hours used."""
    return gpus * (fixed_per_year / MONTHS_PER_YEAR + energy_per_hour * HOURS_PER_MONTH * utilization)


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


# --- build options of the finance view (checked here: the CLI stays light) ------------------------

#: Symbols of common currency codes (any other code shows as itself unless --currency-symbol says).
SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CNY": "¥", "INR": "₹", "CHF": "CHF", "CAD": "C$",
           "AUD": "A$", "KRW": "₩", "SGD": "S$"}
MONTHS_RANGE = (1, 120)
DEFAULT_MONTHS = 36


CURRENCIES_CSV = Path(__file__).with_name("data") / "currencies.csv"


@functools.lru_cache(maxsize=None)
def currency_codes() -> frozenset[str]:
    """The ISO 4217 codes of inference_ledger/data/currencies.csv (List One, sourced there)."""
    return frozenset(r["code"] for r in csvfile.read(CURRENCIES_CSV).rows)


def finance_options(months: Optional[int], currency: Optional[str], symbol: Optional[str]) -> tuple[int, str, str]:
    """(forecast months, currency code, symbol) of a build, checked; one clear error line otherwise."""
    n = DEFAULT_MONTHS if months is None else months
    if isinstance(n, bool) or not isinstance(n, int) or not MONTHS_RANGE[0] <= n <= MONTHS_RANGE[1]:
        raise LedgerInputError(f"forecast_months must be a whole number >= {MONTHS_RANGE[0]} and <= {MONTHS_RANGE[1]} "
                               f"(got {months!r})")
    code = "USD" if currency is None else str(currency).strip().upper()
    if not re.fullmatch(r"[A-Z]{3}", code) or code not in currency_codes():
        what = "is empty" if not code else f"is not an ISO 4217 currency code (got {echo(currency)})"
        raise LedgerInputError(f"currency {what}: give a code such as USD, EUR or JPY "
                               f"(the {len(currency_codes())} codes of inference_ledger/data/currencies.csv)")
    sym = symbol if symbol is not None else SYMBOLS.get(code, code)  # an unlisted currency shows its code
    if not 1 <= len(sym) <= 4 or '"' in sym:
        raise LedgerInputError(f"currency_symbol must be 1 to 4 characters without quotes (got {sym!r})")
    return n, code, sym


# --- the GPU cost catalog ------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuCost:
    """One row of inference_ledger/data/gpu_costs.csv."""

    id: str
    server_price_per_gpu: float
    price_public: int
    gpu_power_w: float
    server_power_w_per_gpu: float
    price_source: str
    price_date: str
    source: str
    date: str
    notes: str


#: (field, label, unit) of the GPU costs table, in sheet order.
GPU_COST_FIELDS = (
    ("id", "GPU", ""),
    ("server_price_per_gpu", "Server price per GPU", "$/GPU"),
    ("price_public", "Public price (1/0)", "1/0"),
    ("gpu_power_w", "GPU power (TDP)", "W"),
    ("server_power_w_per_gpu", "Rest of server per GPU", "W"),
    ("price_source", "Price source", ""),
    ("price_date", "Price date", ""),
    ("source", "Power source", ""),
    ("date", "Date", ""),
    ("notes", "Notes", ""),
)
#: Plan inputs the chosen GPU's row fills.
GPU_COST_INPUTS = ("server_price_per_gpu", "gpu_power_w", "server_power_w_per_gpu")


@functools.lru_cache(maxsize=None)
def _load(path: Path) -> tuple[GpuCost, ...]:
    return tuple(csvfile.load(GpuCost, path, required=("price_source", "price_date", "source", "date")))


def load_gpu_costs(path: str | Path | None = None) -> list[GpuCost]:
    """Every row of inference_ledger/data/gpu_costs.csv, in file order."""
    return list(_load(Path(path) if path else GPU_COSTS_CSV))


def gpu_cost(gpu_id: str) -> GpuCost | None:
    """The cost row of a GPU id (None when the file has none)."""
    return next((c for c in load_gpu_costs() if c.id == gpu_id), None)


def gpu_cost_inputs(gpu_id: str) -> dict[str, Any]:
    """Plan inputs of a GPU's cost row ({} when it has none: the defaults stay)."""
    c = gpu_cost(gpu_id)
    return {} if c is None else {k: getattr(c, k) for k in GPU_COST_INPUTS}
