"""Finance: the cost of an owned GPU-hour and renting it instead (the capacity timeline, the cheapest
deployment and the sensitivity are in :mod:`inference_ledger.formulas.finance_forecast`).

Every formula here is written once with the :mod:`inference_ledger.core.expr` helpers, so it computes on
numbers and numpy arrays (the CLI, the cached values) and renders as a portable Excel
formula (the TCO, Forecast and Sensitivity sheets).  The plan's finance lines are the formulas themselves
(``@line``, :mod:`inference_ledger.core.line`): ``plan --json`` and the sheets read them by name.

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

from inference_ledger.formulas import ledger
from inference_ledger.core import csvfile
from inference_ledger.core.args import LedgerInputError, echo
from inference_ledger.core.expr import is_sym
from inference_ledger.core.sheetfuncs import and_, eq, ge, gt, minimum, where
from inference_ledger.core.line import FINANCE, derived, line
from inference_ledger.core.units import HOURS_PER_MONTH, MONTHS_PER_YEAR, W_PER_KW

GPU_COSTS_CSV = Path(__file__).resolve().parents[1] / "data" / "gpu_costs.csv"


def _f(x):
    """Numbers as numpy floats (so a division by zero gives inf, not an exception); Syms untouched."""
    return x if is_sym(x) or isinstance(x, np.ndarray) else np.float64(x)


# --- owning ------------------------------------------------------------------------------------


@line("IT power per GPU", "kW", FINANCE,
      "GPU TDP + its share of the server, in kW.")
def power_kw_per_gpu(gpu_power_w, server_power_w_per_gpu):
    """IT power of one GPU and its share of the server, kW."""
    return (gpu_power_w + server_power_w_per_gpu) / W_PER_KW


@line("Capital recovery factor", "1/year", FINANCE,
      "Annuity per 1 of capex: r / (1 - (1 + r)^-years).")
def capital_recovery_factor(cost_of_capital, depreciation_years):
    """The annuity per 1 of capital: r / (1 - (1 + r)^-n) per year (r > 0)."""
    r = _f(cost_of_capital)
    return r / (1 - (1 + r) ** (-depreciation_years))


@line("Owned GPU: fixed cost per year", "$/GPU-year", FINANCE,
      "Capex x CRF + capex x support share + kW x hosting x 12: paid whether the GPU works or not.")
def owned_fixed_cost_per_gpu_year(server_price_per_gpu, capital_recovery_factor, support_fraction, power_kw_per_gpu,
                                  hosting_per_kw_month):
    """What one owned GPU costs per year whether it works or not: capital + support + hosting."""
    return server_price_per_gpu * capital_recovery_factor + server_price_per_gpu * support_fraction \
        + power_kw_per_gpu * hosting_per_kw_month * MONTHS_PER_YEAR


@line("Owned GPU: energy per working hour", "$/GPU-h", FINANCE,
      "kW x PUE x price per kWh.")
def owned_energy_cost_per_gpu_hour(power_kw_per_gpu, pue, electricity_price):
    """Energy of one working GPU-hour: IT kW x PUE x price per kWh."""
    return power_kw_per_gpu * pue * electricity_price


@line("Owned cost per used GPU-hour", "$/GPU-h", FINANCE,
      "Fixed cost / (8760 h x utilization) + energy.")
def owned_cost_per_gpu_hour(owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour, utilization):
    """Cost of a used GPU-hour when owned: fixed cost over the hours used + energy."""
    return owned_fixed_cost_per_gpu_year / MONTHS_PER_YEAR / HOURS_PER_MONTH / _f(utilization) \
        + owned_energy_cost_per_gpu_hour


def cost_per_million_tokens(cost_per_gpu_hour, tp, tokens_per_second):
    """$ per million output tokens at a cost per used GPU-hour (the plan's formula, another rate)."""
    return ledger.cost_per_million_output_tokens(cost_per_gpu_hour, tp, _f(tokens_per_second))


def _cost_per_million_at(rate, words):
    """The line of the plan's $/Mtok at another cost per used GPU-hour (the line ``<rate>_cost_per_gpu_hour``)."""
    return derived(f"{rate}_cost_per_million_output_tokens", cost_per_million_tokens,
                   f"{words.capitalize()} cost per million output tokens", "$/Mtok", FINANCE,
                   f"The plan's $/Mtok at the {words} cost per used GPU-hour.",
                   cost_per_gpu_hour=f"{rate}_cost_per_gpu_hour", tp="gpus_per_replica")


owned_cost_per_million_output_tokens = _cost_per_million_at("owned", "owned")


@line("Break-even utilization (own vs on demand)", "fraction", FINANCE,
      "Utilization above which owning costs less per used hour than on demand; negative or over 100%: never.")
def breakeven_utilization(owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour, price_per_gpu_hour):
    """Utilization above which owning beats renting at price_per_gpu_hour (negative or > 1: never)."""
    return owned_fixed_cost_per_gpu_year / MONTHS_PER_YEAR / HOURS_PER_MONTH \
        / (_f(price_per_gpu_hour) - owned_energy_cost_per_gpu_hour)


@line("Owning beats on demand", "1/0", FINANCE,
      "1 when the utilization reaches the break-even.")
def owned_beats_rent(utilization, breakeven_utilization):
    """1 when the utilization reaches a break-even that exists (0 < break-even <= utilization)."""
    return where(and_(gt(breakeven_utilization, 0), ge(utilization, breakeven_utilization)), 1, 0)


@line("Owned GPU: running cash per month", "$/month", FINANCE,
      "Support / 12 + kW x hosting + energy x 730 h x utilization: what it costs once bought.")
def owned_running_cost_per_gpu_month(server_price_per_gpu, support_fraction, power_kw_per_gpu, hosting_per_kw_month,
                                     owned_energy_cost_per_gpu_hour, utilization):
    """Cash one owned GPU costs per month once bought: support, hosting, and energy for the hours used."""
    return (server_price_per_gpu * support_fraction / MONTHS_PER_YEAR + power_kw_per_gpu * hosting_per_kw_month
            + owned_energy_cost_per_gpu_hour * HOURS_PER_MONTH * utilization)


@line("Months of use for owning to pay back", "months", FINANCE,
      "Server price / (on-demand bill - running cash) per month at this utilization; undiscounted; negative: never.")
def payback_months(server_price_per_gpu, owned_running_cost_per_gpu_month, price_per_gpu_hour, utilization):
    """Months of use after which buying (price up front, then its running cost) has cost less than renting the
    same used hours on demand: price / (monthly rent - running cost); undiscounted, negative = never."""
    return server_price_per_gpu / (_f(price_per_gpu_hour) * HOURS_PER_MONTH * utilization
                                   - owned_running_cost_per_gpu_month)


# --- renting -----------------------------------------------------------------------------------


def discounted(price_per_hour, discount):
    """A rate after a discount off on demand."""
    return price_per_hour * (1 - discount)


reserved_1y_price_per_gpu_hour = derived("reserved_1y_price_per_gpu_hour", discounted,
    "1-year reserved rate", "$/GPU-h", FINANCE,
    "On demand x (1 - 1-year discount), paid for every hour.",
    price_per_hour="price_per_gpu_hour", discount="reserved_1y_discount")


reserved_3y_price_per_gpu_hour = derived("reserved_3y_price_per_gpu_hour", discounted,
    "3-year reserved rate", "$/GPU-h", FINANCE,
    "On demand x (1 - 3-year discount), paid for every hour.",
    price_per_hour="price_per_gpu_hour", discount="reserved_3y_discount")


spot_price_per_gpu_hour = derived("spot_price_per_gpu_hour", discounted, "Spot rate", "$/GPU-h", FINANCE,
    "On demand x (1 - spot discount), paid per used hour; interruptible.",
    price_per_hour="price_per_gpu_hour", discount="spot_discount")


def committed_cost_per_used_hour(rate, utilization):
    """Reserved capacity is paid for every hour: its cost per used hour is rate / utilization."""
    return rate / _f(utilization)


reserved_1y_cost_per_gpu_hour = derived("reserved_1y_cost_per_gpu_hour", committed_cost_per_used_hour,
    "1-year reserved per used GPU-hour", "$/GPU-h", FINANCE,
    "Reserved rate / utilization.", rate="reserved_1y_price_per_gpu_hour")


reserved_3y_cost_per_gpu_hour = derived("reserved_3y_cost_per_gpu_hour", committed_cost_per_used_hour,
    "3-year reserved per used GPU-hour", "$/GPU-h", FINANCE,
    "Reserved rate / utilization.", rate="reserved_3y_price_per_gpu_hour")


@line("Cheapest cost per used GPU-hour", "$/GPU-h", FINANCE,
      "The least of on demand, 1- and 3-year reserved, owned (and spot when counted).")
def best_cost_per_gpu_hour(price_per_gpu_hour, reserved_1y_cost_per_gpu_hour, reserved_3y_cost_per_gpu_hour,
                           owned_cost_per_gpu_hour, spot_price_per_gpu_hour, use_spot):
    """The cheapest cost per used GPU-hour of on demand, reserved and owned; spot too when use_spot is 1."""
    best = minimum(price_per_gpu_hour, reserved_1y_cost_per_gpu_hour, reserved_3y_cost_per_gpu_hour,
                   owned_cost_per_gpu_hour)
    return where(eq(use_spot, 1), minimum(best, spot_price_per_gpu_hour), best)


best_cost_per_million_output_tokens = _cost_per_million_at("best", "cheapest")


@line("Monthly cost of owning the QPS fleet", "$/month", FINANCE,
      "GPUs for the target QPS x (fixed cost / 12 + energy x 730 h x utilization).")
def owned_monthly_cost_qps(gpus_for_qps, owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour, utilization):
    """A month of an owned fleet: fixed cost / 12 + energy for the hours used."""
    return gpus_for_qps * (owned_fixed_cost_per_gpu_year / MONTHS_PER_YEAR
                           + owned_energy_cost_per_gpu_hour * HOURS_PER_MONTH * utilization)


# --- build options of the finance view (checked here: the CLI stays light) ------------------------

#: Symbols of common currency codes (any other code shows as itself unless --currency-symbol says).
SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CNY": "¥", "INR": "₹", "CHF": "CHF", "CAD": "C$",
           "AUD": "A$", "KRW": "₩", "SGD": "S$"}
MONTHS_RANGE = (1, 120)
DEFAULT_MONTHS = 36


CURRENCIES_CSV = Path(__file__).resolve().parents[1] / "data" / "currencies.csv"


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
