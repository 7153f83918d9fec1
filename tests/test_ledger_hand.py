"""Hand-derived values at the edges of the ledger and the what-if inverses.

Each expected number is worked out in the comment beside it, from the formula as the
seed article (or the cited paper) writes it, never from the code under test.  These
are the cases a mutation run found unguarded: default arguments, the boundary of a
comparison, and the floor at zero.
"""

import math

import pytest

from inference_ledger.formulas import engine_ledger, ledger, whatif


def test_default_byte_widths_are_bf16():
    # BF16 is 2 bytes: 80 layers x 8 KV heads x 128 x 2 (K and V) x 2 B = 327,680 B/token
    assert ledger.kv_bytes_per_token(80, 8, 128) == 327_680
    # MLA (DeepSeek-V3): 61 x (512 + 64) x 2 B = 70,272 B/token
    assert ledger.kv_bytes_per_token_mla(61, 512, 64) == 70_272
    # 1B params, 0.5B quantized to 1 B, the other 0.5B at BF16 (2 B): 0.5e9 + 1e9 = 1.5e9 B
    assert ledger.weights_bytes_mixed(1e9, 0.5e9, 1) == 1.5e9


def test_bytes_per_element_default_has_no_scales():
    # 8 bits, no group scales: 1 byte; 4 bits: half a byte
    assert ledger.bytes_per_element(8) == 1
    assert ledger.bytes_per_element(4) == 0.5
    # GPTQ g128 with FP16 scales: (4 + 16/128) / 8 = 0.515625
    assert ledger.bytes_per_element(4, 128, 16) == 0.515625


def test_kv_elements_per_layer_gqa_and_mla():
    # GQA: 2 x 8 x 128 = 2048 elements; MLA latent 576 wins when present
    assert ledger.kv_elements_per_token_layer(8, 128) == 2048
    assert ledger.kv_elements_per_token_layer(8, 128, 576) == 576
    assert ledger.kv_elements_per_token_layer(8, 128, 1) == 1


def test_windowed_kv_defaults_and_window():
    # no sliding layers by default: the seed's 2LKHSb = 1,342,177,280 B at 4K
    assert ledger.kv_bytes_windowed(80, 8, 128, 4096) == 1_342_177_280
    # 4 layers, 2 of them sliding over 100 tokens, 1 KV head, dim 1, 1 B, 400 tokens:
    # 2 x 1 x 1 x 1 B x (2 x 400 + 2 x 100) = 2 x 1000 = 2000 B
    assert ledger.kv_bytes_windowed(4, 1, 1, 400, 1, 2, 100) == 2000
    # kv_sequence_bytes: 10 elements x 2 B x (3 full x 50 + 1 sliding x min(50, 20)) = 20 x 170 = 3400
    assert ledger.kv_sequence_bytes(10, 2, 4, 50, 1, 20) == 3400
    assert ledger.kv_sequence_bytes(10, 2, 4, 50) == 10 * 2 * 4 * 50


def test_memory_totals_and_usable_defaults():
    # 100 + 10 x 3 + 0 workspace = 130
    assert ledger.memory_total_bytes(100, 10, 3) == 130
    assert ledger.memory_total_bytes(100, 10, 3, 7) == 137
    # vLLM's default utilization is 0.9: 80 GB x 0.9 = 72 GB
    assert ledger.usable_bytes(80e9) == pytest.approx(72e9)


def test_gpus_needed_edges():
    # usable per GPU = 100 x 0.9 - 0 = 90; 90 B fit one GPU, 91 B need two, 181 B need four (3 -> TP 4)
    assert ledger.gpus_needed(90, 100) == 1
    assert ledger.gpus_needed(91, 100) == 2
    assert ledger.gpus_needed(181, 100) == 4
    # a tiny model on a GPU whose spare memory is under one byte still fits on one GPU
    assert ledger.gpus_needed(0.1, 1.5, 0.9, 1.0) == 1  # spare 0.35 B > 0
    # workspace fills the GPU: nothing fits
    assert ledger.gpus_needed(10, 100, 0.9, 95) == 0


def test_kv_capacity_and_concurrency():
    # (100 x 0.9 - 40 - 10) / 4 = 10 tokens; never negative
    assert ledger.kv_capacity_tokens_usable(100, 0.9, 40, 10, 4) == 10
    # (100 x 0.7 - 40 - 10) / 4 = 5 tokens
    assert ledger.kv_capacity_tokens_usable(100, 0.7, 40, 10, 4) == 5
    assert ledger.kv_capacity_tokens_usable(100, 0.9, 80, 20, 4) == 0
    # 10 tokens hold 3 sequences of 3 tokens
    assert ledger.sequences_in_kv_tokens(10, 3) == 3


def test_compute_time_and_ridge_defaults():
    # 1e15 FLOP at 1e15 FLOP/s x 0.5 (the seed's MFU) on one GPU: 2 s; on 4 GPUs: 0.5 s
    assert ledger.compute_seconds(1e15, 1e15) == 2
    assert ledger.compute_seconds(1e15, 1e15, 0.5, 4) == 0.5
    # ridge in BF16: 989e12 x 2 / (2 x 3.35e12) = 295.22...
    assert ledger.ridge_batch(989e12, 3.35e12) == pytest.approx(989e12 / 3.35e12)
    assert ledger.ridge_batch(989e12, 3.35e12, 1) == pytest.approx(989e12 / 3.35e12 / 2)


