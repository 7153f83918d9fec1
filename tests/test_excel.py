"""The worksheet functions as plain Python (xlwings' Linux no-op decorators, no PRO).

Values, Excel broadcasting, blanks and every bad-input case; the Office.js wire path
is in test_excel_officejs.py.  Without XLWINGS_ON_SERVER an error cell is the text
``"#VALUE! <message>"`` (what the classic COM add-in can show).
"""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from inference_ledger.formulas import ledger
from udfs import _xl, excel
from inference_ledger.core.args import ARGS

ROOT = Path(__file__).resolve().parents[1]


def err(message: str) -> str:
    return f"#VALUE! {message}"


# --- values --------------------------------------------------------------------------


def test_seed_values():
    assert excel.KV_BYTES(80, 8, 128, 4096) == [[1342177280]]
    assert excel.WEIGHTS_BYTES(70e9) == [[140e9]]
    assert excel.FLOPS_REQUEST(70e9, 1024, 512) == [[2.1504e14]]
    assert excel.DECODE_TPOT(70e9, 2, 3e12) == [[pytest.approx(0.0466666667)]]


def test_real_models_per_token():
    assert excel.KV_BYTES_PER_TOKEN(80, 8, 128) == [[327680]]  # Llama-3.1-70B, BF16
    assert excel.KV_BYTES_PER_TOKEN(28, 4, 128) == [[57344]]  # Qwen2.5-7B
    assert excel.KV_BYTES_PER_TOKEN_MLA(61, 512, 64) == [[70272]]  # DeepSeek-V3: 61 x (512 + 64) x 2
    assert excel.BYTES_PER_ELEMENT(4, 128, 16) == [[0.515625]]  # INT4 g128 FP16 scales
    assert excel.GPUS_NEEDED(200e9, 80e9) == [[4]]  # 200 GB / 72 GB usable = 2.8 -> TP 4


def test_returns_2d_lists_of_python_floats():
    out = excel.KV_BYTES([[80], [40]], 8, 128, 4096)
    assert type(out) is list and all(type(row) is list for row in out)
    assert all(type(v) is float for row in out for v in row)


# --- broadcasting --------------------------------------------------------------------


def test_column_stays_column_and_row_stays_row():
    assert excel.KV_BYTES(80, 8, 128, [[1024], [2048], [4096]]) == [[335544320], [671088640], [1342177280]]
    assert excel.KV_BYTES(80, 8, 128, [[1024, 2048, 4096]]) == [[335544320, 671088640, 1342177280]]


def test_column_with_row_gives_table():
    assert excel.KV_BYTES([[80], [40]], 8, 128, [[1, 2]], 1) == [[163840, 327680], [81920, 163840]]


def test_one_numpy_evaluation_over_the_range():
    calls = []

    def twice(seq_len):
        calls.append(np.shape(seq_len))
        return 2 * seq_len

    params = [_xl.Param("seq_len", ARGS["seq_len"], None)]
    out = _xl.broadcast_call(twice, params, [[[float(s)] for s in range(10_000)]])
    assert calls == [(10_000, 1)]
    assert len(out) == 10_000 and out[-1] == [19_998]


def test_numpy_and_flat_inputs():
    assert excel.KV_BYTES(80, 8, 128, np.array([[1.0], [2.0]])) == [[327680], [655360]]
    assert excel.KV_BYTES(80, 8, 128, [1, 2]) == [[327680, 655360]]  # 1-D is a row, as in numpy


def test_blank_cells_take_the_default():
    assert excel.KV_BYTES(80, 8, 128, [[4096], [4096]], [[None], [""]]) == [[1342177280], [1342177280]]
    assert excel.KV_BYTES(80, 8, 128, 4096, None) == [[1342177280]]
    assert excel.COMPUTE_SECONDS(1e15, 1e15, None) == [[2]]  # efficiency blank = 0.5


# --- bad input: an error in the cell, never an exception ------------------------------


LAYERS = "num_layers must be a whole number >= 1 and <= 10000"


@pytest.mark.parametrize(
    "value, message",
    [
        ("eighty", f"{LAYERS} (got text 'eighty')"),
        (-80, f"{LAYERS} (got -80)"),
        (0, f"{LAYERS} (got 0)"),
        (80.5, f"{LAYERS} (got 80.5)"),
        (float("nan"), f"{LAYERS} (got NaN)"),
        (1e12, f"{LAYERS} (got 1000000000000)"),
        (True, f"{LAYERS} (got True)"),
        (None, "num_layers is required: a whole number >= 1 and <= 10000"),
    ],
)
def test_bad_scalar(value, message):
    assert excel.KV_BYTES(value, 8, 128, 4096) == [[err(message)]]


def test_bad_elements_only_fail_their_own_cells():
    out = excel.KV_BYTES([[80], ["x"], [-1], [float("nan")], [80]], 8, 128, 4096)
    assert out[0] == [1342177280] and out[4] == [1342177280]
    assert out[1:4] == [[err(f"{LAYERS} (got text 'x')")], [err(f"{LAYERS} (got -1)")], [err(f"{LAYERS} (got NaN)")]]


def test_float_range_with_a_bad_value():
    assert excel.KV_BYTES(80, 8, 128, [[4096.0], [-1.0]])[1] == [err("seq_len must be a whole number >= 0 and <= 1000000000 (got -1)")]


