"""Leave-one-source-out validation and the plan's error bands (inference_ledger/validation/accuracy.py, bands.py,
band_lines.py).

After a change to the load rows or the step model, ``python tests/test_accuracy.py`` rewrites what is generated from
the study: inference_ledger/data/error_bands.csv and fitted_parameters.csv, docs/accuracy.md and the README's
headline line (then rebuild the templates: ``inference-ledger build -o templates/inference-ledger.xlsx`` and .xltx).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from inference_ledger.validation import accuracy, accuracy_report, load_fidelity
from inference_ledger.catalogs import bands, catalog
from inference_ledger.graph import plan, resolve
from inference_ledger.core.args import LedgerInputError
from inference_ledger.catalogs.load_measurements import MEASURED_LOAD_CSV, load_measured_load

ROOT = Path(__file__).resolve().parent.parent
BAND_KEYS = ("tokens_per_second_low", "tokens_per_second_high", "tpot_seconds_low", "tpot_seconds_high",
             "ttft_seconds_low", "ttft_seconds_high", "gpus_for_qps_low", "gpus_for_qps_high", "monthly_cost_qps_low",
             "monthly_cost_qps_high", "cost_per_million_output_tokens_low", "cost_per_million_output_tokens_high")


@pytest.fixture(scope="module")
def study(accuracy_study):
    return accuracy_study


def _percentile(pairs, q):
    """The q-th percentile of (value, source) pairs by hand, each source weighing the same: sort, give each value
    weight 1 / (its source's count), place it at the middle of its weight on the cumulative scale, interpolate
    linearly between neighbours, flat beyond the first and last."""
    count = {}
    for _, src in pairs:
        count[src] = count.get(src, 0) + 1
    items = sorted((v, 1 / count[src]) for v, src in pairs)
    total = sum(w for _, w in items)
    pos, acc = [], 0.0
    for _, w in items:
        pos.append((acc + w / 2) / total)
        acc += w
    x = q / 100
    if x <= pos[0]:
        return items[0][0]
    for k in range(1, len(items)):
        if x <= pos[k]:
            t = (x - pos[k - 1]) / (pos[k] - pos[k - 1])
            return items[k - 1][0] + t * (items[k][0] - items[k - 1][0])
    return items[-1][0]


def test_the_band_percentile_with_equal_weights_is_hazens():
    """One source, ten values: each weighs the same, so the percentile is numpy's 'hazen' (position (i - 1/2) / n)."""
    xs = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6, 5.0, 3.5, 8.0, 7.0]
    for q in (5, 10, 50, 90, 97):
        assert accuracy_report.weighted_percentile(xs, [1] * 10, q) == pytest.approx(
            float(np.percentile(xs, q, method="hazen")))
    # two sources, nine figures at 1 (weight 1/9 each) and one at 10 (weight 1): the last 1 sits at (1 - 1/18) / 2 =
    # 0.4722 of the cumulative weight, the 10 at 1.5 / 2 = 0.75, so the median is 1 + 9 x (0.5 - 0.4722) / 0.2778 =
    # 1.9 (unweighted it would be 1: the large source alone)
    assert accuracy_report.weighted_percentile([1.0] * 9 + [10.0], [1 / 9] * 9 + [1.0], 50) == pytest.approx(1.9)


# ---------------------------------------------------------------------------------------------------------------
# one segment's band by hand
# ---------------------------------------------------------------------------------------------------------------


