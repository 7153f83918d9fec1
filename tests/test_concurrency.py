"""`--concurrency auto`: the plan runs at the largest concurrency meeting the targets, and bills the fleet there.

One bill everywhere: `plan`'s `gpus_for_qps` / `monthly_cost_qps` at its default concurrency are the `gpus` /
`monthly_cost` `recommend` lists for the same model, GPU, layout, formats and engine.  Before auto, `plan`
billed 70B on 4 x H100 at 20 QPS at 16 sequences (48 GPUs, $132,451/month) while `recommend` found 12 GPUs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from inference_ledger.graph import concurrency, plan, resolve
from inference_ledger.cli import run
from inference_ledger.graph.recommend import recommend
from inference_ledger.graph.sweep import SweepSpec, build_sweep


def _cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        run(list(argv))
    out = capsys.readouterr()
    assert e.value.code == 0, out.err
    return out.out


def _plan(capsys, *argv):
    return json.loads(_cli(capsys, "plan", *argv, "--json"))


def _recommended(capsys, model, gpu, tp, *argv):
    d = json.loads(_cli(capsys, "recommend", "--model", model, "--gpu", gpu, "--tp", str(tp), "--pp", "1",
                        "--weight-dtype", "native", "--kv-dtype", "bf16", "--qps", "20", "--json", *argv))
    return d["plans"]


@pytest.mark.parametrize("model, gpu, tp, reason", [
    ("llama-3.1-70b", "h100-sxm", 4, "TPOT target"),   # dense: TPOT binds below the KV plateau
    ("mixtral-8x7b", "h100-sxm", 2, "KV cache"),       # MoE: the KV cache fills first
])
def test_default_plan_bills_what_recommend_bills(capsys, model, gpu, tp, reason):
    d = _plan(capsys, "--model", model, "--gpu", gpu, "--tp", str(tp), "--target-qps", "20")
    (r,) = _recommended(capsys, model, gpu, tp)
    assert (r["tp"], r["pp"], r["weight_dtype"], r["kv_dtype"]) == (tp, 1, d["weight_dtype"], d["kv_dtype"])
    assert (d["gpus_for_qps"], d["monthly_cost_qps"]) == (r["gpus"], r["monthly_cost"])
    assert d["concurrency"] == d["concurrency_used"] == r["concurrency"]
    assert d["concurrency_reason_words"] == reason
    # the bill is at most the one at the old default of 16 sequences (a larger batch, fewer replicas)
    at16 = _plan(capsys, "--model", model, "--gpu", gpu, "--tp", str(tp), "--target-qps", "20", "--concurrency", "16")
    assert d["concurrency_used"] > 16 and d["gpus_for_qps"] < at16["gpus_for_qps"]


def test_70b_on_4_h100_is_billed_at_181_sequences(capsys):
    """The KV-bound case by hand: the KV cache holds 305 sequences of 1,536 tokens; with the step priced from the
    measured kernel tables TPOT passes 50 ms between 194 and 195 (the closed-form inverse tpot_max_batch is 193 on
    this dense model), so the largest candidate under it, 181, runs and 3 replicas of 181 / (TTFT + 511 x TPOT)
    requests/s cover 20 QPS; the next candidate, 215, misses the target."""
    d = _plan(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4")
    assert d["max_concurrency"] == 305 and d["tpot_max_batch"] == 193 and d["concurrency_used"] == 181
    qps = 181 / (d["ttft_service_seconds"] + 511 * d["tpot_seconds"])
    assert d["qps_per_replica"] == pytest.approx(qps, rel=1e-12)
    assert d["replicas_for_qps"] == int(np.ceil(20 / qps)) == 3
    assert (d["gpus_for_qps"], d["monthly_cost_qps"]) == (12, pytest.approx(12 * 3.78 * 730))
    at194 = _plan(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--concurrency", "194")
    at195 = _plan(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--concurrency", "195")
    assert at194["tpot_ok"] is True and at195["tpot_ok"] is False
    at215 = _plan(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--concurrency", "215")
    assert at215["tpot_ok"] is False and at215["tpot_seconds"] > 0.05 >= d["tpot_seconds"]


def test_a_plan_that_does_not_fit_runs_at_1_and_recommend_lists_nothing(capsys):
    d = _plan(capsys, "--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--tp", "8")
    assert d["max_concurrency"] == 0 and d["verdict_words"] == "does not fit"
    assert (d["concurrency_used"], d["concurrency_reason_words"]) == (1, "no concurrency meets the targets: 1")
    found, _ = recommend(["llama-3.1-405b"], ["h100-sxm"], tp=[8], weight_dtype=["native"],
                         fixed={"target_qps": 20, "pp": 1})
    assert found == []


def test_explicit_16_keeps_todays_numbers(capsys):
    """--concurrency 16 is the plain evaluation at 16; values recorded from main before auto existed, then from the
    step priced from the measured kernel tables (48 GPUs, 12 replicas, $132,451 on the roofline)."""
    d = _plan(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--concurrency", "16")
    assert (d["concurrency"], d["concurrency_used"], d["concurrency_reason_words"]) == (16, 16, "requested")
    assert (d["gpus_for_qps"], d["replicas_for_qps"], d["monthly_cost_qps"]) == (44, 11, pytest.approx(121413.6))
    assert d["kv_bytes_per_gpu"] == 81_920 * 1536 * 16 and d["effective_concurrency"] == 16
    r = resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"tp": 4, "concurrency": 16})
    ref = plan.evaluate(r.inputs)
    assert all(d[k] == pytest.approx(float(ref[k]), rel=1e-12) for k in ("tpot_seconds", "ttft_seconds",
                                                                           "qps_per_replica", "gpus_for_qps"))


@pytest.mark.parametrize("numbers, reason", [
    ({"tp": 4}, "TPOT target"),
    ({"tp": 4, "batching": 2}, "TTFT target"),            # static: a TTFT waits for the whole batch's prompts
    ({"tp": 2, "tpot_target": 0.2}, "KV cache"),          # a loose TPOT target: the KV cache fills first
    ({"tp": 4, "max_num_seqs": 64}, "engine batch limit"),
    ({"tp": 4, "tpot_target": 0.001}, "no concurrency meets the targets: 1"),
])
def test_the_choice_is_the_largest_candidate_meeting_the_targets(numbers, reason):
    """Each candidate evaluated on its own (scalar plans): the choice is the largest that fits, runs within the
    engine's limit and meets both targets, and the words name the limit that stops the next one."""
    r = resolve.resolve("llama-3.1-70b", "h200", numbers=numbers)
    v = concurrency.evaluate(r.inputs)
    cap = max(min(v["max_concurrency"], v["max_running_sequences"]), 1)
    ok = []
    for c in sorted({cap, *(f for f in concurrency.FAMILY if f <= cap)}):
        p = plan.evaluate(r.inputs | {"concurrency": c})
        if p["kv_fits"] and c <= p["max_running_sequences"] and p["ttft_ok"] and p["tpot_ok"]:
            ok.append(c)
    assert v["concurrency_used"] == (max(ok) if ok else 1)
    assert v["concurrency_reason_words"] == reason
    if reason in ("TPOT target", "TTFT target"):
        nxt = min(f for f in (cap, *concurrency.FAMILY) if f > v["concurrency_used"])
        p = plan.evaluate(r.inputs | {"concurrency": nxt})
        assert p[{"TPOT target": "tpot_ok", "TTFT target": "ttft_ok"}[reason]] == 0
    if reason == "KV cache":
        assert v["concurrency_used"] == v["max_concurrency"]
    if reason == "engine batch limit":
        assert v["concurrency_used"] == v["max_running_sequences"] == 64


