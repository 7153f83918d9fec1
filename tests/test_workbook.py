"""The template workbook: live, portable, mail-ready, and equal to the Python ledger.

LibreOffice headless (the `soffice` fixture: required, never skipped) recalculates the
built workbook; every formula must give its cached value and the Python ledger's.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from openpyxl import load_workbook

from inference_ledger.graph import concurrency, resolve
from inference_ledger.graph import plan
from inference_ledger.core.expr import PORTABLE_FUNCTIONS
from inference_ledger.workbook import build
from inference_ledger.workbook.build import SELECTOR_NAMES, build_workbook, make_context, named
from inference_ledger.workbook.recalc import recalculate
from inference_ledger.workbook.scenarios import DEFAULT_SCENARIOS
from inference_ledger.workbook.tables import lookup

from ooxml import formula_cell_count, formula_cells_without_value
from renders import opened
from test_cli_rules import cli

pytestmark = pytest.mark.filterwarnings("ignore:.*extension is not supported:UserWarning")

ROOT = Path(__file__).resolve().parents[1]
ERRORS = ("#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!", "Err:")
REL = 1e-9
#: The grid's money and fleet columns: a row that does not start shows "does not fit" there instead.
BILLS = ("cost_per_million_output_tokens", "gpus_for_qps", "monthly_cost_qps", "replicas_for_qps")


def _close(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return a == b
    return math.isclose(float(a), float(b), rel_tol=REL, abs_tol=1e-12)


def _cell(wb, name: str):
    """The cell a workbook defined name points to."""
    dn = wb.defined_names[name]
    (sheet, coord), = list(dn.destinations)
    return wb[sheet][coord.replace("$", "")]


@pytest.fixture(scope="module")
def built(workbooks):
    return workbooks()


@pytest.fixture(scope="module")
def recalculated(built, soffice, tmp_path_factory):
    return recalculate(built[0], tmp_path_factory.mktemp("recalc"))


@pytest.fixture(scope="module")
def books(built, recalculated):
    return (load_workbook(built[0]), load_workbook(built[0], data_only=True),
            load_workbook(recalculated, data_only=True))


@pytest.mark.libreoffice
def test_no_error_value_in_any_cell(books):
    _, _, recalc = books
    bad = [(ws.title, c.coordinate, c.value) for ws in recalc.worksheets for row in ws.iter_rows() for c in row
           if isinstance(c.value, str) and c.value.startswith(ERRORS)]
    assert bad == []


@pytest.mark.libreoffice
def test_every_formula_recalculates_to_its_cached_value(books):
    formulas, cached, recalc = books
    n, diffs = 0, []
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith("="):
                    n += 1
                    want, got = cached[ws.title][c.coordinate].value, recalc[ws.title][c.coordinate].value
                    # openpyxl reads a cached "" (a blank-looking text result) as None, on both sides
                    if not _close(want, got):
                        diffs.append((ws.title, c.coordinate, c.value, want, got))
    assert n > 1500  # Plan, three ledgers, ~20 scenarios x every line, checks, chart tables
    assert diffs == []


@pytest.mark.libreoffice
def test_libreoffice_recalculates_rather_than_trusting_cached_values(built, soffice, tmp_path):
    """A wrong cached value is replaced on load: the comparisons above test formulas, not copies."""
    with zipfile.ZipFile(built[0]) as z:
        files = {n: z.read(n) for n in z.namelist()}
    wb = load_workbook(built[0])
    cell = _cell(wb, "kv_bytes_per_token")
    part = f"xl/worksheets/sheet{wb.sheetnames.index(cell.parent.title) + 1}.xml"
    xml, n = re.subn(rf'(<c r="{cell.coordinate}"[^>]*><f>[^<]*</f><v>)327680(</v>)', r"\g<1>1\g<2>",
                     files[part].decode())
    assert n == 1
    files[part] = xml.encode()
    lied = tmp_path / "lied.xlsx"
    with zipfile.ZipFile(lied, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    assert _cell(load_workbook(lied, data_only=True), "kv_bytes_per_token").value == 1
    got = load_workbook(recalculate(lied, tmp_path / "out"), data_only=True)
    assert _cell(got, "kv_bytes_per_token").value == 327_680


@pytest.mark.libreoffice
def test_plan_names_equal_the_python_ledger(built, books):
    """Every input and line on Plan/ledger sheets, recalculated, equals plan_inputs + evaluate."""
    _, _, recalc = books
    # no concurrency given: the plan at the concurrency it chooses (Load sheet: concurrency_auto)
    expected = concurrency.evaluate(resolve.resolve("llama-3.1-70b", "h100-sxm").inputs)
    for name in ("concurrency_used", "concurrency_reason"):
        assert _close(_cell(recalc, name).value, float(expected[name])), name
    for name in plan.NAMES:
        assert _close(_cell(recalc, named(name)).value, float(expected[name])), name
    # the seed's KV formula through the workbook: 2 x 80 x 8 x 128 x 2 B per token
    assert _cell(recalc, "kv_bytes_per_token").value == 327_680
    assert _cell(recalc, "master_check").value == 1


@pytest.mark.libreoffice
def test_scenario_rows_equal_the_python_ledger(books):
    formulas, _, recalc = books
    ws = recalc["Scenarios"]
    names = {ws.cell(8, c).value: c for c in range(1, ws.max_column + 1) if ws.cell(8, c).value}
    assert len(DEFAULT_SCENARIOS) >= 20
    # the groups a reader scans, in order, each under its header in row 5; the rest is one collapsed detail group
    groups = [ws.cell(5, c).value for c in range(1, ws.max_column + 1) if ws.cell(5, c).value]
    assert groups[:7] == ["Scenario", "Choice", "Workload", "Memory per GPU", "Speed",
                          "Cost (catalog price of the row's GPU)", "Verdict"]
    assert groups[7].startswith("Detail")
    first_detail = next(c for c in range(1, ws.max_column + 1) if str(ws.cell(5, c).value).startswith("Detail"))
    assert first_detail <= 35  # ~32 columns to read (the layout: TP, PP, EP, DP attention), down from ~130
    dims = formulas["Scenarios"].column_dimensions
    hidden = {c for c in range(first_detail, ws.max_column + 1)
              for d in dims.values() if d.hidden and d.outline_level == 1 and d.min <= c <= d.max}
    assert hidden == set(range(first_detail, ws.max_column + 1))
    # only what the shown columns need (the layout terms and the kernel-priced step's operations and their table figures
    # included, the CUDA-graph trait's four engine inputs and its lines, the KV admission reserve and the requests it
    # admits, a DP-attention rank's sequences and step tokens, the DP-attention MoE gather/scatter and the decode
    # kernel's passes over the KV heads with the heads and engine trait they read, the element-wise traffic per
    # token and per step, the all-reduce's link bound and its path through host memory without peer-to-peer (a
    # switch, that path's floor and bandwidth, and the floor, link and latency they set), a MoE model's dense and
    # shared-expert widths and the shared experts' GEMM figures and step, the bandwidth, peak and model size the
    # kernel tables stand for and whether they price the step, the scheduler's read interval the TTFT waits on): no
    # what-if TP or finance lines
    assert ws.max_column < 255
    assert not [n for n in names if n.startswith("tp_candidates") or "_tp4" in n] and "engine_id" in names
    for k, sc in enumerate(DEFAULT_SCENARIOS):
        r = 9 + k
        assert ws.cell(r, 1).value == sc.label
        # what `inference-ledger plan --model .. --gpu .. --tp .. ...` computes for the row
        expected = plan.evaluate(resolve.resolve(sc.model, sc.gpu, weight_dtype=sc.weight_dtype or None,
                                                 kv_dtype=sc.kv_dtype, numbers=sc.inputs).inputs)
        for name in [n for n in plan.NAMES if n in names]:
            if expected["verdict"] < 1 and name in BILLS:   # a row that does not start has no bill
                assert ws.cell(r, names[name]).value == "does not fit", (sc.label, name)
                continue
            assert _close(ws.cell(r, names[name]).value, float(expected[name])), (sc.label, name)
        assert ws.cell(r, names["engine_id"]).value == "vllm"


#: Catalog facts by hand from the published config.json files and datasheets, and the format definitions:
#: (model, GPU, weight format, KV format) -> plan input -> value.
CATALOG_FACTS_BY_HAND = {
    # DeepSeek-V3: 61 layers, 256 routed experts, 8 per token, MLA kv_lora_rank 512 + RoPE 64, the first 3 layers
    # dense; H200: 4.8 TB/s, FP8 dense 1,979 TFLOP/s; FP8 1 B per element
    ("deepseek-v3", "h200", "fp8", "fp8"): dict(num_layers=61, num_experts=256, experts_per_token=8, mla_latent_dim=576,
                                                moe_layers=58, hbm_bw=4.8e12, peak_flops=1979e12, weight_bytes=1,
                                                kv_bytes=1, unquantized_bytes=2),
    # Mixtral-8x7B: 32 layers, 8 KV heads, 8 experts, 2 per token; NVFP4 (4 bits + an 8-bit scale per 16) / 8; B200 FP4
    # dense 9 PFLOP/s; an INT4 KV cache 0.5 B
    ("mixtral-8x7b", "b200", "nvfp4", "int4-kv"): dict(num_layers=32, kv_heads=8, num_experts=8, experts_per_token=2,
                                                       vocab_size=32000, weight_bytes=0.5625, kv_bytes=0.5,
                                                       peak_flops=9000e12),
    # FP32 weights keep their unquantized modules in FP32 and compute at BF16 (A100: 312 TFLOP/s, 2.039 TB/s)
    ("llama-3.1-8b", "a100-80gb", "fp32", "bf16"): dict(weight_bytes=4, unquantized_bytes=4, peak_flops=312e12,
                                                        hbm_bw=2.039e12, num_layers=32, hidden_size=4096),
    # gpt-oss-120b: MXFP4 (4 bits + an 8-bit scale per 32) / 8, its MoE kernels pad the experts; every other of its
    # 36 layers windowed at 128 tokens; MI300X BF16 dense 1,307.4 TFLOP/s
    ("gpt-oss-120b", "mi300x", "mxfp4", "bf16"): dict(weight_bytes=0.53125, moe_kernel_pads=1, sliding_layers=18,
                                                      window=128, num_experts=128, experts_per_token=4,
                                                      peak_flops=1307.4e12),
}


@pytest.mark.parametrize("rows", list(CATALOG_FACTS_BY_HAND), ids="-".join)
def test_catalog_lookups_give_the_catalog_rows_facts(rows):
    """Each catalog-derived input's lookup carries the chosen rows' fact (a GPU without an FP8 unit computes FP8
    weights at its BF16 rate), and is an INDEX/MATCH on the catalog sheets."""
    ctx = make_context()
    choice = dict(zip(("model", "gpu", "weight_dtype", "kv_dtype"), rows), engine="vllm")
    for name, want in CATALOG_FACTS_BY_HAND[rows].items():
        formula, value = lookup(name, ctx.tables, SELECTOR_NAMES, choice)
        assert _close(value, want) and _close(formula.value, want), (rows, name, value)
        assert "INDEX(" in formula.text and "MATCH(" in formula.text, name


def _plan_json(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "inference_ledger", "plan", "--json", *args],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


@pytest.mark.libreoffice
def test_changed_inputs_recalculate_like_the_cli(built, soffice, tmp_path):
    """Another model, GPU, formats and concurrency typed into Plan: LibreOffice gives `plan --json`'s numbers."""
    wb = load_workbook(built[0])
    _cell(wb, "model_id").value = "llama-3.1-8b"
    _cell(wb, "gpu_id").value = "h200"
    _cell(wb, "weight_dtype").value = "fp8"
    _cell(wb, "kv_dtype").value = "fp8"
    _cell(wb, "concurrency").value = 64
    _cell(wb, "tp").value = 1
    changed = tmp_path / "changed.xlsx"
    wb.save(changed)
    got = load_workbook(recalculate(changed, tmp_path / "out"), data_only=True)
    want = _plan_json("--model", "llama-3.1-8b", "--gpu", "h200", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
                      "--concurrency", "64", "--tp", "1")
    for name in plan.NAMES:
        w = want[name]
        w = float(w) if isinstance(w, (bool, int, float)) else w
        assert _close(_cell(got, named(name)).value, w), name
    # hand-derived: 8B in FP8 reads 8.03e9 x 1 B per step, KV per token 2 x 32 x 8 x 128 x 1 B
    assert _cell(got, "kv_bytes_per_token").value == 65_536
    assert _cell(got, "peak_flops").value == 1979e12  # H200 dense FP8
    # the catalog lookups of the new choices (config.json: 32 layers, hidden 4096; H200 4.8 TB/s; FP8 1 B)
    assert [_cell(got, n).value for n in ("num_layers", "hidden_size", "hbm_bw", "weight_bytes", "kv_bytes")] \
        == [32, 4096, 4.8e12, 1, 1]
    assert _cell(got, "master_check").value == 1


