"""Coded quantities in one shape (inference_ledger.core.codes): words both ways, and one formula per code set."""

from __future__ import annotations

import pytest

from inference_ledger.formulas import engine_ledger, serving
from inference_ledger.graph import verdict
from inference_ledger.cli.plan import parse_quantity
from inference_ledger.core.codes import Codes
from inference_ledger.core.expr import Const, Sym
from inference_ledger.core.units import KV_RULE_SGLANG, KV_RULE_TRTLLM, KV_RULE_VLLM


def test_words_both_ways():
    c = Codes("colour", [(1, "red"), (Const(2, "TWO", "", "code"), "Green")])
    assert c.word(2.0) == "Green" and c.code("green") == 2 and c.code(" RED ") == 1
    with pytest.raises(ValueError, match=r"colour must be one of red, Green \(got 'blue'\)"):
        c.code("blue")
    with pytest.raises(ValueError, match="colour code must be one of 1, 2"):
        c.word(7)
    assert c.render(7) == "red"   # a formula and a number alike read an unknown code as the default's words


def test_render_is_one_if_chain_over_the_named_codes():
    c = Codes("colour", [(1, "red"), (Const(2, "TWO", "", "code"), "green"), (Const(3, "THREE", "", "code"), "blue")])
    assert c.render(Sym("x")).text == 'IF(x=TWO,"green",IF(x=THREE,"blue","red"))'


def test_the_kv_rule_words_come_from_its_codes_not_from_a_doc_string():
    assert [(int(k), engine_ledger.KV_RULE.word(k)) for k in (KV_RULE_VLLM, KV_RULE_SGLANG, KV_RULE_TRTLLM)] == [
        (1, "vLLM"), (2, "SGLang"), (3, "TensorRT-LLM")]
    assert parse_quantity("sglang", "code", "kv_budget_rule") == 2.0
    assert parse_quantity("TensorRT-LLM", "code", "kv_budget_rule") == 3.0
    assert parse_quantity("static", "code", "batching") == 2.0
    with pytest.raises(ValueError, match=r"is not one of vLLM \(1\), SGLang \(2\), TensorRT-LLM \(3\)"):
        parse_quantity("tgi", "code", "kv_budget_rule")


def test_each_code_set_reads_the_same_in_python_and_as_a_formula():
    for codes in (verdict.VERDICT, serving.LIMIT, serving.BATCHING, engine_ledger.KV_RULE):
        text = codes.render(Sym("c")).text
        for c, w in codes.members:
            assert codes.render(float(c)) == w
            assert f'"{w}"' in text   # every case's words in the one formula
    assert verdict.words_of(-1) == verdict.INVALID_WORDS and verdict.words_of(3) == "fits, meets targets"


def test_every_coded_quantity_is_registered_once_where_it_is_written():
    from inference_ledger.formulas import admission, serving_lines
    from inference_ledger.graph import plan

    assert plan.CODES == {"verdict": verdict.VERDICT, "binding_limit": serving.LIMIT, "batching": serving.BATCHING,
                          "kv_budget_rule": engine_ledger.KV_RULE, "kv_admission_policy": admission.ADMISSION,
                          "kernel_priced": serving_lines.KERNEL_PRICED, "kernel_tables": serving_lines.KERNEL_TABLES,
                          "moe_kernel_table": serving_lines.MOE_KERNEL_TABLE}
    assert all(q in plan.NAMES for q in plan.CODES)


def test_the_text_plan_and_json_read_each_code_as_its_words(capsys):
    from inference_ledger.cli import run

    with pytest.raises(SystemExit):
        run(["plan", "--engine", "trtllm"])
    out = capsys.readouterr().out
    # the words and the number (never "3 code"); the binding limit of the default plan is compute
    assert "fits, meets targets (3)" in out and "guaranteed no evict (1)" in out and "continuous (1)" in out
    assert " code " not in out
    with pytest.raises(SystemExit):
        run(["plan", "--engine", "trtllm", "--json"])
    import json
    doc = json.loads(capsys.readouterr().out)
    assert (doc["verdict_words"], doc["kv_admission_policy_words"], doc["kv_budget_rule_words"],
            doc["batching_words"]) == ("fits, meets targets", "guaranteed no evict", "TensorRT-LLM", "continuous")
    assert doc["binding_limit_words"] == serving.LIMIT.word(doc["binding_limit"])


def test_help_shows_a_yes_no_default_as_the_bare_number_it_takes(capsys):
    from inference_ledger.cli import run

    with pytest.raises(SystemExit):
        run(["plan", "--help"])
    flat = " ".join(capsys.readouterr().out.split())
    assert "Default: 1." in flat and " 1/0." not in flat and "1/0 without it" not in flat
