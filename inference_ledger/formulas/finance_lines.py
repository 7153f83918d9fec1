"""The plan's finance lines: owning a GPU against renting it (formulas in :mod:`inference_ledger.formulas.finance`).

One plain function per line (see :mod:`inference_ledger.core.line`); the TCO, Forecast and Sensitivity
sheets and ``plan --json`` read them by name.
"""

from __future__ import annotations

from inference_ledger.formulas import finance
from inference_ledger.core.line import FINANCE, line


@line("IT power per GPU", "kW", FINANCE,
      "GPU TDP + its share of the server, in kW.")
def power_kw_per_gpu(gpu_power_w, server_power_w_per_gpu):
    return finance.power_kw(gpu_power_w, server_power_w_per_gpu)


@line("Capital recovery factor", "1/year", FINANCE,
      "Annuity per 1 of capex: r / (1 - (1 + r)^-years).")
def capital_recovery_factor(cost_of_capital, depreciation_years):
    return finance.capital_recovery_factor(cost_of_capital, depreciation_years)


@line("Owned GPU: fixed cost per year", "$/GPU-year", FINANCE,
      "Capex x CRF + capex x support share + kW x hosting x 12: paid whether the GPU works or not.")
def owned_fixed_cost_per_gpu_year(server_price_per_gpu, capital_recovery_factor, support_fraction,
                                  power_kw_per_gpu, hosting_per_kw_month):
    return finance.owned_fixed_cost_per_year(server_price_per_gpu, capital_recovery_factor, support_fraction,
                                             power_kw_per_gpu, hosting_per_kw_month)


@line("Owned GPU: energy per working hour", "$/GPU-h", FINANCE,
      "kW x PUE x price per kWh.")
def owned_energy_cost_per_gpu_hour(power_kw_per_gpu, pue, electricity_price):
    return finance.energy_cost_per_hour(power_kw_per_gpu, pue, electricity_price)


@line("Owned cost per used GPU-hour", "$/GPU-h", FINANCE,
      "Fixed cost / (8760 h x utilization) + energy.")
def owned_cost_per_gpu_hour(owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour, utilization):
    return finance.owned_cost_per_gpu_hour(owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour,
                                           utilization)


@line("Owned cost per million output tokens", "$/Mtok", FINANCE,
      "The plan's $/Mtok at the owned cost per used GPU-hour.")
def owned_cost_per_million_output_tokens(owned_cost_per_gpu_hour, gpus_per_replica, tokens_per_second):
    return finance.cost_per_million_tokens(owned_cost_per_gpu_hour, gpus_per_replica, tokens_per_second)


@line("Break-even utilization (own vs on demand)", "fraction", FINANCE,
      "Utilization above which owning costs less per used hour than on demand; negative or over 100%: never.")
def breakeven_utilization(owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour, price_per_gpu_hour):
    return finance.breakeven_utilization(owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour,
                                         price_per_gpu_hour)


@line("Owning beats on demand", "1/0", FINANCE,
      "1 when the utilization reaches the break-even.")
def owned_beats_rent(utilization, breakeven_utilization):
    return finance.own_beats_rent(utilization, breakeven_utilization)


@line("Owned GPU: running cash per month", "$/month", FINANCE,
      "Support / 12 + kW x hosting + energy x 730 h x utilization: what it costs once bought.")
def owned_running_cost_per_gpu_month(server_price_per_gpu, support_fraction, power_kw_per_gpu,
                                     hosting_per_kw_month, owned_energy_cost_per_gpu_hour, utilization):
    return finance.running_cost_per_month(server_price_per_gpu, support_fraction, power_kw_per_gpu,
                                          hosting_per_kw_month, owned_energy_cost_per_gpu_hour, utilization)


@line("Months of use for owning to pay back", "months", FINANCE,
      "Server price / (on-demand bill - running cash) per month at this utilization; undiscounted; negative: never.")
def payback_months(server_price_per_gpu, owned_running_cost_per_gpu_month, price_per_gpu_hour, utilization):
    return finance.payback_months(server_price_per_gpu, owned_running_cost_per_gpu_month, price_per_gpu_hour,
                                  utilization)


@line("1-year reserved rate", "$/GPU-h", FINANCE,
      "On demand x (1 - 1-year discount), paid for every hour.")
def reserved_1y_price_per_gpu_hour(price_per_gpu_hour, reserved_1y_discount):
    return finance.discounted(price_per_gpu_hour, reserved_1y_discount)


@line("3-year reserved rate", "$/GPU-h", FINANCE,
      "On demand x (1 - 3-year discount), paid for every hour.")
def reserved_3y_price_per_gpu_hour(price_per_gpu_hour, reserved_3y_discount):
    return finance.discounted(price_per_gpu_hour, reserved_3y_discount)


@line("Spot rate", "$/GPU-h", FINANCE,
      "On demand x (1 - spot discount), paid per used hour; interruptible.")
def spot_price_per_gpu_hour(price_per_gpu_hour, spot_discount):
    return finance.discounted(price_per_gpu_hour, spot_discount)


@line("1-year reserved per used GPU-hour", "$/GPU-h", FINANCE,
      "Reserved rate / utilization.")
def reserved_1y_cost_per_gpu_hour(reserved_1y_price_per_gpu_hour, utilization):
    return finance.committed_cost_per_used_hour(reserved_1y_price_per_gpu_hour, utilization)


@line("3-year reserved per used GPU-hour", "$/GPU-h", FINANCE,
      "Reserved rate / utilization.")
def reserved_3y_cost_per_gpu_hour(reserved_3y_price_per_gpu_hour, utilization):
    return finance.committed_cost_per_used_hour(reserved_3y_price_per_gpu_hour, utilization)


@line("Cheapest cost per used GPU-hour", "$/GPU-h", FINANCE,
      "The least of on demand, 1- and 3-year reserved, owned (and spot when counted).")
def best_cost_per_gpu_hour(price_per_gpu_hour, reserved_1y_cost_per_gpu_hour, reserved_3y_cost_per_gpu_hour,
                           owned_cost_per_gpu_hour, spot_price_per_gpu_hour, use_spot):
    return finance.cheapest_option(price_per_gpu_hour, reserved_1y_cost_per_gpu_hour,
                                   reserved_3y_cost_per_gpu_hour, owned_cost_per_gpu_hour, spot_price_per_gpu_hour,
                                   use_spot)


@line("Cheapest cost per million output tokens", "$/Mtok", FINANCE,
      "The plan's $/Mtok at the cheapest cost per used GPU-hour.")
def best_cost_per_million_output_tokens(best_cost_per_gpu_hour, gpus_per_replica, tokens_per_second):
    return finance.cost_per_million_tokens(best_cost_per_gpu_hour, gpus_per_replica, tokens_per_second)


@line("Monthly cost of owning the QPS fleet", "$/month", FINANCE,
      "GPUs for the target QPS x (fixed cost / 12 + energy x 730 h x utilization).")
def owned_monthly_cost_qps(gpus_for_qps, owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour, utilization):
    return finance.monthly_fleet_cost(gpus_for_qps, owned_fixed_cost_per_gpu_year, owned_energy_cost_per_gpu_hour,
                                      utilization)