@pytest.mark.libreoffice
def test_the_engine_is_picked_by_name(built, soffice, tmp_path):
    """The engine is a dropdown of the Engines sheet's ids; its rule code and fixed memory follow the name."""
    wb = load_workbook(built[0])
    dv = next(dv for dv in wb["Plan"].data_validations.dataValidation
              if _cell(wb, "engine_id").coordinate in str(dv.sqref))
    assert dv.type == "list" and dv.formula1 == "ENGINE_IDS"
    assert _cell(wb, "kv_budget_rule").value.startswith("=IF(ISBLANK(")  # a lookup, with an override beside it
    _cell(wb, "engine_id").value = "sglang"
    changed = tmp_path / "sglang.xlsx"
    wb.save(changed)
    got = load_workbook(recalculate(changed, tmp_path / "out"), data_only=True)
    # SGLang's rule (2) and its sampler (4 B per logit, engines.csv); the GPU- and TP-dependent defaults stay
    # what the build filled for vLLM (memory fraction 0.9, 8192-token chunk, 1024 sequences on an H100)
    assert _cell(got, "kv_budget_rule").value == 2 and _cell(got, "sampler_bytes_per_logit").value == 4
    kept = {n: _cell(got, n).value for n in ("gpu_memory_utilization", "max_num_batched_tokens", "max_num_seqs",
                                             "nccl_bytes")}
    assert kept["gpu_memory_utilization"] == 0.9 and kept["max_num_seqs"] == 1024
    # the error band follows the engine: SGLang's family band (the bands' segment is the engine family)
    from inference_ledger.catalogs import bands
    for name, value in bands.engine_band_inputs("sglang").items():
        assert _cell(got, name).value == pytest.approx(value) and value != bands.engine_band_inputs("vllm")[name], name
    want = plan.evaluate(resolve.resolve("llama-3.1-70b", "h100-sxm", engine="sglang", numbers=kept).inputs)
    for name in ("kv_cache_budget_bytes_per_gpu", "max_concurrency", "verdict"):
        assert _close(_cell(got, named(name)).value, float(want[name])), name
    assert _cell(got, "master_check").value == 1


