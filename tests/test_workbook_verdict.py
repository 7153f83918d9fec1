"""The workbook tells the truth in every state: a plan that does not fit, an input typed that breaks a rule.

Each workbook is recalculated by LibreOffice (inference_ledger.workbook.recalc forces a full recalculation), and what
the reader sees is read back: the defined names ``verdict`` and ``master_check``, the verdict's words, the
master check's banner on every sheet, and every cell for an error value.
"""

from __future__ import annotations

import json
import re
import zipfile
import subprocess
import sys
from pathlib import Path

import pytest
from openpyxl import load_workbook

from inference_ledger.catalogs import catalog
from inference_ledger.graph import plan, verdict
from inference_ledger.workbook import forecast
from inference_ledger.workbook.recalc import recalculate

from renders import memoised_renders, opened, options_of
from test_cli_rules import cli

pytestmark = pytest.mark.filterwarnings("ignore:.*extension is not supported:UserWarning")

ROOT = Path(__file__).resolve().parents[1]
ERRORS = ("#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!", "Err:")
ALL_PASS = "All checks pass"
#: Plans that do not fit (what `plan` answers for them, and what the build must say).
DOES_NOT_FIT = {"deepseek-v3-h200": ["--model", "deepseek-v3", "--gpu", "h200"],
                "deepseek-v3-h100": ["--model", "deepseek-v3", "--gpu", "h100"],
                "405b-l4": ["--model", "llama-3.1-405b", "--gpu", "l4"]}
#: The plans a test below builds besides those, with their options: a forked child renders all of them ahead
#: (conftest.py), beside the tests before this file's.
MISSES_TARGETS, MORE_REQUESTS = ["--tpot-target", "0.001"], ["--requests-per-day", "1500000"]
RENDERS_AHEAD = [(options_of(a), False) for a in [*DOES_NOT_FIT.values(), MISSES_TARGETS, MORE_REQUESTS]]


def _cell(wb, name: str):
    (sheet, coord), = list(wb.defined_names[name].destinations)
    return wb[sheet][coord.replace("$", "")]


def _verdict_words(wb) -> str:
    """The Plan's verdict in words: the cell beside 'Memory per GPU, then targets'."""
    ws = wb["Plan"]
    row = next(r for r in range(1, 40) if ws[f"A{r}"].value == "Memory per GPU, then targets")
    return ws[f"B{row}"].value


def _failures_sentence(wb) -> str:
    """The Summary's sentence under "Checks that fail"."""
    ws = wb["Summary"]
    row = next(r for r in range(1, 80) if ws[f"B{r}"].value == "Checks that fail")
    return ws[f"B{row + 1}"].value


def _failure_lines(wb) -> list:
    """The Summary's rows under that sentence: each '<k>. <check>' or blank (never a bare number)."""
    ws = wb["Summary"]
    row = next(r for r in range(1, 80) if ws[f"B{r}"].value == "Checks that fail")
    return [ws[f"B{r}"].value or "" for r in range(row + 2, row + 7)]


#: What the Summary says of a plan that does not fit: no check fails, yet the master check is 0 (the verdict).
UNFIT_FAILURES = "Every check passes, but the master check fails: the verdict is \"does not fit\"."


def _errors(wb) -> list[tuple[str, str, str]]:
    return [(ws.title, c.coordinate, c.value) for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if isinstance(c.value, str) and c.value.startswith(ERRORS)]


def _all_pass(wb) -> list[tuple[str, str]]:
    return [(ws.title, c.coordinate) for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if isinstance(c.value, str) and ALL_PASS in c.value]


def _chart_titles(path: Path) -> list[str]:
    """The cached titles of the charts whose title reads a cell (the Load and Forecast sheets' Chart titles), from
    the package."""
    with zipfile.ZipFile(path) as z:
        parts = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/charts/chart")]
    return [v for x in parts for v in re.findall(r"<(?:c:)?title><(?:c:)?tx><(?:c:)?strRef>.*?<(?:c:)?v>([^<]*)</(?:c:)?v>", x)]


