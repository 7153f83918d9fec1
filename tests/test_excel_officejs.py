"""The real xlwings path of the worksheet functions (xlwings Lite / xlwings Server, Office.js).

xlwings picks its decorators when it is first imported (``XLWINGS_ON_SERVER``), so the
Office.js side runs in a fresh interpreter with ``XLWINGS_ON_SERVER=true`` and the
noncommercial PRO licence: only in this test process, never at run time.  That child
registers ``udfs.excel`` with ``xlwings.server.custom_functions_meta`` and answers the
payloads Office.js sends (``custom-functions-code.js``: func_name, 2-D args, caller
address, culture, runtime "1.4", client "Office.js") through
``xlwings.server.custom_functions_call``; the assertions are here.

Regenerate the registration snapshot after an intended change:
``python tests/test_excel_officejs.py > tests/xlwings_meta_snapshot.json``
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = Path(__file__).with_name("xlwings_meta_snapshot.json")

CHILD = r"""
import asyncio, json, sys
import xlwings, xlwings.server
import udfs.excel

async def answer(calls):
    out = []
    for data in calls:
        try:
            out.append({"result": await xlwings.server.custom_functions_call(data, udfs.excel)})
        except Exception as e:  # reported, asserted absent by the parent
            out.append({"raised": repr(e)})
    return out

calls = json.load(sys.stdin)
json.dump({"pro": xlwings.__pro__,
           "meta": xlwings.server.custom_functions_meta(udfs.excel),
           "calls": asyncio.run(answer(calls))}, sys.stdout, indent=1)