@pytest.mark.libreoffice
def test_master_check_catches_an_invalid_tp(built, soffice, tmp_path):
    wb = load_workbook(built[0])
    _cell(wb, "tp").value = 3  # 8 KV heads do not split 3 ways
    bad = tmp_path / "tp3.xlsx"
    wb.save(bad)
    got = load_workbook(recalculate(bad, tmp_path / "out"), data_only=True)
    assert _cell(got, "master_check").value == 0
    assert got["Plan"]["A2"].value.startswith("A CHECK FAILS")


def _rules(ws, col: str):
    return [(str(rng), rule) for rng in ws.conditional_formatting for rule in rng.rules
            if str(rng.sqref).startswith(col)]


@pytest.mark.libreoffice
def test_fit_verdict_flags_the_non_fitting_scenario(books):
    formulas, _, recalc = books
    ws, got = formulas["Scenarios"], recalc["Scenarios"]
    names = {ws.cell(8, c).value: ws.cell(8, c).column_letter for c in range(1, ws.max_column + 1)}
    rows = {ws.cell(r, 1).value: r for r in range(9, ws.max_row + 1)}
    fits, total, memory, code = names["fits"], names["total_bytes_per_gpu"], names["gpu_memory_bytes"], names["verdict"]
    usable, most = names["usable_bytes_per_gpu"], names["max_concurrency"]
    rules = {rule.dxf.fill.fgColor.rgb[-6:]: rule.formula[0] for _, rule in _rules(ws, "B9")}
    # the rules read the row's own verdict code: 0 (or the workbook's -1, invalid input) red, 1 or 2 amber, 3 green
    assert rules["FFC7CE"] == f"AND(ISNUMBER(${code}9),${code}9<1)"  # red
    assert rules["FFEB9C"] == f"AND(ISNUMBER(${code}9),${code}9>=1,${code}9<VERDICT_MEETS)"  # amber
    assert rules["C6EFCE"] == f"${code}9=VERDICT_MEETS"  # green
    red, green = rows["405B BF16, 8x H100"], rows["70B BF16, 4x H100 (seed: 70B starts at 4 GPUs)"]
    # 405B in BF16 over 8 GPUs: 405,853,388,800 x 2 / 8 = 101.46 GB of weights alone > an H100's 85.03 GB
    assert got[f"{names['weights_bytes_per_gpu']}{red}"].value == 405_853_388_800 * 2 / 8
    assert got[f"{total}{red}"].value > got[f"{memory}{red}"].value
    assert got[f"B{red}"].value == "does not fit" and got[f"{code}{red}"].value == 0
    # 70B in BF16 over 4 GPUs: 141.1 GB / 4 = 35.3 GB of weights, fits and meets the targets
    assert got[f"{total}{green}"].value <= got[f"{usable}{green}"].value
    assert got[f"B{green}"].value == "fits, meets targets" and got[f"{code}{green}"].value == 3
    assert got[f"{fits}{red}"].value == 0 and got[f"{fits}{green}"].value == 1
    # the seed's mistake, 70B BF16 on two 80 GB GPUs: 70.6 GB of weights per GPU leave current vLLM (2.8 GB beside
    # weights and KV) 19,372 KV tokens (reported: it started with ~20k): 12 of the 16 sequences run, the rest queue
    seed = rows["70B BF16, 2x H100 (seed: 'two 80 GB are enough')"]
    assert got[f"{most}{seed}"].value == 12 and got[f"B{seed}"].value == "fits below the requested concurrency"
    # 32K context on 4x H100: 16 sequences x 33,792 tokens x 81,920 B = 44.3 GB of KV per GPU, over the
    # ~38 GB budget, but a dozen sequences fit: it runs, the rest queue (amber)
    amber = rows["70B BF16, 4x H100, 32K context"]
    assert got[f"{fits}{amber}"].value == 0 and 1 <= got[f"{most}{amber}"].value < 16
    assert got[f"B{amber}"].value == "fits below the requested concurrency"
    # 8B on one L4 fits but its TPOT misses the 50 ms target
    slow = rows["8B BF16, 1x L4"]
    assert got[f"B{slow}"].value == "fits, misses targets" and got[f"{names['tpot_ok']}{slow}"].value == 0
    # and the Plan's verdict carries the same rule set over defined names
    plan_rules = [rule.formula[0] for _, rule in _rules(formulas["Plan"], "B6")]
    assert "AND(ISNUMBER(verdict),verdict<1)" in plan_rules