def _build(args, out: Path) -> subprocess.CompletedProcess:
    """`build ARGS -o OUT`, in process (a workbook of the same options is rendered once per session)."""
    with memoised_renders():
        code, stdout, stderr = cli("build", *args, "-o", out)
    return subprocess.CompletedProcess(["build", *args], code, stdout, stderr)


@pytest.fixture(scope="module")
def not_fitting(tmp_path_factory):
    d = tmp_path_factory.mktemp("nofit")
    return {k: (_build(args, d / f"{k}.xlsx"), d / f"{k}.xlsx") for k, args in DOES_NOT_FIT.items()}


@pytest.mark.parametrize("key", sorted(DOES_NOT_FIT))
def test_build_of_a_plan_that_does_not_fit_exits_0_and_says_so(not_fitting, key):
    proc, path = not_fitting[key]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "does not fit" in proc.stdout
    cached = opened(path, data_only=True)  # what a mail preview shows before any recalculation (read only)
    assert _cell(cached, "verdict").value == 0 and _cell(cached, "master_check").value == 0
    assert _verdict_words(cached) == "does not fit"
    assert _all_pass(cached) == []
    assert _failures_sentence(cached) == UNFIT_FAILURES   # never "None" beside a master check of 0
    # the Plan's target rows: a replica that does not start meets no target ("no", red), though one sequence's
    # TPOT (12 ms for DeepSeek-V3 on H100 against 50 ms) would
    assert _cell(cached, "ttft_ok").value == 0 and _cell(cached, "tpot_ok").value == 0
    # ... and its headline gives no benchmark TTFT and no throughput (no replica runs), one sequence's TPOT
    plan_ws = cached["Plan"]
    headline = {plan_ws[f"A{r}"].value: plan_ws[f"B{r}"].value for r in range(20, 40)}
    assert headline["TTFT a benchmark reports"] == headline["Output tokens/s per GPU"] == "does not fit", headline
    assert headline["TTFT at the target QPS"] == "does not fit", headline
    assert isinstance(headline["TPOT expected"], float), headline
    # no sentence prices what needs a fleet: no bill, so no buy-or-rent answer and no TTFT at the target QPS
    said = " ".join(str(c.value) for row in cached["Summary"].iter_rows() for c in row if isinstance(c.value, str))
    assert not re.search(r"(?i)(owning|renting) is cheaper|TTFT at the target QPS \d", said), said
    assert "No own-or-rent answer: the plan does not fit." in said
    # ... nor does the Forecast's summary buy servers or add up a cash flow for a fleet that does not start
    for name in ("forecast_gpus_end", "forecast_cash_total", "forecast_npv_buy", "forecast_saving", "forecast_verdict"):
        assert _cell(cached, name).value == "does not fit", name
    # and its month-by-month what-if is titled as one that no fleet runs
    assert cached["Forecast"][f"A{forecast.HEAD - 1}"].value.endswith(verdict.NO_FLEET)
    assert cached["Cost"]["A1"].value == "Cost ledger" + verdict.NO_FLEET   # as `plan` titles its cost ledger
    assert cached["Sensitivity"]["A1"].value.endswith(verdict.NO_FLEET)      # its tornados rank a fleet's cost
    # nor does a step that no replica runs meet or miss the TPOT target, and the failures name the fit alone
    assert not re.search(r"TPOT [\d.,]+ ms (meets|misses)|(TTFT|TPOT) over target", said), said
    assert re.search(r"TPOT [\d.,]+ ms for one sequence, but the plan does not fit\.", said), said
    # ... and every title of a chart over the fleet (a cell on Load or Forecast, read by the chart: the Forecast's
    # were typed, "GPUs needed vs owned" over 250,000 GPUs) says no replica runs its curves
    titles = _chart_titles(path)
    assert len(titles) == 5 and all(t == "does not fit: no replica runs these curves (Plan)" for t in titles), titles
    # ... and the key numbers show no benchmark TTFT and no band where the sentences say there is none
    ws = cached["Summary"]
    rows = {ws[f"B{r}"].value: r for r in range(1, ws.max_row + 1) if isinstance(ws[f"B{r}"].value, str)}
    for label in ("TTFT a benchmark would report, clients started together",
                  "TTFT a benchmark would report, band low / high", "TPOT, band low / high"):
        assert ws[f"C{rows[label]}"].value == "does not fit", label
    # no target is met or missed by a replica that does not start: each target's status says so (the TPOT itself,
    # what reading the weights would take, stays a number)
    for label in ("TTFT at the target QPS / target", "TPOT / target"):
        assert ws[f"E{rows[label]}"].value == "does not fit", label
    assert isinstance(ws[f"C{rows['TPOT / target']}"].value, float)
    # ... and is red, never the green of a met target (the DeepSeek-V3 plans' TPOT would meet it)
    for label in ("TTFT at the target QPS / target", "TPOT / target"):
        assert _status_fill(path, cached, f"E{rows[label]}") == "RED", label