def test_one_segments_band_recomputed_by_hand_from_its_held_out_ratios():
    """TensorRT-LLM (any GPU, dense or MoE), output tokens/s: every row of that segment read from the CSV's own cells,
    predicted one row at a time through the resolver (not the vectorised study), measured / predicted sorted, the
    10th and 90th percentiles interpolated by hand with each source weighing the same: the shipped band table holds
    those numbers."""
    assert not accuracy.PLAN_USES_FIT  # the plan runs its defaults, so its held-out prediction is the plain plan's
    with MEASURED_LOAD_CSV.open(encoding="utf-8", newline="") as fh:
        raw = {r["id"]: r for r in csv.DictReader(ln for ln in fh if not ln.startswith("#"))}
    ratios = []   # (measured / predicted, source)
    for row in load_measured_load():
        if not row.engine_id.startswith("trtllm"):
            continue
        cells = raw[row.id]
        if not cells["output_tok_s"]:
            continue
        measured = float(cells["output_tok_s"]) * (int(cells["gpus"]) if cells["output_tok_s_basis"] == "per_gpu" else 1)
        v = load_fidelity.row_values(row)
        # what the row's benchmark run measures (its N requests at its concurrency, at most the steady state)
        predicted = float(v["benchmark_tokens_per_second"]) * int(cells["gpus"]) / int(cells["tp"])
        ratios.append((measured / predicted, cells["source_group"]))
    assert len(ratios) >= bands.MIN_BAND_ROWS and len({s for _, s in ratios}) >= bands.MIN_BAND_SOURCES
    shipped = {(b.key, b.metric): b for b in bands.load_bands()}
    b = shipped[(("trtllm", "*", "*"), "output_tok_s")]
    assert b.n == len(ratios) and b.sources == len({s for _, s in ratios})
    assert b.low == pytest.approx(_percentile(ratios, 10), abs=6e-5)     # the file keeps 4 decimals
    assert b.high == pytest.approx(_percentile(ratios, 90), abs=6e-5)
    assert b.median == pytest.approx(_percentile(ratios, 50), abs=6e-5)


def test_the_shipped_band_table_is_fresh(study):
    """error_bands.csv was written from the load file as it is now (its fingerprint) and equals a fresh study's bands
    (after a change to the data or the model: `inference-ledger validate --write-bands`)."""
    text = bands.BANDS_CSV.read_text()
    assert f"sha256 {accuracy_report.data_fingerprint()}" in text, "stale: run python tests/test_accuracy.py"
    fresh = accuracy_report.bands(study.served)
    shipped = bands.load_bands()
    assert [(b.key, b.metric, b.n, b.sources) for b in shipped] == [(b.key, b.metric, b.n, b.sources) for b in fresh]
    for s, f in zip(shipped, fresh):
        assert (s.low, s.median, s.high) == pytest.approx((f.low, f.median, f.high), abs=6e-5), s


# ---------------------------------------------------------------------------------------------------------------
# leave one source out on a synthetic set, answer by hand
# ---------------------------------------------------------------------------------------------------------------


def _fake_evaluate(values, validate=True):
    """A plan whose figures are a bandwidth efficiency e: 1,000 e tokens/s per replica (its benchmark's too), TPOT
    10 ms / e (the benchmark's too: every request admitted runs), TTFT 0.1 s."""
    e = np.asarray(values["bw_efficiency"], dtype=float)
    return {"tokens_per_second": 1000.0 * e, "benchmark_tokens_per_second": 1000.0 * e, "tpot_seconds": 0.01 / e,
            "benchmark_tpot_seconds": 0.01 / e, "ttft_seconds": 0.1 + 0 * e}


def _synthetic_rows():
    """Four sources of two rows each (one GPU, TP 1); sources a, b and c were measured at e = 0.6, source d at 0.8."""
    base = next(r for r in load_measured_load() if r.gpus == r.tp == 1 and r.output_tok_s is not None)
    blank = {"source_key": "", "source_group": ""}
    rows = []
    for src, e in (("a.example", 0.6), ("b.example", 0.6), ("c.example", 0.6), ("d.example", 0.8)):
        for k in range(2):
            rows.append(dataclasses.replace(base, id=f"{src}-{k}", source=f"https://{src}/page{k}", basis="total",
                                            output_tok_s=1000.0 * e, tpot_ms=10.0 / e, itl_ms=None, ttft_ms=None, **blank))
    return rows