def _formulas(wb):
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith("="):
                    yield ws.title, c.coordinate, c.value
        for rng in ws.conditional_formatting:
            for rule in rng.rules:
                for f in rule.formula or ():
                    yield ws.title, str(rng.sqref), f
        for dv in ws.data_validations.dataValidation:
            yield ws.title, "dv:" + str(dv.sqref), dv.formula1 or ""
    for name, dn in wb.defined_names.items():
        yield "names", name, dn.attr_text


@pytest.mark.libreoffice
def test_only_portable_functions_and_no_hard_coded_constants(books):
    formulas, _, _ = books
    used, literals = set(), []
    for sheet, where, text in _formulas(formulas):
        code = re.sub(r'"[^"]*"', '""', text)  # string literals are not code
        used |= set(re.findall(r"([A-Z][A-Z0-9.]*)\(", code))
        if where.startswith("dv:") or sheet == "names":
            continue  # data-validation bounds and range names are not formulas
        bare = re.sub(r"\$?\b[A-Z]{1,3}\$?[0-9]+\b", "", code)  # cell references
        for lit in re.findall(r"(?<![A-Za-z0-9_.])([0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?)", bare):
            if float(lit) not in (0.0, 1.0):
                literals.append((sheet, where, text))
    assert used <= PORTABLE_FUNCTIONS, used - PORTABLE_FUNCTIONS
    assert {"INDEX", "MATCH", "IF", "MAX", "ROUNDUP"} <= used
    assert literals == []  # FAST: every other number is a labelled cell