def _status_fill(path, cached, coord: str) -> str:
    """Which of the Summary's pass/fail fills a status cell shows: its conditional-format rules evaluated on the
    cached values of the names they read (a mail preview shows what they evaluate to in Excel)."""
    from inference_ledger.workbook import style

    ws = opened(path, sheets=["Summary"])["Summary"]   # read only: one parse per file, however many cells are asked about
    fills = {style.GREEN[0]: "GREEN", style.RED[0]: "RED"}
    for cf in ws.conditional_formatting:
        if coord in str(cf.sqref):
            for rule in cf.rules:
                text = re.sub(r"\b([a-z_]+)\b", lambda m: repr(_cell(cached, m[1]).value), rule.formula[0])
                text = re.sub(r"(?<![<>])=", "==", text).replace("AND(", "_and(").replace("OR(", "_or(")
                text = text.replace("IF(", "_if(")
                fns = {"_and": lambda *a: all(a), "_or": lambda *a: any(a), "_if": lambda c, a, b: a if c else b}
                if eval(text, fns):
                    return fills[rule.dxf.fill.fgColor.rgb[-6:]]
    return "none"


@pytest.mark.libreoffice
@pytest.mark.parametrize("key", sorted(DOES_NOT_FIT))
def test_a_plan_that_does_not_fit_recalculates_without_error_cells(not_fitting, key, soffice, tmp_path):
    _, path = not_fitting[key]
    got = load_workbook(recalculate(path, tmp_path), data_only=True)
    assert _errors(got) == []
    assert _cell(got, "verdict").value == 0 and _verdict_words(got) == "does not fit"
    assert _cell(got, "master_check").value == 0
    assert _cell(got, "ttft_ok").value == 0 and _cell(got, "tpot_ok").value == 0   # LibreOffice's own AND
    assert _all_pass(got) == []   # no banner, legend or note claims it
    assert all(ws["A2"].value.startswith("MASTER CHECK FAILS") for ws in got.worksheets)
    # the Summary's failures sentence reads the master check's own cells, as LibreOffice computes them
    assert _failures_sentence(got) == UNFIT_FAILURES


def test_a_plan_that_misses_its_targets_fails_the_master_check(tmp_path):
    """Every rule holds (the CLI accepts it), but no GPU reads 70B's weights in 1 ms: TPOT misses, master check 0."""
    proc = _build(MISSES_TARGETS, tmp_path / "l4.xlsx")
    assert proc.returncode == 0, proc.stderr
    cached = load_workbook(tmp_path / "l4.xlsx", data_only=True)
    assert _cell(cached, "verdict").value == 2 and _verdict_words(cached) == "fits, misses targets"
    assert _cell(cached, "checks_pass").value == 1 and _cell(cached, "master_check").value == 0
    assert _all_pass(cached) == []
    assert _failures_sentence(cached) == ("Every check passes, but the master check fails: the verdict is "
                                          "\"fits, misses targets\".")
    # a plan that starts keeps its charts' titles (it misses a target, yet its curves are a replica's)
    assert sorted(_chart_titles(tmp_path / "l4.xlsx")) == sorted([
        "Output tokens/s vs concurrency (flat: the KV cache is full, the rest queue)",
        "TPOT vs concurrency (the dashed level is the TPOT target)",
        "Output tokens/s and TPOT vs concurrency (log scale), one replica", *dict(forecast.CHART_TITLES).values()])