def test_money_lines():
    # 1,000,000 requests/day x 512 tokens / 86,400 s = 5,925.9 tokens/s
    assert ledger.required_tokens_per_second(1e6, 512) == pytest.approx(1e6 * 512 / 86400)
    # a month of the same forecast: 1e6 x 512 x 365/12 = 1.5573e10 tokens
    assert ledger.monthly_tokens(1e6, 512) == pytest.approx(1e6 * 512 * 365 / 12)
    # a tiny load still takes one whole replica; 2.5 replicas' worth takes 3
    assert ledger.replicas_needed(0.1, 100) == 1
    assert ledger.replicas_needed(0, 100) == 1  # no load still keeps one replica up
    assert ledger.replicas_needed(250, 100) == 3
    # $2.50 x 4 GPUs x 730 h = $7,300
    assert ledger.monthly_cost(2.5, 4) == pytest.approx(7300)
    # $10/h over 1,000 tokens/s: 10 / 3.6e6 x 1e6 = $2.78 per million tokens
    assert ledger.cost_per_million_output_tokens(2.5, 4, 1000) == pytest.approx(10 / 3.6)


def test_fits_is_inclusive():
    assert ledger.fits(90, 90) == 1
    assert ledger.fits(90.5, 90) == 0


def test_tpot_max_batch_defaults_and_floor():
    # full efficiencies by default: (0.05 x 1e12 - 1e10) / 1e8 = 400 by bandwidth; compute 0.05 x 1e15 / 1e11 = 500
    assert whatif.tpot_max_batch_roofline(0.05, 1e10, 1e8, 1e11, 1e12, 1e15) == 400
    # at 80% bandwidth: (0.05 x 0.8e12 - 1e10) / 1e8 = 300
    assert whatif.tpot_max_batch_roofline(0.05, 1e10, 1e8, 1e11, 1e12, 1e15, 0.8) == 300
    # at 10% compute: 0.05 x 1e14 / 1e11 = 50
    assert whatif.tpot_max_batch_roofline(0.05, 1e10, 1e8, 1e11, 1e12, 1e15, 1, 0.1) == 50
    # compute binds with default efficiency 1: 0.05 x 1e15 / 1e12 = 50 (bandwidth allows 500)
    assert whatif.tpot_max_batch_roofline(0.05, 0, 1e8, 1e12, 1e12, 1e15) == 50
    # weights alone miss the target: no batch
    assert whatif.tpot_max_batch_roofline(0.001, 1e10, 1e8, 1e11, 1e12, 1e15) == 0


def test_max_context_tokens_window_branches():
    # no windows: 1e6 B / (10 seqs x 400 B/token) = 250 tokens
    assert whatif.max_context_tokens(1e6, 10, 400, 4) == 250
    # within the window (100): 1e6 / (10 x 400) = 250 > 100 -> second branch (4 x 250 - 2 x 100) / 2 = 400
    assert whatif.max_context_tokens(1e6, 10, 400, 4, 2, 100) == 400
    # a window larger than the reach: t = 250 <= 300 -> 250
    assert whatif.max_context_tokens(1e6, 10, 400, 4, 2, 300) == 250
    # a budget that is negative (engine refuses): 0, never negative
    assert whatif.max_context_tokens(-1e6, 10, 400, 4) == 0
    # every layer slides: the denominator is kept at one layer: (4 x 250 - 4 x 100) / 1 = 600
    assert whatif.max_context_tokens(1e6, 10, 400, 4, 4, 100) == 600


def test_max_sequences_floor_at_zero():
    assert whatif.max_sequences(1000, 300) == 3
    assert whatif.max_sequences(-1000, 300) == 0


def test_min_gpus_to_fit_edges():
    # W 100, KV 100 over 60 B/GPU, KV splits 2 ways: spare = 60 - 50 = 10 -> 100/10 = 10 -> TP 16
    assert whatif.min_gpus_closed_form(100, 100, 60, 2) == 16
    # KV splits 8 ways: spare 47.5, 100/47.5 = 2.1 and (200)/60 = 3.3 -> TP 4
    assert whatif.min_gpus_closed_form(100, 100, 60, 8) == 4
    # KV that cannot split fills the GPU: none
    assert whatif.min_gpus_closed_form(100, 120, 60, 2) == 0
    # a small model fits one GPU
    assert whatif.min_gpus_closed_form(10, 10, 60, 8) == 1


def test_engine_terms_by_hand():
    """Non-torch memory adds NCCL only above TP 1; the decode overhead is L x per-layer + per-step."""
    assert engine_ledger.non_torch_bytes(0.35 * 2**30, 1.79 * 2**30, 1) == 0.35 * 2**30
    assert engine_ledger.non_torch_bytes(0.35 * 2**30, 1.79 * 2**30, 2) == pytest.approx(2.14 * 2**30)
    assert engine_ledger.decode_overhead_seconds(80, 20e-6, 0.2e-3) == pytest.approx(1.8e-3)


def test_seed_fit_test_is_inclusive():
    assert ledger.fits_usable(76.5e9, 76.5e9) == 1
    assert ledger.fits_usable(76.5e9 + 1, 76.5e9) == 0


def test_context_for_tokens_without_sliding_layers_is_the_tokens():
    assert whatif.context_for_tokens(1000, 80) == 1000