def test_zero_where_it_divides():
    assert excel.SEQUENCES_IN_KV_TOKENS([[1e6], [0]], 0) == [
        [err("context must be a whole number > 0 and <= 1000000000 here, it divides (got 0)")]
    ] * 2
    assert excel.BATCH_TOKENS_PER_SECOND(8, 0) == [[err("tpot_seconds must be a number > 0 and <= 1000000 (got 0)")]]


def test_absurd_sizes():
    assert excel.WEIGHTS_BYTES(1e20) == [[err("num_params must be a number > 0 and <= 100000000000000 (got 1e+20)")]]
    assert excel.KV_BYTES(80, 8, 128, 4096, 1000) == [[err("bytes_per must be a number > 0 and <= 16 (got 1000)")]]


def test_mismatched_and_ragged_ranges():
    assert excel.KV_BYTES([[80], [40], [20]], 8, 128, [[1], [2]]) == [[err(
        "ranges do not match (num_layers 3x1, seq_len 2x1): give single cells, or ranges of one size, or one row with one column"
    )]]
    assert excel.KV_BYTES(80, 8, 128, [[1], [2, 3]]) == [[err("seq_len: a range must be rectangular")]]


def test_error_value_per_host(monkeypatch):
    monkeypatch.setenv("XLWINGS_ON_SERVER", "true")
    assert excel.KV_BYTES(-1, 8, 128, 4096) == [[{"type": "Error", "errorType": "Value", "message": f"{LAYERS} (got -1)"}]]
    monkeypatch.delenv("XLWINGS_ON_SERVER")
    assert excel.KV_BYTES(-1, 8, 128, 4096) == [[err(f"{LAYERS} (got -1)")]]


# --- catalog lookups ------------------------------------------------------------------


def test_dtype_bytes():
    assert excel.DTYPE_BYTES([["fp8"], ["BF16"], ["int4"], ["mxfp4"]]) == [[1], [2], [0.515625], [0.53125]]


def test_gpu_and_model_spec_broadcast():
    assert excel.GPU_SPEC("H100", [["hbm_bw", "bf16_flops"]]) == [[3.35e12, 989e12]]  # dense BF16
    assert excel.MODEL_SPEC([["qwen2.5-7b"], ["deepseek-v3"]], [["kv_bytes_per_token", "num_layers"]]) == [
        [57344, 28],
        [70272, 61],
    ]


def test_lookup_errors():
    [[unknown]] = excel.GPU_SPEC("h10", "hbm_bw")
    assert unknown.startswith("#VALUE! unknown GPU 'h10': did you mean h100")
    assert excel.GPU_SPEC("h100-sxm", "fp4_flops") == [["#N/A no value for gpu_id='h100-sxm', field='fp4_flops'"]]
    assert excel.MODEL_SPEC(None, "num_layers") == [["#VALUE! model_id is required"]]


# --- registration ----------------------------------------------------------------------


def test_registry_is_the_ledger_under_excel_names():
    for fn, name, description in excel.REGISTRY:
        wrapper = getattr(excel, name)
        assert name == fn.__name__.upper() and name in excel.__all__
        assert inspect.signature(wrapper) == inspect.signature(fn)  # names, order, defaults
        assert wrapper.__doc__ == description and "\n" not in description
    assert {"KV_BYTES", "WEIGHTS_BYTES", "FLOPS_REQUEST", "DECODE_TPOT", "GPUS_NEEDED", "MONTHLY_COST",
            "COST_PER_MILLION_OUTPUT_TOKENS", "DTYPE_BYTES", "GPU_SPEC", "MODEL_SPEC"} <= set(excel.__all__)


def test_argument_docs_fit_excel():
    # Excel's function wizard takes at most 255 characters per argument description.
    for fn, _, _ in excel.REGISTRY:
        for name, p in inspect.signature(fn).parameters.items():
            default = None if p.default is inspect.Parameter.empty else p.default
            doc = _xl.Param(name, ARGS[name], default).doc()
            assert len(doc) <= 255, (fn.__name__, name)
            if default is not None and ARGS[name].default is not None:
                assert ARGS[name].default == default, (fn.__name__, name)  # one documented default


def test_only_excel_module_imports_xlwings():
    for path in [*(ROOT / "udfs").rglob("*.py"), *(ROOT / "inference_ledger").rglob("*.py")]:
        imported = {
            alias.name
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
        }
        xl = {m for m in imported if m.split(".")[0] == "xlwings"}
        assert xl == ({"xlwings"} if path.name == "excel.py" else set()), path


def test_plain_xlwings_without_pro():
    code = (
        "import xlwings, udfs.excel as e\n"
        "assert not xlwings.__pro__\n"
        "assert not hasattr(e.KV_BYTES, '__xlfunc__')\n"
        "print(e.KV_BYTES(80, 8, 128, [[4096], [-1]]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLWINGS_")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "[[1342177280.0], ['#VALUE! seq_len must be a whole number >= 0 and <= 1000000000 (got -1)']]"
    )


def test_ledger_functions_left_out_on_purpose():
    registered = {fn.__name__ for fn, _, _ in excel.REGISTRY}
    public = {n for n, f in inspect.getmembers(ledger, inspect.isfunction) if f.__module__ == ledger.__name__ and not n.startswith("_")}
    # building blocks of the plan graph, reachable through the registered ones
    assert public - registered == {"kv_elements_per_token_layer", "kv_sequence_bytes", "per_gpu", "forward_flops", "fits"}