def test_leave_one_source_out_on_a_synthetic_set_by_hand(monkeypatch):
    """Fit e on a grid {0.5, 0.6, 0.7, 0.8}. Leaving out a, b or c, two of the three training sources say 0.6: the fit
    is 0.6 and the left-out source is predicted exactly. Leaving out d, all three say 0.6: d (0.8) is predicted at
    600 tokens/s against 800 (-25%) and TPOT 16.67 ms against 12.5 ms (+33.3%). Over all eight rows the median
    |error| of tokens/s is 0 (six of eight exact); fitted on every source, e = 0.6 from 8 rows of 4 sources."""
    monkeypatch.setattr(accuracy.plan, "evaluate", _fake_evaluate)
    p = accuracy.Parameter("bw_efficiency", "*", "*", (0.5, 0.6, 0.7, 0.8), "synthetic")
    st = accuracy.study(_synthetic_rows(), params=[p])
    for s in ("a.example", "b.example", "c.example"):
        assert [f.value for f in st.per_source_fit[s]] == [0.6]
    assert [f.value for f in st.per_source_fit["d.example"]] == [0.6]
    by = {(f.row, f.metric): f for f in st.left_out}
    for k in range(2):
        assert by[(f"a.example-{k}", "output_tok_s")].error == pytest.approx(0.0, abs=1e-12)
        assert by[(f"d.example-{k}", "output_tok_s")].error == pytest.approx(600 / 800 - 1)
        assert by[(f"d.example-{k}", "tpot_ms")].error == pytest.approx((10 / 0.6) / 12.5 - 1)
    g = {(x.breakdown, x.name, x.metric): x for x in accuracy_report.groups(st.left_out)}
    assert g[("all", "all", "output_tok_s")].median_abs_error == pytest.approx(0.0, abs=1e-12)
    assert g[("source", "d.example", "output_tok_s")].median_abs_error == pytest.approx(0.25)
    assert g[("source", "d.example", "tpot_ms")].median_abs_error == pytest.approx(1 / 3)
    (f,) = st.fitted
    assert (f.value, f.rows, f.fitted) == (0.6, 8, True) and len(f.sources) == 4


def test_a_parameter_seen_in_one_source_only_keeps_its_default(monkeypatch):
    """With only source d left in training, e is not fitted (one source): its default stays."""
    monkeypatch.setattr(accuracy.plan, "evaluate", _fake_evaluate)
    rows = [r for r in _synthetic_rows() if r.source.startswith(("https://d.", "https://a."))]
    p = accuracy.Parameter("bw_efficiency", "*", "*", (0.5, 0.6, 0.7, 0.8), "synthetic")
    st = accuracy.study(rows, params=[p])
    (fa,) = st.per_source_fit["a.example"]    # trained on d alone
    assert not fa.fitted and fa.value == fa.default


def test_a_source_is_the_rows_group_then_its_key_then_its_url():
    row = load_measured_load()[0]
    assert accuracy.source_of(row) == row.source_group
    r = dataclasses.replace(row, source_group="", source_key="doc-key")
    assert accuracy.source_of(r) == "doc-key"
    url = "https://github.com/NVIDIA/TensorRT-LLM/blob/v0.9.0/docs/x.md (table)"
    assert accuracy.source_of(dataclasses.replace(r, source_key="", source=url)) == "github.com/NVIDIA/TensorRT-LLM"
    url = "https://www.example.org/post/a-b (section 2)"
    assert accuracy.source_of(dataclasses.replace(r, source_key="", source=url)) == "example.org"


# ---------------------------------------------------------------------------------------------------------------
# segments and their parents
# ---------------------------------------------------------------------------------------------------------------


def _fig(engine, vendor, arch, ratio, source="s"):
    return accuracy.Figure("r", source, "output_tok_s", engine, vendor, arch, "static", float(ratio), 1.0)