#: Values the CLI refuses, typed into the default workbook (bad-inputs.md L01-L04), and a model id not in the
#: catalog: (defined name, value, words the verdict must contain: the input or rule that is wrong).
TYPED = {
    "L01 tp 3": ("tp", 3, "TP"),
    "L02 tp four": ("tp", "four", "tp must be a whole number"),
    "L03 concurrency -5": ("concurrency", -5, "concurrency must be a whole number >= 1"),
    "L04 concurrency 0": ("concurrency", 0, "concurrency must be a whole number >= 1"),
    "unknown model": ("model_id", "no-such-model", "model_id must be an id of the Models sheet"),
    # ATOM typed onto the default H100: `plan --engine atom --gpu h100` refuses it (ATOM runs on AMD GPUs only)
    "atom on an NVIDIA GPU": ("engine_id", "atom", "Engine runs on the GPU's vendor"),
    # L05: typed into the Override beside the catalog's 0 experts of the dense 70B
    "L05 experts on a dense model": ("experts_per_token", 4, "Experts per token"),
}
#: Inputs looked up from a catalog: a value is typed into the Override cell beside them (column D).
OVERRIDDEN = {"experts_per_token"}


@pytest.fixture(scope="module")
def default_book(tmp_path_factory):
    d = tmp_path_factory.mktemp("default")
    proc = _build([], d / "default.xlsx")
    assert proc.returncode == 0, proc.stderr
    return d / "default.xlsx"


@pytest.mark.libreoffice
@pytest.mark.parametrize("case", sorted(TYPED))
def test_an_input_the_cli_refuses_typed_into_the_workbook_makes_the_verdict_invalid(default_book, case, soffice,
                                                                                    tmp_path):
    name, value, says = TYPED[case]
    wb = load_workbook(default_book)
    c = _cell(wb, name)
    (c.parent[f"D{c.row}"] if name in OVERRIDDEN else c).value = value
    typed = tmp_path / "typed.xlsx"
    wb.save(typed)
    got = load_workbook(recalculate(typed, tmp_path / "lo"), data_only=True)
    assert _cell(got, "verdict").value == -1          # the code itself, not only a banner
    words = _verdict_words(got)
    assert words.startswith("invalid input: ") and says in words, words
    assert _cell(got, "checks_pass").value == 0 and _cell(got, "master_check").value == 0
    assert _all_pass(got) == []
    assert got["Plan"]["A2"].value.startswith("A CHECK FAILS")
    # the Summary names the failure: a counted check that fails, or the rule an input breaks
    failures = _failures_sentence(got)
    assert failures.endswith(" checks fail (Checks sheet):") or failures == f"A rule is broken: {_cell(got, 'rule_broken').value}.", failures
    # under it the failing checks by number, the rows past the last blank (a row showed "3." with nothing beside it)
    lines = _failure_lines(got)
    listed = [x for x in lines if x]
    assert listed == [f"{k}. {x.split('. ', 1)[1]}" for k, x in enumerate(listed, start=1)], lines
    assert lines == listed + [""] * (len(lines) - len(listed)), lines
    if failures.endswith(" checks fail (Checks sheet):"):
        assert listed, lines


