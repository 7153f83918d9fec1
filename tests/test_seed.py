"""The seed article's four functions, pinned to the values of its own formula."""

import pytest

from udfs import decode_tpot, flops_request, kv_bytes, weights_bytes


def test_kv_bytes_seed_70b_4k():
    # 2 * 80 * 8 * 128 * 4096 * 2: the seed's table says 655 MB, its formula 1.34 GB
    assert kv_bytes(80, 8, 128, 4096) == 1_342_177_280


def test_kv_bytes_seed_table_rows_are_half_the_formula():
    # the seed's table drops the K/V factor: every figure doubles
    assert kv_bytes(80, 8, 128, 1) == 327_680  # table: "160 KB"
    assert kv_bytes(28, 4, 128, 1) == 57_344  # table: "28 KB"
    assert kv_bytes(28, 4, 128, 4096) == 234_881_024  # table: "115 MB"
    assert kv_bytes(28, 4, 128, 32768) == 1_879_048_192  # table: "917 MB"
    assert kv_bytes(80, 8, 128, 32768) == 10_737_418_240  # table: "5.2 GB"


def test_weights_bytes_seed():
    assert weights_bytes(70e9) == 140e9
    assert weights_bytes(70e9, 4) == 280e9
    assert weights_bytes(70e9, 1) == 70e9
    assert weights_bytes(70e9, 0.5) == 35e9


def test_flops_request_seed():
    assert flops_request(70e9, 1024, 512) == pytest.approx(2.1504e14, rel=1e-12)


def test_decode_tpot_seed():
    assert decode_tpot(70e9, 2, 3e12) == pytest.approx(0.046667, rel=1e-5)
    assert decode_tpot(7e9, 2, 3e12) == pytest.approx(0.0046667, rel=1e-4)  # seed: ~4.7 ms