"""


def office_js(func_name: str, *args) -> dict:
    """The body custom-functions-code.js posts for one formula (omitted arguments are null)."""
    return {
        "func_name": func_name,
        "args": list(args),
        "caller_address": "Office.js[Book1.xlsx]Sheet1!B2",
        "culture_info_name": "en-US",
        "date_format": "M/d/yyyy",
        "version": "0.37.8",
        "runtime": "1.4",
        "client": "Office.js",
    }


def run_child(calls: list[dict]) -> dict:
    env = {**os.environ, "XLWINGS_ON_SERVER": "true", "XLWINGS_LICENSE_KEY": "noncommercial"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], input=json.dumps(calls), capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


SEQ = [[float(s)] for s in range(1, 10_001)]  # a 10,000-row column of seq_len
SEQ[9] = [""]  # a blank cell: Office.js sends "" (required argument: an error in that row)
SEQ[19] = ["4k"]  # text

CALLS = {
    "seed_kv": office_js("KV_BYTES", [[80]], [[8]], [[128]], [[4096]], None),
    "seed_weights": office_js("WEIGHTS_BYTES", [[70e9]], None),
    "seed_flops": office_js("FLOPS_REQUEST", [[70e9]], [[1024]], [[512]]),
    "seed_tpot": office_js("DECODE_TPOT", [[70e9]], [[2]], [[3e12]]),
    "fp8_kv": office_js("KV_BYTES", [[80]], [[8]], [[128]], [[4096]], [[1]]),
    "column": office_js("KV_BYTES", [[80]], [[8]], [[128]], SEQ, None),
    "row": office_js("KV_BYTES", [[80, 32, 61]], [[8, 8, 1]], [[128]], [[1]], [[2]]),
    "blank_default": office_js("KV_BYTES", [[80], [80]], [[8]], [[128]], [[4096]], [[""], [1]]),
    "negative": office_js("KV_BYTES", [[-80]], [[8]], [[128]], [[4096]], None),
    "absurd": office_js("WEIGHTS_BYTES", [[1e20]], None),
    "divides": office_js("SEQUENCES_IN_KV_TOKENS", [[1e6], [1e6]], [[8192], [0]]),
    "mismatch": office_js("KV_BYTES", [[80], [40], [20]], [[8]], [[128]], [[1], [2]], None),
    "missing_required": office_js("KV_BYTES", [[80]], [[8]], [[128]], None, None),
    "dtype": office_js("DTYPE_BYTES", [["fp8"]]),
    "gpu_spec": office_js("GPU_SPEC", [["h100-sxm"], ["H200"]], [["hbm_bw"]]),
    "gpu_spec_na": office_js("GPU_SPEC", [["h100-sxm"]], [["fp4_flops"]]),
    "model_spec": office_js("MODEL_SPEC", [["llama-3.1-70b"]], [["kv_bytes_per_token", "num_layers"]]),
    # =PLAN("llama-3.1-70b", A1:A2, B1:C1, 2): a column of GPUs by a row of keys; the other options left out
    "plan": office_js("PLAN", [["llama-3.1-70b"]], [["h100-sxm"], ["h200"]], [["verdict", "verdict_words"]], [[2]],
                      [[16]], None, None, None, None, None),
    # the concurrency left out: auto, the largest the KV cache holds that meets the targets
    "plan_auto": office_js("PLAN", [["llama-3.1-70b"]], [["h100-sxm"]],
                           [["verdict", "concurrency_used", "concurrency_reason_words"]], [[2]],
                           None, None, None, None, None, None),
    "plan_refused": office_js("PLAN", [["llama-3.1-70b"]], [["h100-sxm"]], [["fits"]], [[3]],
                              None, None, None, None, None, None),
}


@pytest.fixture(scope="module")
def child():
    out = run_child(list(CALLS.values()))
    out["results"] = dict(zip(CALLS, out.pop("calls")))
    return out


def result(child, name):
    answer = child["results"][name]
    assert "raised" not in answer, answer
    return answer["result"]


def value_error(message):
    return {"type": "Error", "errorType": "Value", "message": message}


def test_registration_matches_snapshot(child):
    assert child["meta"] == json.loads(SNAPSHOT.read_text()), (
        "registration changed; if intended: python tests/test_excel_officejs.py > tests/xlwings_meta_snapshot.json"
    )


def test_registration_content(child):
    functions = {f["name"]: f for f in child["meta"]["functions"]}
    assert {"KV_BYTES", "WEIGHTS_BYTES", "FLOPS_REQUEST", "DECODE_TPOT", "GPU_SPEC", "MODEL_SPEC", "DTYPE_BYTES"} <= set(functions)
    kv = functions["KV_BYTES"]
    assert kv["description"].startswith("KV cache of one sequence in bytes")
    assert [p["name"] for p in kv["parameters"]] == ["num_layers", "kv_heads", "head_dim", "seq_len", "bytes_per"]
    assert [p.get("optional", False) for p in kv["parameters"]] == [False, False, False, False, True]
    assert kv["parameters"][4]["description"].endswith("a number > 0 and <= 16; blank = 2")
    for f in functions.values():
        assert "\n" not in f["description"] and f["description"]
        assert all(not p["description"].startswith("Positional argument") for p in f["parameters"]), f["name"]
        assert all(p["name"] != "caller" for p in f["parameters"])
        assert f["result"] == {"dimensionality": "matrix", "type": "any"}


def test_pro_only_in_the_test_child(child):
    assert child["pro"] is True  # the child really ran xlwings' Office.js code


def test_seed_values(child):
    assert result(child, "seed_kv") == [[1342177280]]
    assert result(child, "seed_weights") == [[140e9]]
    assert result(child, "seed_flops") == [[2.1504e14]]
    assert result(child, "seed_tpot") == [[pytest.approx(0.046666666)]]
    assert result(child, "fp8_kv") == [[671088640]]


def test_column_of_10000_spills_a_column(child):
    out = result(child, "column")
    assert len(out) == 10_000 and all(len(row) == 1 for row in out)
    assert out[0] == [327680] and out[4095] == [1342177280] and out[9999] == [3276800000]
    assert out[9] == [value_error("seq_len is required: a whole number >= 0 and <= 1000000000")]
    assert out[19] == [value_error("seq_len must be a whole number >= 0 and <= 1000000000 (got text '4k')")]
    assert sum(isinstance(row[0], dict) for row in out) == 2


def test_row_in_row_out(child):
    # B/token in BF16: Llama-3.1-70B (80 x 8 x 128), Llama-3.1-8B (32 x 8 x 128), 61 layers x 1 head
    assert result(child, "row") == [[327680, 131072, 31232]]


def test_blank_cell_takes_default(child):
    assert result(child, "blank_default") == [[1342177280], [671088640]]


def test_bad_input_errors(child):
    assert result(child, "negative") == [[value_error("num_layers must be a whole number >= 1 and <= 10000 (got -80)")]]
    assert result(child, "absurd") == [[value_error("num_params must be a number > 0 and <= 100000000000000 (got 1e+20)")]]
    assert result(child, "divides") == [[122], [value_error("context must be a whole number > 0 and <= 1000000000 here, it divides (got 0)")]]
    assert result(child, "mismatch") == [[value_error(
        "ranges do not match (num_layers 3x1, seq_len 2x1): give single cells, or ranges of one size, or one row with one column"
    )]]
    assert result(child, "missing_required") == [[value_error("seq_len is required: a whole number >= 0 and <= 1000000000")]]


def test_catalog_lookups(child):
    assert result(child, "dtype") == [[1]]
    assert result(child, "gpu_spec") == [[3.35e12], [4.8e12]]
    assert result(child, "gpu_spec_na") == [[{
        "type": "Error", "errorType": "NotAvailable", "message": "no value for gpu_id='h100-sxm', field='fp4_flops'"
    }]]
    assert result(child, "model_spec") == [[327680, 80]]


def test_plan_through_office_js(child):
    # current vLLM starts 70B BF16 on 2 x H100 with ~19k KV tokens: 12 of the default 16 sequences run
    assert result(child, "plan") == [[1, "fits below the requested concurrency"], [3, "fits, meets targets"]]
    # left out, the concurrency is the 12 sequences the KV cache holds (TPOT is well within 50 ms there)
    assert result(child, "plan_auto") == [[3, 12, "KV cache"]]
    assert result(child, "plan_refused") == [[value_error("TP 3 does not divide the 64 attention heads of llama-3.1-70b")]]


if __name__ == "__main__":  # print the current registration (to refresh the snapshot)
    print(json.dumps(run_child([])["meta"], indent=1, sort_keys=True))