@pytest.mark.libreoffice
def test_mixtral_long_prompts_typed_on_plan_recalculate_without_num_errors(default_book, soffice, tmp_path):
    """Mixtral on H200, TP 2, 7,680-token prompts at 256 sequences: ~2,600 tokens a step, where 0.75^tokens
    once fell below LibreOffice's smallest number (876 #NUM! cells, the verdict and master check among them)."""
    wb = load_workbook(default_book)
    for name, value in (("model_id", "mixtral-8x7b"), ("gpu_id", "h200"), ("tp", 2), ("input_tokens", 7680),
                        ("concurrency", 256)):
        _cell(wb, name).value = value
    typed = tmp_path / "mixtral.xlsx"
    wb.save(typed)
    got = load_workbook(recalculate(typed, tmp_path / "lo"), data_only=True)
    assert _errors(got) == []
    assert _cell(got, "verdict").value in (0, 1, 2, 3) and _cell(got, "master_check").value in (0, 1)


#: A sample of plans (build and plan take the same options): each verdict, MoE and dense, one and many GPUs.
SAMPLE = {
    "meets": ["--model", "llama-3.1-70b", "--gpu", "h100"],
    "does not fit": ["--model", "deepseek-v3", "--gpu", "h200"],
    "does not fit, 405B on L4": ["--model", "llama-3.1-405b", "--gpu", "l4"],
    "below the concurrency": ["--model", "llama-3.1-70b", "--gpu", "h100", "--tp", "2"],
    "misses a target": ["--model", "llama-3.1-8b", "--gpu", "l4", "--tpot-target", "0.005"],
    "MoE long prompts": ["--model", "mixtral-8x7b", "--gpu", "h200", "--tp", "2", "--input-tokens", "7680",
                         "--concurrency", "256"],
    "MoE over two nodes": ["--model", "deepseek-v3", "--gpu", "h100", "--weight-dtype", "fp8", "--tp", "8", "--pp", "2"],
}


def _plan_json(args) -> dict:
    code, out, err = cli("plan", "--json", *args)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.libreoffice
@pytest.mark.parametrize("case", sorted(SAMPLE))
def test_the_workbook_verdict_after_libreoffice_equals_the_cli_verdict(case, soffice, tmp_path):
    args = SAMPLE[case]
    want = _plan_json(args)
    proc = _build(args, tmp_path / "plan.xlsx")
    assert proc.returncode == 0, proc.stderr
    got = load_workbook(recalculate(tmp_path / "plan.xlsx", tmp_path / "lo"), data_only=True)
    assert _cell(got, "verdict").value == want["verdict"]
    assert _verdict_words(got) == want["verdict_words"]
    assert _cell(got, "master_check").value == int(want["verdict"] == 3)
    assert _errors(got) == []


