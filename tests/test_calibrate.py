"""`calibrate` and `--profile`: fitted on real measurements, checked on measurements left out of the fit.

The expected numbers are the measurements themselves (the NIM 1.8.0 sweep of Llama-3.3-70B FP8 on 2 x H100 and
two vLLM start-up logs of Llama-3.1-8B on an RTX 3090; tests/fixtures/bench/SOURCES.md): each left-out file is
predicted by `plan --json --profile` from a profile fitted without it.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from renders import opened  # noqa: E402
from test_cli_rules import assert_one_line, cli  # noqa: E402

from inference_ledger.io import benchfiles
from inference_ledger.validation import calibrate as cal, calibrate_fit, calibrate_profile  # noqa: E402

BENCH = Path(__file__).resolve().parent / "fixtures" / "bench"
SWEEP = {c: BENCH / "sweep-nim-llama-3.3-70b-h100x2" / f"c{c}" / "profile_export_aiperf.json"
         for c in (5, 25, 50, 100, 150, 200, 250)}
#: NIM's optimized FP8 profiles run TensorRT-LLM (whole-prompt prefills, no chunked context by default)
NIM = ["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "2", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
       "--engine", "trtllm"]
LOGS = BENCH / "logs"
LOG20K, LOG29K = LOGS / "vllm-0.6.4-llama-3.1-8b-rtx3090-len20000.log", LOGS / "vllm-0.6.4-llama-3.1-8b-rtx3090-len29000.log"
RTX3090 = ["--model", "llama-3.1-8b", "--gpu-memory", "23.58GiB", "--tp", "1", "--engine", "vllm-v0"]


def _profile(tmp_path: Path, files, argv, name="p.csv") -> Path:
    out = tmp_path / name
    code, so, err = cli("calibrate", *map(str, files), *argv, "-o", str(out))
    assert code == 0, err
    return out


def _plan(*argv) -> dict:
    code, out, err = cli("plan", "--json", *map(str, argv))
    assert code == 0, err
    return json.loads(out)


# ----------------------------------------------------------------------------------------
# done when: KV tokens of a left-out log within 1%
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fit_on, left_out, max_model_len, measured", [
    (LOG20K, LOG29K, 29000, 23648),     # the log's "maximum number of tokens that can be stored in KV cache (23648)"
    (LOG29K, LOG20K, 20000, 1952 * 16),  # "# GPU blocks: 1952" x block size 16
])
def test_kv_tokens_of_a_left_out_log_within_one_percent(tmp_path, fit_on, left_out, max_model_len, measured):
    p = _profile(tmp_path, [fit_on], RTX3090)
    text = p.read_text()
    assert "cuda_context_bytes," in text and "# not fitted: nccl_bytes (the data does not move it)" in text
    # vLLM V0 without chunked prefill profiles max_num_batched_tokens = max_model_len (engines.csv vllm-v0)
    got = _plan(*RTX3090, "--max-num-batched-tokens", max_model_len, "--profile", p)
    assert abs(got["kv_capacity_tokens"] / measured - 1) < 0.01, got["kv_capacity_tokens"]
    assert got["calibration"]["note"] == "calibrated from your measurements"
    assert got["calibration"]["files"] == [str(fit_on)]


def test_one_log_is_thin_data_and_says_so(tmp_path):
    code, out, err = cli("calibrate", str(LOG20K), *RTX3090, "-o", str(tmp_path / "p.csv"))
    assert code == 0, err
    assert "Start-up logs: 1 measured point, 1 parameter fitted." in out   # a count of one in the singular
    assert "thin data: 1 point for 1 parameter" in out
    assert "fitted cuda_context_bytes" in out and "left nccl_bytes at its default: the data does not move it" in out


# ----------------------------------------------------------------------------------------
# done when: a concurrency sweep past the KV cache's capacity, each concurrency left out in turn
# ----------------------------------------------------------------------------------------

def test_sweep_leave_one_concurrency_out(tmp_path):
    errs = {}
    dep = cal.Deployment(model="llama-3.1-70b", gpu="h100-sxm", weight_dtype="fp8", kv_dtype="fp8", engine="trtllm",
                         numbers={"tp": 2})
    for c, path in SWEEP.items():
        rest = [f for k, f in SWEEP.items() if k != c]
        fit = cal.calibrate(benchfiles.read_all(rest), dep, leave_one_out=False)
        prof = tmp_path / f"without-c{c}.csv"
        prof.write_text(calibrate_profile.profile_csv(fit))
        got = _plan(*NIM, "--input-tokens", 5000, "--output-tokens", 500, "--concurrency", c, "--profile", prof)
        m = benchfiles.read(path)[0]
        errs[c] = (got["tokens_per_second"] / m.output_tokens_per_second - 1, got["tpot_seconds"] / m.tpot_seconds - 1)
    tok = [abs(e[0]) for e in errs.values()]
    tpot = [abs(e[1]) for e in errs.values()]
    assert statistics.median(tok) < 0.05 and statistics.median(tpot) < 0.05, errs
    # every concurrency within 15%, the lowest (5, an extrapolation below every other run) too: measured TPOT is a
    # straight line, ~16 ms + 0.84 ms per sequence in flight, TRT-LLM's whole-prompt prefills stalling the decode
    # steps, which the step model prices (TPOT ~ step(B) + (B - 1) prefill(S) / (T - 1))
    assert max(tok) < 0.15 and max(tpot) < 0.15, errs
    # the plateau is the KV cache: the profile's budget holds ~87 sequences of 5500 tokens (throughput 920 tokens/s
    # at 93 ms TPOT = 920 x (0.6 + 499 x 0.093) / 500 ~ 86 in flight)
    full = _plan(*NIM, "--input-tokens", 5000, "--output-tokens", 500, "--concurrency", 250,
                 "--profile", tmp_path / "without-c5.csv")
    assert 75 <= full["effective_concurrency"] <= 100 and full["binding_limit"] == 1


def test_calibrate_reports_fit_defaults_residuals_outliers_and_leave_one_out(tmp_path):
    out_csv = tmp_path / "profile.csv"
    code, out, err = cli("calibrate", *map(str, SWEEP.values()), *NIM, "-o", str(out_csv))
    assert code == 0, err
    assert "model meta/llama-3.3-70b-instruct is not in the catalog: taken to be llama-3.1-70b" in out
    assert "Benchmark runs: 21 measured points" in out and "thin data" not in out
    fitted = [ln.split("fitted ", 1)[1].split(" = ")[0] for ln in out.splitlines() if ln.startswith("  fitted ")]
    assert "gpu_memory_utilization" in fitted and len(fitted) >= 3          # the plateau pins the KV budget
    left = [ln for ln in out.splitlines() if ln.startswith("  left ")]
    assert left and all(("the data does not move it" in ln or "the data cannot tell it apart from" in ln) for ln in left)
    lines = {Path(ln.split(":")[0].strip()).parent.name: ln for ln in out.splitlines() if "profile_export_aiperf" in ln}
    assert set(lines) == {f"c{c}" for c in SWEEP}
    assert all("left out:" in ln for ln in lines.values())
    # the benchmark's clients arrive in lockstep groups, so c5's TTFT is the group's prefill (it was 29% low when
    # priced as one lone prompt, and flagged): every concurrency's TTFT is now within 20% left out; the flag still
    # marks a point beyond 3 median absolute deviations of the others (c50's +18% TTFT among errors of a few %)
    assert "OUTLIER" not in lines["c5"] and "OUTLIER" not in lines["c150"]
    assert any("OUTLIER" in ln for ln in lines.values())
    text = out_csv.read_text()
    assert text.startswith("# Calibration profile")
    assert "# date: " in text and text.count("# source: ") == 7 and text.count("# measured: ") == 7
    assert "# deployment: model=llama-3.1-70b gpu=h100-sxm tp=2 pp=1 ep=1 weight_dtype=fp8 kv_dtype=fp8" in text
    prof = calibrate_profile.read_profile(out_csv)
    assert set(prof.values) >= {"gpu_memory_utilization", *fitted}
    assert all("points of 7 benchmark files" in row for row in text.splitlines()
               if row.startswith("gpu_memory_utilization,"))


def test_the_mad_rule():
    assert calibrate_fit._mad_outliers([0.01, -0.01, 0.02, 0.0, 0.5]) == [False, False, False, False, True]
    assert calibrate_fit._mad_outliers([0.1, 0.1]) == [False, False]
    # beyond 3 MADs of a tight spread but within benchmark noise (5%): not an outlier
    assert calibrate_fit._mad_outliers([0.001, 0.002, 0.003, 0.002, 0.03]) == [False] * 5


# ----------------------------------------------------------------------------------------
# what does not belong together: one line, exit 2
# ----------------------------------------------------------------------------------------

TRT = BENCH / "trtllm" / "deepseek-r1-fp4-tp4-ep4.json"
VLLM8B = BENCH / "vllm" / "llama-3.1-8b-sharegpt-1000.json"


@pytest.mark.parametrize("files, argv, needle", [
    ([TRT], ["--model", "llama-3.1-70b", "--gpu", "h100-sxm"],
     "measured deepseek-ai/DeepSeek-R1 (deepseek-r1, num_layers 61), not llama-3.1-70b (num_layers 80)"),
    ([TRT], ["--model", "deepseek-r1", "--gpu", "b200", "--tp", "2"], "ran TP 4, the deployment has TP 2"),
    ([VLLM8B, TRT], ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"], "mixed models:"),
    ([LOG20K], ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm-v0"],
     "ran on a GPU with 23.58 GiB; h100-sxm has 79.19 GiB"),
    ([LOGS / "vllm-v1-gpt-oss-120b-h100-no-kv-memory.log"], ["--model", "gpt-oss-120b", "--gpu", "h100-sxm"],
     "field 'kv_cache_bytes': -2.14 GiB left for the KV cache"),
    ([SWEEP[5]], NIM + ["--concurrency", "8"], "'--concurrency': each file states its own workload"),
    ([SWEEP[5]], ["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "3"], "'--tp'"),
    # neither the file nor the options say the TP: the plan's default (4) is not what was measured
    ([VLLM8B], ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"],
     "no file says the tensor-parallel degree it ran at: give --tp"),
])
def test_refusals_are_one_line(tmp_path, files, argv, needle):
    out = tmp_path / "p.csv"
    code, _, err = cli("calibrate", *map(str, files), *argv, "-o", str(out))
    assert code == 2
    assert_one_line(err, needle)
    assert not out.exists()


def test_same_shapes_is_accepted_and_named(tmp_path):
    code, out, err = cli("calibrate", str(TRT), "--model", "deepseek-v3", "--gpu", "b200", "--tp", "4", "--ep", "4",
                         "--weight-dtype", "nvfp4", "--kv-dtype", "fp8", "-o", str(tmp_path / "p.csv"))
    assert code == 0, err
    assert "model deepseek-ai/DeepSeek-R1 (deepseek-r1) has the shapes of deepseek-v3: accepted" in out


def test_profile_refusals(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,value,default,unit,fitted_on\nbw_efficiency,1.7,0.8,fraction,x\n")
    code, _, err = cli("plan", "--profile", str(bad))
    assert code == 2
    assert_one_line(err, "bad.csv, field 'row 1 (bw_efficiency), column 'value''")
    other = tmp_path / "other.csv"
    other.write_text("label,model\nx,llama\n")
    code, _, err = cli("plan", "--profile", str(other))
    assert code == 2
    assert_one_line(err, "other.csv, field 'header': not a calibration profile")


def test_options_given_win_over_the_profile_and_every_command_says_calibrated(tmp_path):
    p = _profile(tmp_path, SWEEP.values(), NIM)
    fitted = calibrate_profile.read_profile(p).values
    a = _plan(*NIM, "--profile", p)
    assert a["gpu_memory_utilization"] == pytest.approx(fitted["gpu_memory_utilization"])
    b = _plan(*NIM, "--profile", p, "--gpu-memory-utilization", "0.5")
    assert b["gpu_memory_utilization"] == 0.5
    code, out, err = cli("plan", *NIM, "--profile", str(p))
    assert code == 0 and f"calibrated from your measurements: {p}" in out
    code, out, err = cli("sweep", "-m", "llama-3.1-70b", "-g", "h100-sxm", "--tp", "2", "--context", "5500",
                         "--concurrency", "50", "-o", str(tmp_path / "s.csv"), "--profile", str(p))
    assert code == 0 and "every row calibrated from your measurements" in out, err
    code, out, err = cli("recommend", "-m", "llama-3.1-70b", "--qps", "1", "-g", "h100-sxm", "--json",
                         "--profile", str(p))
    assert code == 0, err
    assert json.loads(out)["calibration"]["files"] == [str(f) for f in SWEEP.values()]


def test_the_calibration_sheet_shows_measured_catalog_and_calibrated(tmp_path, monkeypatch):
    """The Calibration sheet of a calibrated build (the book is that sheet alone: it computes its figures itself)."""
    from inference_ledger.workbook import build

    monkeypatch.setattr(build, "SHEET_BUILDERS", [build.add_calibration_sheet])
    p = _profile(tmp_path, SWEEP.values(), NIM)
    xlsx = tmp_path / "plan.xlsx"
    code, out, err = cli("build", "-o", str(xlsx), *NIM, "--profile", str(p))
    assert code == 0 and "calibrated from your measurements" in out, err
    ws = opened(xlsx, sheets=["Calibration"])["Calibration"]
    rows = [[c for c in r] for r in ws.iter_rows(values_only=True)]
    head = next(i for i, r in enumerate(rows) if r[0] == "File")
    cols = rows[head]
    by_file = {r[0]: dict(zip(cols, r)) for r in rows[head + 1:] if r[0]}
    row = by_file["c100/profile_export_aiperf.json"]
    assert row["Concurrency"] == 100 and row["Output tokens/s measured"] == 917.26
    assert row["TPOT (ms) measured"] == pytest.approx(92.91)
    # the sheet's calibrated and catalog predictions are what `plan` says at that workload with and without the profile
    with_p = _plan(*NIM, "--input-tokens", 5000, "--output-tokens", 500, "--concurrency", 100, "--profile", p)
    without = _plan(*NIM, "--input-tokens", 5000, "--output-tokens", 500, "--concurrency", 100)
    assert row["Output tokens/s calibrated"] == pytest.approx(with_p["tokens_per_second"])
    assert row["Output tokens/s catalog"] == pytest.approx(without["tokens_per_second"])
    assert row["TPOT (ms) calibrated"] == pytest.approx(with_p["tpot_seconds"] * 1e3)


def test_excel_plan_takes_the_profile_as_a_range(tmp_path):
    from udfs import excel

    p = _profile(tmp_path, SWEEP.values(), NIM)
    fitted = calibrate_profile.read_profile(p).values
    rows = [["name", "value"]] + [[k, v] for k, v in fitted.items()] + [[None, None]]   # as the sheet's range reads
    args = ("llama-3.1-70b", "h100-sxm", [["tokens_per_second", "tpot_seconds"]], 2, 100, 5000, 500, "fp8", "fp8",
            "trtllm", None, None, None, None)
    got = excel.PLAN(*args, rows)[0]
    want = _plan(*NIM, "--input-tokens", 5000, "--output-tokens", 500, "--concurrency", 100, "--profile", p)
    assert got == pytest.approx([want["tokens_per_second"], want["tpot_seconds"]])
    assert excel.PLAN(*args, None)[0] != pytest.approx(got)                       # blank: the catalog's plan
    bad = excel.PLAN(*args, [["bw_efficiency", 1.7]])[0][0]
    assert "profile row 1 (bw_efficiency), column 'value'" in str(bad)


def test_a_calibrated_plans_error_bands_come_from_its_own_held_out_residuals(tmp_path):
    import re

    import numpy as np

    out_csv = tmp_path / "profile.csv"
    code, out, err = cli("calibrate", *map(str, SWEEP.values()), *NIM, "-o", str(out_csv))
    assert code == 0, err
    held_out = [float(x) for x in re.findall(r"left out: output tokens/s ([-+][0-9.]+)%", out)]
    assert len(held_out) == 7
    ratios = [1 / (1 + e / 100) for e in held_out]                 # measured / predicted of each held-out run
    prof = calibrate_profile.read_profile(out_csv).values
    assert prof["band_low_tokens_per_second"] == pytest.approx(np.percentile(ratios, 10), abs=2e-3)
    assert prof["band_high_tokens_per_second"] == pytest.approx(np.percentile(ratios, 90), abs=2e-3)
    got = _plan(*NIM, "--input-tokens", 5000, "--output-tokens", 500, "--concurrency", 100, "--profile", out_csv)
    assert got["tokens_per_second_low"] == pytest.approx(got["tokens_per_second"] * prof["band_low_tokens_per_second"])
    assert got["tokens_per_second_high"] == pytest.approx(got["tokens_per_second"] * prof["band_high_tokens_per_second"])