def test_a_thin_segment_falls_back_to_all_rows():
    """20 TensorRT-LLM figures from two sources (odd ratios from a, even from b) and 5 SGLang ones from a: the SGLang
    segment is thinner than MIN_BAND_ROWS, so an SGLang plan takes the band over all 25; a TensorRT-LLM one keeps its
    own: 1..20 with both sources weighing the same is the Hazen percentile, position (i - 1/2) / 20: the 10th at
    i = 2.5, the 90th at i = 18.5."""
    assert bands.MIN_BAND_ROWS == 12 and bands.MIN_BAND_SOURCES == 2
    assert bands.SEGMENT_CHAIN == (("engine_family",), ())
    figs = [_fig("trtllm", "NVIDIA", "dense", k, "a" if k % 2 else "b") for k in range(1, 21)] + \
           [_fig("sglang", "NVIDIA", "moe", k, "a") for k in range(21, 26)]
    table = accuracy_report.bands(figs)
    assert {b.key for b in table} == {("trtllm", "*", "*"), ("*", "*", "*")}
    thin = bands.pick(table, "output_tok_s", {"engine_family": "sglang", "gpu_vendor": "NVIDIA", "architecture": "moe"})
    assert thin.key == ("*", "*", "*") and thin.n == 25 and thin.sources == 2
    pairs = [(f.ratio, f.source) for f in figs]
    assert (thin.low, thin.high) == pytest.approx((_percentile(pairs, 10), _percentile(pairs, 90)))
    own = bands.pick(table, "output_tok_s", {"engine_family": "trtllm", "gpu_vendor": "AMD", "architecture": "moe"})
    assert own.key == ("trtllm", "*", "*") and (own.low, own.high) == pytest.approx((2.5, 18.5))
    # an engine with no figures at all: the all-rows band (always listed, whatever its count)
    none = bands.pick(table, "output_tok_s", {"engine_family": "vllm", "gpu_vendor": "AMD", "architecture": "dense"})
    assert none.key == ("*", "*", "*") and none.n == 25


def test_a_segment_seen_by_one_source_only_takes_the_all_rows_band():
    """30 vLLM figures, all from one source, and 12 TensorRT-LLM ones from two others: the vLLM segment is large but
    says nothing about a second source (one harness, one bias), so it takes the all-rows band."""
    figs = [_fig("vllm", "NVIDIA", "dense", 2.0, "one") for _ in range(30)] + \
           [_fig("trtllm", "NVIDIA", "dense", 1.0, "x" if k % 2 else "y") for k in range(12)]
    table = accuracy_report.bands(figs)
    assert ("vllm", "*", "*") not in {b.key for b in table}
    b = bands.pick(table, "output_tok_s", {"engine_family": "vllm", "gpu_vendor": "NVIDIA", "architecture": "dense"})
    assert b.key == ("*", "*", "*") and b.sources == 3
    # each source weighs a third: 'one' at 2.0 holds the top third, so the median is 1.0 and the 90th percentile 2.0
    assert (b.median, b.high) == pytest.approx((1.0, 2.0))


def test_coverage_draws_each_sources_band_from_the_other_sources():
    """Source x (ratios 1..12, one segment) and source y (one figure at 100): y's band comes from x alone
    (2.1 to 10.9), so y is outside; x's band comes from y's single figure (the all-rows band: 100 to 100)."""
    figs = [_fig("vllm", "NVIDIA", "dense", k, "x") for k in range(1, 13)] + [_fig("vllm", "NVIDIA", "dense", 100, "y")]
    (c,) = accuracy_report.coverage(figs)
    assert c.n == 13 and c.inside == 0.0
    assert c.median_width == pytest.approx(1.0)   # 12 of 13 bands are 100/100


def test_a_segmentation_is_held_out_like_the_shipped_one():
    """Sources a and b: 12 vLLM figures at 1.0 each; c: 12 SGLang ones at 3.0.  By engine family with 2 sources a
    segment: a's vLLM segment without a is b's alone (one source), so a takes all rows without a, b and c weighing
    half each: 1.0 to 3.0 (inside, 3 wide); b likewise; c's SGLang has no other source, all rows without c are 1.0 to
    1.0 (outside).  With 1 source a segment, a's and b's bands are each other's, 1.0 to 1.0.  The shipped scheme
    through the same function is coverage() as the page's band table reads it."""
    figs = ([_fig("vllm", "NVIDIA", "dense", 1.0, s) for s in "ab" for _ in range(12)]
            + [_fig("sglang", "NVIDIA", "dense", 3.0, "c") for _ in range(12)])
    by_family = (("engine_family",), ())
    (two,) = accuracy_report.coverage(figs, chain=by_family, min_sources=2)
    assert (two.n, two.inside, two.median_width) == (36, pytest.approx(2 / 3), pytest.approx(3.0))
    (one,) = accuracy_report.coverage(figs, chain=by_family, min_sources=1)
    assert (one.inside, one.median_width) == (pytest.approx(2 / 3), pytest.approx(1.0))
    words, chain, n = accuracy_report.SEGMENTATIONS[0]
    assert "shipped" in words and tuple(chain) == bands.SEGMENT_CHAIN and n == bands.MIN_BAND_SOURCES
    assert accuracy_report.coverage(figs, chain=chain, min_sources=n) == accuracy_report.coverage(figs)