@pytest.mark.libreoffice
def test_an_input_the_cli_refuses_is_the_invalid_verdict_in_the_workbook(default_book, soffice, tmp_path):
    """TP 3 for 70B: `plan` refuses it (exit 2, one line); typed into the workbook, the verdict is invalid input."""
    proc = subprocess.run([sys.executable, "-m", "inference_ledger", "plan", "--json", "--model", "llama-3.1-70b",
                           "--gpu", "h100", "--tp", "3"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    wb = load_workbook(default_book)
    _cell(wb, "tp").value = 3
    wb.save(tmp_path / "tp3.xlsx")
    got = load_workbook(recalculate(tmp_path / "tp3.xlsx", tmp_path / "lo"), data_only=True)
    assert _cell(got, "verdict").value == -1 and _verdict_words(got).startswith("invalid input: ")


@pytest.mark.libreoffice
def test_scenarios_cost_at_the_catalog_price_and_say_so(default_book, soffice, tmp_path):
    """A price typed into the Plan's override is the Plan's: Scenarios rows keep their GPU's catalog price, and
    their cost columns say so."""
    wb = load_workbook(default_book)
    price = _cell(wb, "price_per_gpu_hour")
    price.parent[f"D{price.row}"].value = 9.99          # the override beside the catalog lookup
    wb.save(tmp_path / "price.xlsx")
    got = load_workbook(recalculate(tmp_path / "price.xlsx", tmp_path / "lo"), data_only=True)
    assert _cell(got, "price_per_gpu_hour").value == 9.99
    ws = got["Scenarios"]
    cols = {ws.cell(8, c).value: c for c in range(1, ws.max_column + 1) if ws.cell(8, c).value}
    c = cols["price_per_gpu_hour"]
    label = ws.cell(6, c).value
    assert "catalog" in label and "override does not apply" in label
    h100 = [r for r in range(9, ws.max_row + 1) if ws.cell(r, cols["gpu_id"]).value == "h100-sxm"]
    listed = catalog.get_gpu("h100-sxm").price_per_gpu_hour        # the GPUs sheet's H100 price, not 9.99
    assert listed != 9.99 and h100 and all(ws.cell(r, c).value == listed for r in h100)
    groups = [ws.cell(5, k).value for k in range(1, c + 1) if ws.cell(5, k).value]
    assert groups[-1] == "Cost (catalog price of the row's GPU)"


def test_npv_of_renting_everything_says_why_requests_per_day_do_not_move_it(tmp_path, workbooks):
    """Both options run the peak fleet every hour; requests per day size only the base the buy option owns.  So
    more requests a day move the buy option's NPV (a larger owned base), not the rent-everything one, and its
    label says so (once it read as a number that ought to have moved)."""
    assert plan.INPUT_BY_NAME["requests_per_day"].default == 1_000_000   # the default workbook's
    proc = _build(MORE_REQUESTS, tmp_path / "more.xlsx")
    assert proc.returncode == 0, proc.stderr
    got = {1_000_000: opened(workbooks()[0], data_only=True, sheets=["Forecast"]),
           1_500_000: opened(tmp_path / "more.xlsx", data_only=True, sheets=["Forecast"])}
    buy = [_cell(wb, "forecast_npv_buy").value for wb in got.values()]
    rent = [_cell(wb, "forecast_npv_rent").value for wb in got.values()]
    assert buy[0] != buy[1] and rent[0] == rent[1]
    ws = got[1_000_000]["Forecast"]
    row = _cell(got[1_000_000], "forecast_npv_rent").row
    assert "requests per day do not enter" in ws[f"A{row}"].value


@pytest.mark.libreoffice
def test_an_average_above_the_peak_is_flagged(default_book, soffice, tmp_path):
    """2,000,000 requests a day is 23.1 requests/s on average, above the 20 QPS peak the fleet is sized for."""
    wb = load_workbook(default_book)
    rpd = _cell(wb, "requests_per_day")
    flag = rpd.parent[f"D{rpd.row}"]
    assert flag.value.startswith("=")                       # a live flag beside the input
    rpd.value = 2_000_000
    wb.save(tmp_path / "rpd.xlsx")
    got = load_workbook(recalculate(tmp_path / "rpd.xlsx", tmp_path / "lo"), data_only=True)
    assert _cell(got, "target_qps").value == 20
    assert got["Plan"][flag.coordinate].value == "average above the peak QPS"
    checks = got["Checks"]
    row = next(r for r in range(1, checks.max_row + 1)
               if str(checks[f"B{r}"].value).startswith("Finding: the average load"))
    assert checks[f"C{row}"].value == 0
    fresh = load_workbook(default_book, data_only=True)
    assert fresh["Plan"][flag.coordinate].value in (None, "")   # 1,000,000 a day is 11.6/s: no flag


def test_a_met_target_is_green_on_a_plan_that_fits(workbooks):
    path, _ = workbooks()
    cached = opened(path, data_only=True)   # the status rules read names on many sheets
    ws = cached["Summary"]
    rows = {ws[f"B{r}"].value: r for r in range(1, ws.max_row + 1) if isinstance(ws[f"B{r}"].value, str)}
    for label in ("TTFT at the target QPS / target", "TPOT / target"):
        assert ws[f"E{rows[label]}"].value == "meets the target"
        assert _status_fill(path, cached, f"E{rows[label]}") == "GREEN", label
    assert cached["Forecast"][f"A{forecast.HEAD - 1}"].value == "Timeline (one column per month)"   # a fleet runs it
    assert cached["Cost"]["A1"].value == "Cost ledger"
    assert {"GPUs needed vs owned", "Monthly cash out by source"} <= set(_chart_titles(path))   # the Forecast's
