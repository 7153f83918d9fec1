"""The plan's error bands: each headline figure times the held-out band of its segment.

The band multipliers are plan inputs (``band_low_tokens_per_second`` ... ``band_high_ttft``): the 10th and 90th
percentiles of measured / predicted over the published load rows of the plan's segment (engine family x GPU vendor
x dense/MoE), read from ``inference_ledger/data/error_bands.csv`` by :mod:`inference_ledger.catalogs.bands` when the
plan is resolved.  About 80% of new measurements should fall inside ``[low, high]``.  GPUs and money follow the
throughput band: the fleet is smallest (and cheapest) when a replica is as fast as the band's high end.
"""

from __future__ import annotations

from inference_ledger.formulas import ledger
from inference_ledger.core.line import ACCURACY, line

_BAND = " (about 80% of new measurements should fall inside the low-high band: data/error_bands.csv)"


@line("Output tokens/s per replica, band low", "tokens/s", ACCURACY,
      "tokens_per_second x the band's low multiplier" + _BAND)
def tokens_per_second_low(tokens_per_second, band_low_tokens_per_second):
    return tokens_per_second * band_low_tokens_per_second


@line("Output tokens/s per replica, band high", "tokens/s", ACCURACY,
      "tokens_per_second x the band's high multiplier" + _BAND)
def tokens_per_second_high(tokens_per_second, band_high_tokens_per_second):
    return tokens_per_second * band_high_tokens_per_second


@line("TPOT, band low", "s", ACCURACY, "tpot_seconds x the band's low multiplier" + _BAND)
def tpot_seconds_low(tpot_seconds, band_low_tpot):
    return tpot_seconds * band_low_tpot


@line("TPOT, band high", "s", ACCURACY, "tpot_seconds x the band's high multiplier" + _BAND)
def tpot_seconds_high(tpot_seconds, band_high_tpot):
    return tpot_seconds * band_high_tpot


@line("TTFT, band low", "s", ACCURACY, "ttft_seconds x the band's low multiplier" + _BAND)
def ttft_seconds_low(ttft_seconds, band_low_ttft):
    return ttft_seconds * band_low_ttft


@line("TTFT, band high", "s", ACCURACY, "ttft_seconds x the band's high multiplier" + _BAND)
def ttft_seconds_high(ttft_seconds, band_high_ttft):
    return ttft_seconds * band_high_ttft


@line("GPUs for the target QPS, band low", "GPUs", ACCURACY,
      "Replicas at the throughput band's high end (QPS per replica x its multiplier) x GPUs per replica" + _BAND)
def gpus_for_qps_low(target_qps, qps_per_replica, band_high_tokens_per_second, gpus_per_replica):
    return ledger.replicas_needed(target_qps, qps_per_replica * band_high_tokens_per_second) * gpus_per_replica


@line("GPUs for the target QPS, band high", "GPUs", ACCURACY,
      "Replicas at the throughput band's low end (QPS per replica x its multiplier) x GPUs per replica" + _BAND)
def gpus_for_qps_high(target_qps, qps_per_replica, band_low_tokens_per_second, gpus_per_replica):
    return ledger.replicas_needed(target_qps, qps_per_replica * band_low_tokens_per_second) * gpus_per_replica


@line("Monthly cost for the target QPS, band low", "$/month", ACCURACY,
      "The GPUs of the band's low end x price x 730 h" + _BAND)
def monthly_cost_qps_low(price_per_gpu_hour, gpus_for_qps_low):
    return ledger.monthly_cost(price_per_gpu_hour, gpus_for_qps_low)


@line("Monthly cost for the target QPS, band high", "$/month", ACCURACY,
      "The GPUs of the band's high end x price x 730 h" + _BAND)
def monthly_cost_qps_high(price_per_gpu_hour, gpus_for_qps_high):
    return ledger.monthly_cost(price_per_gpu_hour, gpus_for_qps_high)


@line("Cost per million output tokens, band low", "$/Mtok", ACCURACY,
      "At the throughput band's high end" + _BAND)
def cost_per_million_output_tokens_low(price_per_gpu_hour, gpus_per_replica, tokens_per_second_high):
    return ledger.cost_per_million_output_tokens(price_per_gpu_hour, gpus_per_replica, tokens_per_second_high)


@line("Cost per million output tokens, band high", "$/Mtok", ACCURACY,
      "At the throughput band's low end" + _BAND)
def cost_per_million_output_tokens_high(price_per_gpu_hour, gpus_per_replica, tokens_per_second_low):
    return ledger.cost_per_million_output_tokens(price_per_gpu_hour, gpus_per_replica, tokens_per_second_low)