# ---------------------------------------------------------------------------------------------------------------
# every plan has a band
# ---------------------------------------------------------------------------------------------------------------


def test_every_catalog_default_plan_has_the_band_keys():
    """Each catalog model on the default GPU and each GPU with the default model: every band key, finite, low <= high,
    and the figures scaled by the band multipliers of the plan's own segment."""
    choices = [(m.id, None) for m in catalog.load_models()] + [(None, g.id) for g in catalog.load_gpus()]
    seen = 0
    for model, gpu in choices:
        try:
            r = resolve.resolve(model, gpu)
        except LedgerInputError:
            continue                       # a choice the resolver refuses has no plan at all
        v = plan.evaluate(r.inputs)
        seen += 1
        for k in BAND_KEYS:
            assert np.isfinite(float(v[k])), (model, gpu, k)
        for lo, hi in zip(BAND_KEYS[::2], BAND_KEYS[1::2]):
            assert float(v[lo]) <= float(v[hi]), (model, gpu, lo)
        want = bands.band_inputs(r.inputs["num_experts"], gpu, r.engine)
        assert v["tokens_per_second_low"] == pytest.approx(v["tokens_per_second"] * want["band_low_tokens_per_second"])
        assert v["tpot_seconds_high"] == pytest.approx(v["tpot_seconds"] * want["band_high_tpot"])
    assert seen >= len(choices) * 0.8


def test_band_lines_by_hand():
    """Llama-3.1-70B on 4 H100 at the defaults: GPUs for 20 QPS at the band's high throughput =
    ceil(20 / (QPS per replica x high)) x 4, and its monthly bill = GPUs x price x 730 h."""
    v = plan.evaluate(resolve.resolve("llama-3.1-70b", "h100-sxm").inputs)
    hi = v["band_high_tokens_per_second"]
    gpus = max(math.ceil(20 / (v["qps_per_replica"] * hi)), 1) * 4
    assert v["gpus_for_qps_low"] == gpus
    assert v["monthly_cost_qps_low"] == pytest.approx(gpus * v["price_per_gpu_hour"] * 730)
    assert v["cost_per_million_output_tokens_high"] == pytest.approx(
        v["price_per_gpu_hour"] * 4 / 3600 / (v["tokens_per_second"] * v["band_low_tokens_per_second"]) * 1e6)


def test_segments_pick_their_band_rows():
    """A MoE model on an AMD GPU and a dense one on NVIDIA read different rows; the default plan reads the default
    engine's NVIDIA dense segment (or its parent)."""
    moe_amd = bands.band_rows(8, "mi300x", "vllm")["output_tok_s"]
    dense_nv = bands.band_rows(0, "h100-sxm", "vllm")["output_tok_s"]
    assert moe_amd.gpu_vendor in ("AMD", "*") and dense_nv.gpu_vendor in ("NVIDIA", "*")
    assert plan.INPUT_BY_NAME["band_low_tokens_per_second"].default == \
        bands.band_inputs(0, "h100-sxm", "vllm")["band_low_tokens_per_second"]


# ---------------------------------------------------------------------------------------------------------------
# the surfaces: JSON, =PLAN, the generated page and README line
# ---------------------------------------------------------------------------------------------------------------


