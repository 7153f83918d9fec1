"""The plan's error bands: each headline figure times the held-out band of its segment.

The band multipliers are plan inputs (``band_low_tokens_per_second`` ... ``band_high_ttft``): the 10th and 90th
percentiles of measured / predicted over the published load rows of the plan's segment
(:data:`inference_ledger.catalogs.bands.SEGMENT_WORDS`), read from ``inference_ledger/data/error_bands.csv`` by
:mod:`inference_ledger.catalogs.bands` when the
plan is resolved.  About 80% of new measurements should fall inside ``[low, high]``.  GPUs and money follow the
throughput band: the fleet is smallest (and cheapest) when a replica is as fast as the band's high end.
"""

from __future__ import annotations

from inference_ledger.formulas import ledger
from inference_ledger.core.line import ACCURACY, derived, line

_BAND = " (about 80% of new measurements should fall inside the low-high band: data/error_bands.csv)"


def banded(value, multiplier):
    """A headline figure at one end of its band: the figure x the band's multiplier."""
    return value * multiplier


tokens_per_second_low = derived("tokens_per_second_low", banded,
    "Output tokens/s per replica, band low", "tokens/s", ACCURACY,
    "tokens_per_second x the band's low multiplier" + _BAND,
    value="tokens_per_second", multiplier="band_low_tokens_per_second")


tokens_per_second_high = derived("tokens_per_second_high", banded,
    "Output tokens/s per replica, band high", "tokens/s", ACCURACY,
    "tokens_per_second x the band's high multiplier" + _BAND,
    value="tokens_per_second", multiplier="band_high_tokens_per_second")


tpot_seconds_low = derived("tpot_seconds_low", banded, "TPOT, band low", "s", ACCURACY,
    "tpot_seconds x the band's low multiplier" + _BAND, value="tpot_seconds", multiplier="band_low_tpot")


tpot_seconds_high = derived("tpot_seconds_high", banded, "TPOT, band high", "s", ACCURACY,
    "tpot_seconds x the band's high multiplier" + _BAND, value="tpot_seconds", multiplier="band_high_tpot")


ttft_seconds_low = derived("ttft_seconds_low", banded, "TTFT a benchmark reports, band low", "s", ACCURACY,
    "ttft_seconds x the band's low multiplier" + _BAND, value="ttft_seconds", multiplier="band_low_ttft")


ttft_seconds_high = derived("ttft_seconds_high", banded, "TTFT a benchmark reports, band high", "s", ACCURACY,
    "ttft_seconds x the band's high multiplier" + _BAND, value="ttft_seconds", multiplier="band_high_ttft")


@line("GPUs for the target QPS, band low", "GPUs", ACCURACY,
      "Replicas at the throughput band's high end (QPS per replica x its multiplier) x GPUs per replica" + _BAND)
def gpus_for_qps_low(target_qps, qps_per_replica, band_high_tokens_per_second, gpus_per_replica):
    return ledger.replicas_needed(target_qps, qps_per_replica * band_high_tokens_per_second) * gpus_per_replica


@line("GPUs for the target QPS, band high", "GPUs", ACCURACY,
      "Replicas at the throughput band's low end (QPS per replica x its multiplier) x GPUs per replica" + _BAND)
def gpus_for_qps_high(target_qps, qps_per_replica, band_low_tokens_per_second, gpus_per_replica):
    return ledger.replicas_needed(target_qps, qps_per_replica * band_low_tokens_per_second) * gpus_per_replica


monthly_cost_qps_low = derived("monthly_cost_qps_low", ledger.monthly_cost,
    "Monthly cost for the target QPS, band low", "$/month", ACCURACY,
    "The GPUs of the band's low end x price x 730 h" + _BAND, num_gpus="gpus_for_qps_low")


monthly_cost_qps_high = derived("monthly_cost_qps_high", ledger.monthly_cost,
    "Monthly cost for the target QPS, band high", "$/month", ACCURACY,
    "The GPUs of the band's high end x price x 730 h" + _BAND, num_gpus="gpus_for_qps_high")


cost_per_million_output_tokens_low = derived(
    "cost_per_million_output_tokens_low", ledger.cost_per_million_output_tokens,
    "Cost per million output tokens, band low", "$/Mtok", ACCURACY,
    "At the throughput band's high end" + _BAND,
    num_gpus="gpus_per_replica", tokens_per_second="tokens_per_second_high")


cost_per_million_output_tokens_high = derived(
    "cost_per_million_output_tokens_high", ledger.cost_per_million_output_tokens,
    "Cost per million output tokens, band high", "$/Mtok", ACCURACY,
    "At the throughput band's low end" + _BAND, num_gpus="gpus_per_replica", tokens_per_second="tokens_per_second_low")
