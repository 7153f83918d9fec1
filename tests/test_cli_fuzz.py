"""Fuzzing the inputs a user types or edits: config.json fields, scenario CSV cells, CLI option values.

Whatever the input: never a traceback; success, or one line ``inference-ledger: error: ...``
with a non-zero exit; and after a failure no file is left behind.  In process (the real
entry point, ``inference_ledger.cli.run``) with a bounded number of examples, so it stays fast.
"""

from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference_ledger.catalogs import catalog

from examples import examples
from test_cli_rules import cli

BASE = json.loads((catalog.MODELS_DIR / "llama-3.1-8b.json").read_text())
TRICKY = ["", " ", "0", "-1", "1e999", "-1e999", "nan", "inf", "1e-400", "१२", "1,2", ",", "90%", "500ms", "$",
          "80GB", "0x10", "1_000", "\x00", "\t", "=1+2", "'", '"', "a\nb", "int4", "native", "h100-sxm", "vllm"]
TEXT = st.one_of(st.sampled_from(TRICKY), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12))
JSON_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30),
                       st.floats(allow_nan=True, allow_infinity=True), TEXT,
                       st.lists(st.integers(-5, 5), max_size=3), st.dictionaries(TEXT, st.integers(-5, 5), max_size=2))
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


def check(code: int, out: str, err: str, folder: Path, inputs: set[str]) -> None:
    assert "Traceback" not in out + err
    left = {p.name for p in folder.iterdir()} - inputs
    if code == 0:
        return
    assert code in (1, 2)
    assert err.count("\n") == 1 and err.startswith("inference-ledger: error: "), err
    assert left == set(), left                   # a failure leaves nothing behind (no output, no temp file)


@FUZZ
@given(field=st.sampled_from(sorted(BASE) + ["head_dim", "quantization_config", "layer_types", "sliding_window",
                                             "num_local_experts", "text_config", "kv_lora_rank"]),
       value=JSON_VALUE, drop=st.booleans())
def test_config_fields(field, value, drop):
    cfg = dict(BASE)
    if drop:
        cfg.pop(field, None)
    else:
        cfg[field] = value
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        (folder / "config.json").write_text(json.dumps(cfg))
        code, out, err = cli("plan", "--config", folder / "config.json", "--json")
        check(code, out, err, folder, {"config.json"})
        if code == 0:
            json.loads(out)


SCENARIO = {"label": "x", "model": "llama-3.1-8b", "gpu": "h100-sxm", "weight_dtype": "", "kv_dtype": "bf16",
            "tp": "1", "concurrency": "4", "gpu_memory_utilization": "0.9", "input_tokens": "1024"}


#: the sheets a scenario's cells reach (its row, the TCO comparison of the scenarios, its choice rows on the
#: Kernels sheet): an accepted CSV renders these, not the whole book
SCENARIO_SHEETS = ("scenarios_sheet", "add_tco_sheet", "kernels_sheet")


@settings(FUZZ, max_examples=examples(20))   # each accepted CSV renders a workbook
@given(column=st.sampled_from(list(SCENARIO)), cell=TEXT, raw=st.booleans())
def test_scenario_csv_cells(column, cell, raw):
    from inference_ledger.workbook import build

    row = dict(SCENARIO, **{column: cell})
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        path = folder / "s.csv"
        if raw:   # the cell as typed, not quoted: it may break the CSV itself
            path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n", encoding="utf-8", errors="replace")
        else:
            with path.open("w", newline="", encoding="utf-8", errors="replace") as f:
                w = csv.DictWriter(f, fieldnames=list(row))
                w.writeheader()
                w.writerow(row)
        sheets = [getattr(build, name) for name in SCENARIO_SHEETS]
        with pytest.MonkeyPatch.context() as mp:   # hypothesis runs the body many times: a patch of its own each
            mp.setattr(build, "SHEET_BUILDERS", sheets)
            code, out, err = cli("build", "-o", folder / "out.xlsx", "--scenarios", path)
        check(code, out, err, folder, {"s.csv"})


OPTIONS = ["--tp", "--concurrency", "--gpu-memory-utilization", "--ttft-target", "--model", "--gpu", "--kv-dtype",
           "--weight-dtype", "--context", "--hbm-bw", "--gpu-memory", "--engine", "--price-per-gpu-hour",
           "--kv-budget-rule", "--output-tokens"]
COMMANDS = {
    "plan": ["plan", "--json"],
    "sweep": ["sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--tp", "1", "--concurrency", "1", "-o", "{d}/s.csv"],
    "recommend": ["recommend", "-m", "llama-3.1-8b", "--qps", "1", "-g", "h100-sxm", "--tp", "1", "-o", "{d}/r.csv"],
}


def _without(argv: list[str], option: str) -> list[str]:
    """argv less the option (long or short form) and its value."""
    names = {option, {"--model": "-m", "--gpu": "-g"}.get(option, option)}
    out, skip = [], False
    for a in argv:
        if skip or a in names:
            skip = not skip and a in names
            continue
        out.append(a)
    return out


@FUZZ
@given(command=st.sampled_from(list(COMMANDS)), option=st.sampled_from(OPTIONS), value=TEXT)
def test_option_values(command, option, value):
    if command == "sweep" and option in ("--gpu-memory-utilization", "--ttft-target", "--hbm-bw", "--gpu-memory"):
        option = "--output-tokens"   # sweep has no option for the swept GPU facts; fuzz another value
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        argv = _without([a.replace("{d}", d) for a in COMMANDS[command]], option)
        code, out, err = cli(*argv, option, value)
        check(code, out, err, folder, set())