def test_mail_ready_package(built):
    path = built[0]
    assert path.stat().st_size < 1_000_000
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert not [n for n in names if "vbaProject" in n or "externalLink" in n or n.endswith(".bin")]
        core = z.read("docProps/core.xml").decode()
        for tag in ("dc:title", "dc:subject", "dc:description"):
            assert re.search(f"<{tag}>[^<]+</{tag}>", core), tag
        props = core + z.read("docProps/app.xml").decode()
        assert not re.search(r"/home/|/root|/tmp/|[A-Z]:\\\\|Users", props)
        ct = z.read("[Content_Types].xml").decode()
        assert "macroEnabled" not in ct
    assert formula_cells_without_value(path) == []
    assert formula_cell_count(path) > 1500


def test_reproducible_bytes_and_build_date(tmp_path, monkeypatch, workbooks):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    a, _ = workbooks()   # the session's default workbook, rendered earlier in this process (no memo below)
    b, _ = build_workbook(tmp_path / "b.xlsx")
    assert a.read_bytes() == b.read_bytes()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # 2023-11-14T22:13:20Z
    monkeypatch.setattr(build, "SHEET_BUILDERS", [build.start_sheet])   # the date is the package's, whatever sheets
    c, _ = build_workbook(tmp_path / "c.xlsx")
    with zipfile.ZipFile(c) as z:
        assert "2023-11-14T22:13:20Z" in z.read("docProps/core.xml").decode()
        assert z.getinfo("xl/workbook.xml").date_time == (2023, 11, 14, 22, 13, 20)