def test_plan_json_and_excel_plan_carry_the_bands(capsys):
    from inference_ledger.cli import run
    from udfs import excel
    with pytest.raises(SystemExit) as e:
        run(["plan", "--model", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--json"])
    assert e.value.code == 0
    d = json.loads(capsys.readouterr().out)
    for k in BAND_KEYS:
        assert k in d, k
    got = excel.plan_value("llama-3.1-8b", "h200", "tokens_per_second_high", tp=1)
    assert got == pytest.approx(d["tokens_per_second_high"])


def test_accuracy_page_is_generated_from_the_study(study):
    from inference_ledger.cli.validate import accuracy_page
    page = (ROOT / "docs" / "accuracy.md").read_text()
    assert page == accuracy_page(study), \
        "docs/accuracy.md is stale: run python tests/test_accuracy.py"


def test_readme_headline_line_is_generated(study):
    from inference_ledger.cli.validate import accuracy_line
    readme = (ROOT / "README.md").read_text()
    section = readme.split("<!-- accuracy-headline -->", 1)[1].split("<!-- /accuracy-headline -->", 1)[0]
    assert section.strip() == accuracy_line(study), "README headline is stale: run python tests/test_accuracy.py"
    assert "docs/accuracy.md" in section


def test_headline_errors_are_held_out(study):
    """The headline is the plan's held-out figures; in-sample only appears labelled."""
    from inference_ledger.cli.validate import accuracy_tables
    h = accuracy_report.headline(study)
    g = {(x.breakdown, x.name, x.metric): x for x in accuracy_report.groups(study.served)}
    assert h["output_tok_s"] == g[("all", "all", "output_tok_s")].median_abs_error
    titles = [t for t, _ in accuracy_tables(study)]
    assert titles[0].startswith("leave one source out") and "in-sample" in titles[-1]


def test_the_vectorised_rows_equal_the_plan_row_by_row(study):
    """The study and `validate`'s load table (load_fidelity.compare) evaluate the rows as numpy arrays; each figure
    equals the plan run on its row alone (load_fidelity.row_values: one resolve and one evaluate per row)."""
    one_by_one = {}
    for row in load_measured_load():
        predicted = accuracy.predicted_metrics(load_fidelity.row_values(row), row.gpus / row.tp)
        for metric, measured in accuracy.measured_metrics(row).items():
            if measured is not None:
                one_by_one[(row.id, metric)] = float(predicted[metric])
    for got in ({(f.row, f.metric): f.predicted for f in study.defaults},
                {(c.row, c.metric): c.predicted for c in load_fidelity.compare()}):
        assert got.keys() == one_by_one.keys()
        for k, v in one_by_one.items():
            assert got[k] == pytest.approx(v, rel=1e-12), k


def test_an_applied_fitted_parameter_reaches_plans_of_its_scope_only(tmp_path, monkeypatch):
    """A fitted-parameters row marked applied (NVIDIA weight streaming at 0.5) is what a resolved NVIDIA plan runs;
    an AMD plan keeps the default, an explicit number still wins, and a fit resolves without it (unfitted)."""
    path = tmp_path / "fitted.csv"
    path.write_text(",".join(bands.FITTED_HEADER) + "\n"
                    "bw_efficiency,gpu_vendor,NVIDIA,0.5,0.8,1,1,10,a|b,0.1\n"
                    "step_overhead_seconds,engine_family,sglang,0.004,0.0002,1,0,6,a|b,0.1\n")
    monkeypatch.setattr(bands, "FITTED_CSV", path)
    monkeypatch.setattr(bands, "_FITTED", [])
    default = plan.INPUT_BY_NAME["bw_efficiency"].default
    assert resolve.resolve("llama-3.1-8b", "h100-sxm", numbers={"tp": 1}).inputs["bw_efficiency"] == 0.5
    assert resolve.resolve("llama-3.1-8b", "mi300x", numbers={"tp": 1}).inputs["bw_efficiency"] == default
    explicit = {"tp": 1, "bw_efficiency": 0.7}
    assert resolve.resolve("llama-3.1-8b", "h100-sxm", numbers=explicit).inputs["bw_efficiency"] == 0.7
    # applied 0: recorded, not used
    sglang = resolve.resolve("llama-3.1-8b", "h100-sxm", engine="sglang", numbers={"tp": 1}).inputs
    assert sglang["step_overhead_seconds"] == plan.INPUT_BY_NAME["step_overhead_seconds"].default
    with bands.unfitted():
        assert resolve.resolve("llama-3.1-8b", "h100-sxm", numbers={"tp": 1}).inputs["bw_efficiency"] == default


def test_the_shipped_fit_is_recorded_with_what_it_was_fitted_on(study):
    """fitted_parameters.csv is the fit of a fresh study (values, scopes, rows, sources) on the load file as it is."""
    text = bands.FITTED_CSV.read_text()
    assert f"sha256 {accuracy_report.data_fingerprint()}" in text, "stale: run python tests/test_accuracy.py"
    rows = bands.load_fitted()
    assert [(r.name, r.by, r.group, r.fitted, r.rows, r.sources) for r in rows] == \
        [(f.parameter.name, f.parameter.by, f.parameter.group, f.fitted, f.rows, f.sources) for f in study.fitted]
    for r, f in zip(rows, study.fitted):
        assert r.value == pytest.approx(f.value, rel=1e-5)
        assert r.applied == (f.fitted and accuracy.PLAN_USES_FIT)
        assert not r.fitted or len(r.sources) >= accuracy.MIN_FIT_SOURCES


def update() -> None:
    """Rewrite the bands, the recorded fit, the accuracy page and the README headline line from a fresh study."""
    import re

    from inference_ledger.cli.validate import accuracy_line, accuracy_page
    st = accuracy.study()
    print("wrote", accuracy_report.write_bands(st))
    print("wrote", accuracy_report.write_fitted(st))
    (ROOT / "docs" / "accuracy.md").write_text(accuracy_page(st))
    readme = ROOT / "README.md"
    text = re.sub(r"(<!-- accuracy-headline -->\n).*?(\n<!-- /accuracy-headline -->)",
                  lambda m: m.group(1) + accuracy_line(st) + m.group(2), readme.read_text(), flags=re.S)
    readme.write_text(text)
    print("wrote docs/accuracy.md and the README headline line")


if __name__ == "__main__":
    update()


def test_a_stated_memory_fraction_moves_the_kv_budget_as_the_sources_logs_do():
    """engine_args reaches the plan: dennislee22's two one-GPU Qwen2-7B runs differ only in
    --gpu-memory-utilization (0.25 and 0.5); their startup logs print 'Available KV cache memory: 5.01 GiB' and
    '24.83 GiB' (log/vllm-7B-1gpuA10080GB-0.25GRAM.log, -0.5GRAM.log), 19.82 GiB apart: a quarter of the A100's
    79.25 GiB.  Without the column both rows would resolve to the engine's 0.9 and the same budget."""
    rows = {r.id: r for r in load_measured_load()}
    low, high = (rows[f"dennislee-a100-80gb-qwen2-7b-bf16-vllm-t{t}-n10-1024-1024"] for t in (4, 5))
    assert low.engine_settings["gpu_memory_utilization"] == 0.25 and high.engine_settings["gpu_memory_utilization"] == 0.5
    budget = {r.id: plan.evaluate(accuracy.row_inputs(r))["kv_cache_budget_bytes_per_gpu"] / 2**30 for r in (low, high)}
    assert budget[high.id] - budget[low.id] == pytest.approx(24.83 - 5.01, abs=0.1)
    same = [dataclasses.replace(r, engine_args="") for r in (low, high)]
    assert plan.evaluate(accuracy.row_inputs(same[0]))["kv_cache_budget_bytes_per_gpu"] == \
        plan.evaluate(accuracy.row_inputs(same[1]))["kv_cache_budget_bytes_per_gpu"]


def test_a_rows_attention_dp_splits_its_gpus_into_ranks():
    """The TensorRT-LLM perf overview runs its MoE models with 'enable_attention_dp: true' on TP 8: eight attention
    ranks of one GPU each, the experts over all eight.  The row keeps its 8 GPUs (one replica) and the plan gets
    tp 1 x dp_attention 8; without the setting it would be one TP-8 attention group."""
    rows = {r.id: r for r in load_measured_load()}
    r = rows["trtllm10-h200-qwen3-235b-a22b-fp8-tp8-1000-1000"]
    assert (r.tp, r.gpus, r.engine_settings) == (8, 8, {"dp_attention": 8})
    v = plan.evaluate(accuracy.row_inputs(r))
    assert (v["tp"], v["dp_attention"], v["gpus_per_replica"]) == (1, 8, 8)
    tp8 = plan.evaluate(accuracy.row_inputs(dataclasses.replace(r, engine_args="")))
    assert (tp8["tp"], tp8["dp_attention"], tp8["gpus_per_replica"]) == (8, 1, 8)