def test_candidate_family():
    fam = concurrency.FAMILY
    assert fam[-12:] == (16, 13, 11, 10, 8, 7, 6, 5, 4, 3, 2, 1)
    assert fam[0] == 2 ** 15 and list(fam) == sorted(set(fam), reverse=True)
    assert max(a / b for a, b in zip(fam[:-12], fam[1:-11])) < 1.22   # four steps per doubling (2^0.25 = 1.19), rounded


def test_sweep_and_plan_function_choose_the_same(capsys):
    spec = SweepSpec(model=["llama-3.1-70b", "mixtral-8x7b"], gpu=["h100-sxm"], tp=[4], context=[1536])
    (labels, inputs), = list(build_sweep(spec).blocks())
    import udfs.excel as xl
    for i, m in enumerate(labels["model"]):
        d = _plan(capsys, "--model", m, "--gpu", "h100-sxm", "--tp", "4")
        assert inputs["concurrency"][i] == d["concurrency_used"]
        assert xl.PLAN(m, "h100-sxm", "concurrency_used", 4) == [[d["concurrency_used"]]]
        assert xl.PLAN(m, "h100-sxm", "gpus_for_qps", 4, "auto") == [[d["gpus_for_qps"]]]


def test_cli_takes_auto_and_refuses_words(capsys):
    d = _plan(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--concurrency", "auto")
    assert d["concurrency_used"] == 181
    with pytest.raises(SystemExit) as e:
        run(["plan", "--concurrency", "lots"])
    assert e.value.code == 2 and "--concurrency" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------
# the workbook: the choice stays live (LibreOffice recalculates it from the Load sheet's candidates)
# ----------------------------------------------------------------------------------------


def _named(wb, name: str):
    (sheet, coord), = list(wb.defined_names[name].destinations)
    return wb[sheet][coord.replace("$", "")]


def _edited(path, tmp_path, tag, **cells):
    from openpyxl import load_workbook
    from inference_ledger.workbook.recalc import recalculate

    wb = load_workbook(path)
    for name, value in cells.items():
        _named(wb, name).value = value
    changed = tmp_path / f"{tag}.xlsx"
    wb.save(changed)
    return load_workbook(recalculate(changed, tmp_path / tag), data_only=True)


@pytest.fixture(scope="module")
def workbook_built(workbooks):
    return workbooks()


@pytest.mark.libreoffice
@pytest.mark.filterwarnings("ignore:.*extension is not supported:UserWarning")
@pytest.mark.parametrize("tag, cells, argv", [
    ("tpot", {"tpot_target": 0.03}, ("--tpot-target", "0.03")),          # a tighter TPOT: fewer sequences
    ("gpu", {"gpu_id": "h200", "input_tokens": 4096}, ("--gpu", "h200", "--input-tokens", "4096")),
    ("typed", {"concurrency_override": 16}, ("--concurrency", "16")),      # a number typed: used as given
])
def test_editing_plan_moves_the_chosen_concurrency_and_the_bill(workbook_built, soffice, tmp_path, capsys, tag,
                                                                 cells, argv):
    path, values = workbook_built
    assert (values["concurrency_used"], values["gpus_for_qps"]) == (181, 12)     # the default: TPOT-bound
    got = _edited(path, tmp_path, tag, **cells)
    options = {"--model": "llama-3.1-70b", "--gpu": "h100-sxm", "--tp": "4"} | dict(zip(argv[::2], argv[1::2]))
    want = _plan(capsys, *(x for kv in options.items() for x in kv))
    used, gpus = _named(got, "concurrency_used").value, _named(got, "gpus_for_qps").value
    assert (used, gpus) == (want["concurrency_used"], want["gpus_for_qps"])
    assert _named(got, "concurrency_reason").value == want["concurrency_reason"]
    assert _named(got, "monthly_cost_qps").value == pytest.approx(want["monthly_cost_qps"], rel=1e-9)
    assert used != 181 and gpus != 12
    if tag == "tpot":   # 30 ms: the TPOT target still binds, at fewer sequences and more replicas
        assert want["concurrency_reason_words"] == "TPOT target" and used < 181 and gpus > 12
    if tag == "typed":
        assert (used, gpus, want["concurrency_reason_words"]) == (16, 44, "requested")
