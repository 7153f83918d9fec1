"""The steady-state serving model's inputs and words: efficiencies with their sources, batching everywhere."""

import csv

import pytest

from inference_ledger.graph import plan, resolve
from inference_ledger.formulas import serving
from inference_ledger.core.args import LedgerInputError
from udfs import excel
from inference_ledger.workbook.scenarios import read_scenarios


def test_every_efficiency_default_has_a_source_row():
    with serving.EFFICIENCIES_CSV.open() as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    for r in rows:
        assert r["source"] and r["quote"] and len(r["date"]) == 10, r["name"]
        assert plan.INPUT_BY_NAME[r["name"]].default == float(r["value"])
    # the H200 microbenchmarks: weight streaming 75-78 %, KV reads ~90 %, compute-bound 55-65 % of dense peak
    assert {r["name"] for r in rows} >= {"bw_efficiency", "kv_read_efficiency", "decode_compute_efficiency"}
    assert float(next(r["value"] for r in rows if r["name"] == "kv_read_efficiency")) == 0.9


def test_batching_words_are_the_same_everywhere(tmp_path):
    static = resolve.resolve("llama-3.1-70b", "h100-sxm", batching="static", numbers={"tp": 4})
    assert static.inputs["batching"] == 2 and static.describe()["batching"] == "static"
    # a word where a number would go (a scenario cell, an option value) means the same
    assert resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"tp": 4, "batching": "static"}).inputs == static.inputs
    want = plan.evaluate(static.inputs)["tokens_per_second"]
    assert excel.PLAN("llama-3.1-70b", "h100-sxm", "tokens_per_second", 4, 16, None, None, None, None, None,
                      None, None, None, "static") == [[pytest.approx(want, rel=1e-12)]]
    p = tmp_path / "sc.csv"
    p.write_text("label,model,gpu,tp,batching\na,llama-3.1-70b,h100-sxm,4,static\nb,llama-3.1-70b,h100-sxm,4,1\n")
    assert [s.inputs["batching"] for s in read_scenarios(p)] == [2, 1]
    p.write_text("label,model,gpu,tp,batching\na,llama-3.1-70b,h100-sxm,4,bursty\n")
    with pytest.raises(LedgerInputError, match="line 2, column 'batching': batching must be one of continuous, static"):
        read_scenarios(p)
    with pytest.raises(resolve.ChoiceError, match="batching must be one of continuous, static"):
        resolve.resolve("llama-3.1-70b", "h100-sxm", batching="bursty")


def test_binding_limit_words():
    assert serving.limit_words(1) == "KV cache" and serving.limit_words(3) == "TPOT target"
    # a TPOT target of 10 ms that 16 sequences of 70B on 4 x H100 miss
    v = plan.evaluate(resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"tpot_target": 0.01}).inputs)
    assert v["tpot_ok"] == 0 and serving.limit_words(v["binding_limit"]) == "TPOT target"
    # 8B at 1,024 sequences of 128 in / 128 out on an H100: the engine's max_num_seqs binds, not the KV cache
    v = plan.evaluate(resolve.resolve("llama-3.1-8b", "h100-sxm", numbers={
        "tp": 1, "concurrency": 2000, "input_tokens": 64, "output_tokens": 64}).inputs)
    assert v["max_concurrency"] > 1024 and v["effective_concurrency"] == 1024
    assert serving.limit_words(v["binding_limit"]) == "max_num_seqs"