def test_cli_build_runs_with_no_arguments(tmp_path, monkeypatch, cached_renders):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("build")   # in process (the default workbook's render is shared); the refusal below is a real process
    assert code == 0, err
    assert (tmp_path / "inference-ledger.xlsx").exists()
    assert "fits" in out
    bad = subprocess.run([sys.executable, "-m", "inference_ledger", "build", "--gpu", "h10"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert bad.returncode == 2   # an unknown id is wrong input, as in every command
    assert bad.stderr.strip().count("\n") == 0 and "h100-sxm" in bad.stderr  # one line, with suggestions


#: another engine's plan (rendered ahead by a forked child, conftest.py, with the default workbook)
SGLANG = {"model": "llama-3.1-70b", "gpu": "h100-sxm", "tp": 4, "engine": "sglang"}
RENDERS_AHEAD = [({}, False), (SGLANG, False)]


def test_scenarios_from_csv_and_options(tmp_path, workbooks):
    csv = tmp_path / "mine.csv"
    csv.write_text("label,model,gpu,weight_dtype,kv_dtype,tp,concurrency,engine\n"
                   "mine A,llama-3.1-8b,l4,,bf16,1,4,\nmine B,Llama-3.1-70B,H100,fp8,fp8,2,32,SGLang\n")
    path, values = build_workbook(tmp_path / "w.xlsx", model="qwen2.5-7b", gpu="l40s", tp=1, concurrency=8,
                                  scenarios=str(csv))
    wb = opened(path, data_only=True, sheets=["Scenarios", "Plan"])
    ws = wb["Scenarios"]
    assert [ws["A9"].value, ws["A10"].value, ws["A11"].value] == ["mine A", "mine B", None]
    assert [ws["C10"].value, ws["D10"].value] == ["llama-3.1-70b", "h100-sxm"]  # aliases resolved
    col = {ws.cell(8, c).value: c for c in range(1, ws.max_column + 1)}
    assert [ws.cell(r, col["engine_id"]).value for r in (9, 10)] == ["vllm", "sglang"]  # blank: the build's
    assert [ws.cell(r, col["kv_budget_rule"]).value for r in (9, 10)] == [1, 2]  # looked up by the engine's name
    assert _cell(wb, "model_id").value == "qwen2.5-7b" and values["tp"] == 1
    want = plan.evaluate(resolve.resolve("qwen2.5-7b", "l40s", numbers={"tp": 1, "concurrency": 8}).inputs)
    assert _close(values["total_bytes_per_gpu"], want["total_bytes_per_gpu"])
    # another engine's defaults reach the Plan as `plan --engine` applies them
    _, sg = workbooks(**SGLANG)
    want = concurrency.evaluate(resolve.resolve("llama-3.1-70b", "h100-sxm", engine="sglang",
                                                numbers={"tp": 4}).inputs)
    assert all(_close(sg[n], float(want[n])) for n in plan.NAMES)
    assert sg["gpu_memory_utilization"] != values["gpu_memory_utilization"]  # SGLang's mem_fraction_static
    csv.write_text("model,gpu,bogus\nx,y,1\n")
    with pytest.raises(ValueError, match="unknown column 'bogus'"):
        build_workbook(tmp_path / "x.xlsx", scenarios=str(csv))


@pytest.mark.libreoffice
def test_a_config_json_model_joins_the_models_sheet_and_stays_live(soffice, tmp_path):
    cfg = tmp_path / "my-8b.json"
    cfg.write_text((ROOT / "inference_ledger" / "data" / "models" / "llama-3.1-8b.json").read_text())
    path, values = build_workbook(tmp_path / "cfg.xlsx", config=str(cfg), gpu="l40s", tp=1)
    got = load_workbook(recalculate(path, tmp_path / "out"), data_only=True)
    assert _cell(got, "model_id").value == "my-8b"
    ids = [c.value for c in got["Models"]["A"] if c.value]
    assert "my-8b" in ids and "llama-3.1-8b" in ids
    sources = " ".join(str(c.value) for row in got["Models"].iter_rows() for c in row if c.value)
    assert str(tmp_path) not in sources  # no local path in a workbook that gets mailed
    # Llama-3.1-8B: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B of KV per token
    assert _cell(got, "kv_bytes_per_token").value == 131_072
    assert _close(_cell(got, "total_bytes_per_gpu").value, values["total_bytes_per_gpu"])


def test_an_extra_sheet_builder_joins_the_workbook(tmp_path, monkeypatch):
    """An extra sheet comes after the book's own (here the Plan and Checks sheets: its banner reads the Checks
    sheet's master check, which reads the Plan) and writes its formulas and cached values as theirs are written."""
    from inference_ledger.core.units import MS_PER_S

    monkeypatch.setattr(build, "SHEET_BUILDERS", [build.plan_sheet, build.checks_sheet])

    def extra(wb, ctx):
        ws = ctx.new_sheet("Extra", "Extra")
        ctx.formula(ws, "B5", ctx.quantity("tpot_seconds") * MS_PER_S)

    path, plan_values = build_workbook(tmp_path / "x.xlsx", extra_sheets=[extra])
    wb = opened(path, data_only=True, sheets=["Extra"])
    assert wb.sheetnames[-1] == "Extra"
    assert wb["Extra"]["A2"].value == "All checks pass (Checks sheet)"
    assert opened(path, sheets=["Extra"])["Extra"]["B5"].value == "=tpot_seconds*MS_PER_S"
    # the cached value is the expression's own: the plan's TPOT in ms
    assert wb["Extra"]["B5"].value == pytest.approx(plan_values["tpot_seconds"] * 1000, rel=1e-12)


def test_build_into_a_missing_folder_fails_in_one_line_and_creates_nothing(tmp_path, capfd):
    from inference_ledger.cli import run

    target = tmp_path / "typo" / "plan.xlsx"
    with pytest.raises(SystemExit) as e:
        run(["build", "-o", str(target)])
    err = capfd.readouterr().err
    assert e.value.code == 1 and err.count("\n") == 1 and "folder" in err and "does not exist" in err
    assert not (tmp_path / "typo").exists()


@pytest.mark.libreoffice
def test_load_sheet_recalculates_to_the_plan_at_each_concurrency(books):
    """The Load sheet after LibreOffice: each candidate row is `plan --concurrency C`; throughput flattens at the KV
    plateau; the largest row meeting the targets is the concurrency the Plan runs at."""
    _, _, recalc = books
    ws = recalc["Load"]
    top = next(r for r in range(1, 60) if ws.cell(r, 1).value == "Concurrency")
    head = {ws.cell(top, c).value: c for c in range(1, ws.max_column + 1) if ws.cell(top, c).value}
    tok = head[plan.LINE_BY_NAME["tokens_per_second"].label]
    tpot = head[plan.LINE_BY_NAME["tpot_seconds"].label]
    base = resolve.resolve("llama-3.1-70b", "h100-sxm").inputs
    kv = plan.evaluate(base)["max_concurrency"]
    rows = range(top + 2, top + 3 + len(concurrency.FAMILY))
    cands = [ws.cell(r, 1).value for r in rows]
    assert cands == [kv, *concurrency.FAMILY]       # the KV plateau (305) first, then round(2^(k/4)) from 32,768
    plateau = []
    for r, c in zip(rows, cands):
        if c not in (kv, 512, 1024, 128, 152, 181, 215, 16, 1):
            continue
        want = plan.evaluate(resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"concurrency": c}).inputs)
        assert _close(ws.cell(r, tok).value, float(want["tokens_per_second"])), c
        assert _close(ws.cell(r, tpot).value, float(want["tpot_seconds"])), c
        if c >= kv:
            plateau.append(ws.cell(r, tok).value)
    # 305 run, 512 and 1,024 requested: the same throughput (the rest queue)
    assert kv == 305 and len(plateau) == 3 and _close(plateau[0], plateau[1]) and _close(plateau[1], plateau[2])
    # the markers: x = max_concurrency, y = the TPOT target
    marks = {ws.cell(r, 1).value: r for r in range(rows[-1] + 1, rows[-1] + 8) if ws.cell(r, 1).value}
    assert ws.cell(marks["KV plateau"], 2).value == kv and ws.cell(marks["TPOT target"], 4).value == 0.05
    # the choice: 181 sequences meet the 50 ms TPOT target (the step priced from the kernel tables), 215 do not
    assert _cell(recalc, "concurrency_auto").value == _cell(recalc, "concurrency").value == 181
    # the Plan says which limit binds (181 sequences: the step is compute-bound)
    assert "compute" in recalc["Plan"]["B" + str(next(r for r in range(1, 40)
                                                       if recalc["Plan"][f"A{r}"].value == "Limit that binds"))].value
