"""Every row of the bad-inputs survey (a new user's 53 inputs that did not get one clear line), as a test.

Each case states what the row must do now: a refusal in one line that names the setting (exit 2 for a wrong
input, 1 for a failed action), or a ValueError with the Excel function's words for the Python functions.
The workbook rows (a value typed into the Plan sheet) are tested with the workbook.  Cases that hung run in a
subprocess with a 15-second limit; the rest run in process through the real entry point.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import udfs
from inference_ledger.catalogs import catalog
from inference_ledger.core import files
from inference_ledger.graph import resolve
from inference_ledger.core.args import LedgerInputError
from udfs import _xl, excel

from children import forked
from test_cli_rules import assert_one_line, cli

import inference_ledger

ROOT = Path(inference_ledger.__file__).resolve().parent.parent   # the checkout under test (its subprocesses too)
LIMIT_S = 15


@pytest.fixture(autouse=True)
def _scratch_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def il(*argv, env=None, preexec_fn=None) -> subprocess.CompletedProcess:
    """The command in a subprocess (for inputs that used to hang): must answer within LIMIT_S seconds."""
    e = dict(os.environ, PYTHONPATH=str(ROOT)) | (env or {})
    return subprocess.run([sys.executable, "-m", "inference_ledger", *map(str, argv)], capture_output=True, text=True,
                          timeout=LIMIT_S, env=e, preexec_fn=preexec_fn)


def refused(argv, code: int, *needles: str) -> str:
    got, out, err = cli(*argv)
    assert got == code, (got, out, err)
    assert_one_line(err, *needles)
    return err


# --- input files: regular files only, within a size limit, read errors naming the file -----------------------


def test_C16_config_dev_zero_refused_at_once():
    r = il("plan", "--config", "/dev/zero", "--gpu", "h100")
    assert r.returncode == 2, r.stderr
    assert_one_line(r.stderr, "/dev/zero", "not a regular file")


def test_F01_fifo_as_config_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo.json")
    r = il("plan", "--config", tmp_path / "fifo.json", "--gpu", "h100")
    assert r.returncode == 2, r.stderr
    assert_one_line(r.stderr, "fifo.json", "FIFO")


def test_F02_fifo_as_scenarios_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo.csv")
    r = il("build", "-o", tmp_path / "f.xlsx", "--scenarios", tmp_path / "fifo.csv")
    assert r.returncode == 2, r.stderr
    assert_one_line(r.stderr, "fifo.csv", "FIFO")
    assert not (tmp_path / "f.xlsx").exists()


def test_F03_dev_zero_as_scenarios_refused(tmp_path):
    r = il("build", "-o", tmp_path / "f.xlsx", "--scenarios", "/dev/zero")
    assert r.returncode == 2, r.stderr
    assert_one_line(r.stderr, "/dev/zero", "a device")


def test_V08_validate_dev_zero_refused():
    r = il("validate", "--data", "/dev/zero")
    assert r.returncode == 2, r.stderr
    assert_one_line(r.stderr, "/dev/zero", "a device")


@pytest.mark.parametrize("kind", ["config", "data", "scenarios"])
def test_input_over_its_size_limit_refused_naming_it(tmp_path, kind):
    big = tmp_path / f"big-{kind}"
    with big.open("wb") as f:
        f.truncate(files.INPUT_LIMITS[kind] + 1)   # sparse: no disk used
    with pytest.raises(files.InvalidInput, match=f"{kind} file .*big-{kind} is .* MB, larger than"):
        files.read_input(big, kind)
    small = tmp_path / "small"
    small.write_bytes(b"x" * 10)
    assert files.read_input(small, kind) == b"x" * 10


@pytest.mark.parametrize("command, option, kind", [("plan", "--config", "config"), ("build", "--scenarios", "scenarios"),
                                                   ("validate", "--data", "data")])
def test_size_limits_stated_in_help(command, option, kind):
    from inference_ledger.cli import main

    cmd = main.get_command(None, command)
    (param,) = [p for p in cmd.params if option in p.opts]
    assert f"a regular file of at most {files.INPUT_LIMITS[kind] / 1e6:g} MB" in param.help
    code, out, _ = cli(command, "--help")
    assert code == 0 and f"at most {files.INPUT_LIMITS[kind] / 1e6:g} MB" in " ".join(out.split())


def test_a_folder_as_input_names_it(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(files.InvalidInput, match="d: it is a folder"):
        files.read_input(tmp_path / "d", "data")


# --- OS errors while writing: one line naming the path, exit 1, target untouched ----------------------------


def test_W16_file_size_limit_is_one_line_and_keeps_the_target(tmp_path, monkeypatch):
    """A book of the Start and Plan sheets (66 KB) is past the limit of 51,200 bytes as the whole book is: what
    fails is the write, whatever the sheets."""
    from inference_ledger.workbook import build

    keep = tmp_path / "keep.xlsx"
    keep.write_bytes(b"the user's old workbook")
    before = md5(keep)
    monkeypatch.setattr(build, "SHEET_BUILDERS", [build.start_sheet, build.plan_sheet])

    def limited_build():
        resource.setrlimit(resource.RLIMIT_FSIZE, (100 * 512, resource.RLIM_INFINITY))   # ulimit -f 100
        return cli("build", "-o", str(keep))

    code, _, err = forked(limited_build)   # a child process: the limit stays out of this one
    assert code == 1, err
    assert_one_line(err, f"cannot write {keep}", "file too large")
    assert md5(keep) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.xlsx"]


def test_W19_full_temp_folder_is_one_line_and_keeps_the_target(tmp_path, monkeypatch):
    """openpyxl writes each sheet to a temporary file first; here every one of them is a full disk (a link to
    /dev/full, which answers every write with ENOSPC, as a full TMPDIR does).  The book is the Start sheet alone:
    the first sheet openpyxl saves fails, whichever it is, and the other sheets would only cost seconds before it."""
    import openpyxl.worksheet._writer as sheet_writer

    from inference_ledger.workbook import build

    full = tmp_path / "tmp"
    full.mkdir()
    links = iter(range(10**6))

    def full_temp_file(suffix=""):
        link = full / f"sheet{next(links)}{suffix}"
        os.symlink("/dev/full", link)
        return str(link)

    monkeypatch.setattr(sheet_writer, "create_temporary_file", full_temp_file)
    monkeypatch.setattr(build, "SHEET_BUILDERS", [build.start_sheet])
    keep = tmp_path / "keep.xlsx"
    keep.write_bytes(b"old")
    refused(["build", "-o", keep], 1, f"cannot write {keep}", "no space left on device")
    assert keep.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir() if p.name != "tmp"] == ["keep.xlsx"]


# --- scenario CSVs ------------------------------------------------------------------------------------------


def _csv(path: Path, rows: list[list[str]]) -> Path:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue())
    return path


HEAD = ["label", "model", "gpu", "tp"]
ROW = ["ok", "llama-3.1-8b", "h100-sxm", "1"]


def test_S02_label_longer_than_a_cell_refused(tmp_path):
    sc = _csv(tmp_path / "long.csv", [HEAD, ["x" * 40_000, *ROW[1:]]])
    err = refused(["build", "-o", tmp_path / "s.xlsx", "--scenarios", sc], 2, "long.csv line 2, column 'label'",
                  "40,000 characters", "32,767")
    assert "x" * 100 not in err
    assert not (tmp_path / "s.xlsx").exists()


def test_S02_label_of_exactly_one_cell_is_kept_whole(tmp_path):
    from inference_ledger.workbook.scenarios import read_scenarios

    sc = _csv(tmp_path / "edge.csv", [HEAD, ["y" * 32_767, *ROW[1:]]])
    assert read_scenarios(sc)[0].label == "y" * 32_767


def test_S05_unknown_model_names_file_and_line(tmp_path):
    sc = _csv(tmp_path / "badmodel.csv", [HEAD, ROW, ["bad", "llama-9000", "h100-sxm", "1"]])
    refused(["build", "-o", tmp_path / "s.xlsx", "--scenarios", sc], 2, "badmodel.csv line 3", "scenario 'bad'",
            "unknown model 'llama-9000'")


def test_S11_cells_beyond_the_header_refused(tmp_path):
    sc = _csv(tmp_path / "ragged.csv", [HEAD, [*ROW, "extra", "more"]])
    refused(["build", "-o", tmp_path / "s.xlsx", "--scenarios", sc], 2, "ragged.csv row 1 (line 2)",
            "6 cells, more than the 4 columns", "'extra'")


def test_S12_duplicate_column_refused(tmp_path):
    sc = _csv(tmp_path / "dupcol.csv", [[*HEAD, "label"], [*ROW, "b"]])
    refused(["build", "-o", tmp_path / "s.xlsx", "--scenarios", sc], 2, "dupcol.csv", "column 'label' appears twice")


def test_measured_data_with_a_duplicate_column_or_extra_cells_refused(tmp_path):
    text = (ROOT / "inference_ledger" / "data" / "measured.csv").read_text().splitlines()
    lines = [ln for ln in text if ln.strip() and not ln.startswith("#")]
    (tmp_path / "dup.csv").write_text(lines[0] + ",id\n" + lines[1] + ",x\n")
    refused(["validate", "--data", tmp_path / "dup.csv"], 2, "dup.csv", "column 'id' appears twice")
    (tmp_path / "extra.csv").write_text(lines[0] + "\n" + lines[1] + ",surplus\n")
    refused(["validate", "--data", tmp_path / "extra.csv"], 2, "extra.csv row 1", "'surplus'")


# --- list options ---------------------------------------------------------------------------------------------

SWEEP = ["sweep", "--model", "llama-3.1-70b", "--gpu", "h100"]


def test_R08_empty_list_item_refused(tmp_path):
    refused([*SWEEP, "--concurrency", "1,,2", "-o", tmp_path / "sw.csv"], 2, "'--concurrency'", "'1,,2' has an empty item")
    assert not (tmp_path / "sw.csv").exists()


def test_R09_sweep_reads_numbers_as_plan_does(tmp_path):
    # 1e9 is read (as plan reads it) and then refused for its range, with plan's own words
    plan_err = refused(["plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--concurrency", "1e9"], 2)
    words = plan_err.split("'--concurrency': ")[1].split(" (see")[0]
    refused([*SWEEP, "--concurrency", "1e9", "-o", tmp_path / "sw.csv"], 2, words)
    code, out, err = cli(*SWEEP, "--tp", "4", "--concurrency", "1e3,1.6e1", "-o", tmp_path / "sw.csv")
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "sw.csv").open()))
    assert sorted(float(r["concurrency"]) for r in rows) == [16, 1000]


def test_R10_duplicate_list_items_refused(tmp_path):
    refused([*SWEEP, "--tp", "1,1,1", "-o", tmp_path / "sw.csv"], 2, "'--tp'", "'1' is listed twice")
    refused([*SWEEP, "--tp", "2,2.0", "-o", tmp_path / "sw.csv"], 2, "'--tp'", "listed twice")


def test_M04_repeated_option_refused():
    refused(["plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--tp", "4", "--tp", "8"], 2,
            "--tp is given more than once")
    refused(["plan", "-m", "llama-3.1-70b", "--model", "llama-3.1-8b", "--gpu", "h100"], 2,
            "--model is given more than once")


def test_M04_stated_in_every_commands_help():
    from inference_ledger.cli import COMMANDS

    for name in COMMANDS:
        code, out, _ = cli(name, "--help")
        assert code == 0 and "Each option is given once" in " ".join(out.split()), name


# --- disaggregated ---------------------------------------------------------------------------------------------


def test_D06_prefill_option_without_disaggregated_refused():
    refused(["plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--tp", "4", "--prefill-tp", "2"], 2,
            "--prefill-tp", "--disaggregated")


def test_D08_prefill_tp_error_names_prefill_tp():
    err = refused(["plan", "--model", "deepseek-v3", "--gpu", "h800", "--tp", "8", "--disaggregated",
                   "--prefill-tp", "3"], 2, "'--prefill-tp'", "TP 3 does not divide the 128 attention heads")
    assert "'--tp'" not in err
    # the decode pool's own bad TP is still --tp
    refused(["plan", "--model", "deepseek-v3", "--gpu", "h800", "--tp", "3", "--disaggregated"], 2, "'--tp'")


# --- email ----------------------------------------------------------------------------------------------------

MAIL = ["email", "--to", "a@example.com", "--from", "me@example.com"]


def test_E14_eml_and_smtp_together_refused(tmp_path):
    refused([*MAIL, "--eml", tmp_path / "out.eml", "--smtp", "127.0.0.1:8025"], 2, "--eml", "--smtp", "not both")
    assert list(tmp_path.iterdir()) == []


def test_E24_bad_sender_echoed_whole(tmp_path):
    refused(["email", "--to", "a@example.com", "--from", "bad from", "--smtp", "127.0.0.1:8025",
             "-o", tmp_path / "att24.xlsx"], 2, "--from: 'bad from' is not an email address")
    refused(["email", "--to", "a@example.com, bad to", "--from", "me@example.com", "--smtp", "127.0.0.1:8025"], 2,
            "--to: 'bad to' is not an email address")


def test_E29_email_without_output_never_replaces_an_earlier_workbook(tmp_path, monkeypatch):
    """Which name the second workbook takes does not depend on its sheets: the books here are the Start sheet."""
    from inference_ledger.workbook import build

    monkeypatch.setattr(build, "SHEET_BUILDERS", [build.start_sheet])
    code, out, err = cli(*MAIL, "--eml", tmp_path / "tp4.eml")
    assert code == 0, err
    (first,) = tmp_path.glob("*.xlsx")
    before = md5(first)
    code, out, err = cli(*MAIL, "--eml", tmp_path / "tp8.eml", "--tp", "8")
    assert code == 0, err
    assert md5(first) == before                      # the earlier TP 4 workbook is as it was
    (second,) = set(tmp_path.glob("*.xlsx")) - {first}
    assert second.name == first.stem + "-2.xlsx" and str(second) in out


# --- currency and SOURCE_DATE_EPOCH ---------------------------------------------------------------------------


@pytest.mark.parametrize("code, words", [("XYZ", "is not an ISO 4217 currency code (got 'XYZ')"),
                                         ("", "currency is empty"), ("  ", "currency is empty")])
def test_F05_F15_currency_must_be_iso_4217(tmp_path, code, words):
    refused(["build", "-o", tmp_path / "f.xlsx", "--currency", code], 2, "'--currency'", words)
    assert not (tmp_path / "f.xlsx").exists()


def test_currency_table_is_iso_4217_list_one():
    from inference_ledger.formulas.finance import SYMBOLS, currency_codes

    codes = currency_codes()
    assert {"USD", "EUR", "JPY", "GBP", "CHF", "XAF"} <= codes and not {"XYZ", "XXX", "XTS", "XAU"} & codes
    assert set(SYMBOLS) <= codes
    assert 150 < len(codes) < 200          # ISO 4217 List One holds about 180 codes, metals and test codes included


@pytest.mark.parametrize("value", ["abc", "-99999999999", "99999999999999", "1.5", ""])
def test_F08_F10_bad_source_date_epoch_named(tmp_path, monkeypatch, value):
    if value == "":
        monkeypatch.setenv("SOURCE_DATE_EPOCH", "  ")
    else:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    refused(["build", "-o", tmp_path / "f.xlsx"], 2, "SOURCE_DATE_EPOCH", "315532800 (1980-01-01)", "(2107-12-31)")
    assert not (tmp_path / "f.xlsx").exists()


def test_source_date_epoch_range_ends_are_accepted():
    from inference_ledger.workbook.cells import SOURCE_DATE_RANGE, source_date

    lo, hi = SOURCE_DATE_RANGE
    assert source_date(str(lo)).year == 1980 and source_date(str(hi)).year == 2107


# --- model overrides checked against each other ----------------------------------------------------------------

PLAN = ["plan", "--gpu", "h100"]


@pytest.mark.parametrize("row, argv, option, words", [
    ("N04", ["--model", "llama-3.1-70b", "--experts-per-token", "4"], "--experts-per-token",
     "experts_per_token 4 needs a mixture-of-experts model: llama-3.1-70b is dense"),
    ("N05", ["--model", "mixtral-8x7b", "--experts-per-token", "9", "--tp", "2"], "--experts-per-token",
     "experts per token 9 must be within 1..8 (the routed experts of mixtral-8x7b)"),
    ("N07", ["--model", "llama-3.1-70b", "--tp", "4", "--kv-heads", "3"], "--tp",
     "TP 4 is not a multiple of the 3 KV heads of llama-3.1-70b"),
    ("N11", ["--model", "llama-3.1-70b", "--num-experts", "8"], "--num-experts",
     "num_experts 8 needs a mixture-of-experts model: llama-3.1-70b is dense"),
    ("N12", ["--model", "llama-3.1-70b", "--moe-layers", "10"], "--moe-layers",
     "moe_layers 10 needs a mixture-of-experts model: llama-3.1-70b is dense"),
    ("N13", ["--model", "mixtral-8x7b", "--tp", "2", "--experts-per-token", "0"], "--experts-per-token",
     "experts per token 0 must be within 1..8"),
    ("N14", ["--model", "mixtral-8x7b", "--tp", "2", "--moe-layers", "64"], "--moe-layers",
     "MoE layers 64 must be within 1..32 (the layers of mixtral-8x7b)"),
    ("N16", ["--model", "deepseek-v3", "--tp", "8", "--experts-per-token", "300"], "--experts-per-token",
     "experts per token 300 must be within 1..256"),
], ids=lambda x: x if isinstance(x, str) and len(x) == 3 else None)
def test_N_model_overrides_refused(tmp_path, row, argv, option, words):
    refused([*PLAN, *argv, "--json"], 2, f"'{option}'", words)
    # build refuses what plan refuses (N18 for N04), in the same words, before writing anything
    refused(["build", "-o", tmp_path / "n.xlsx", "--gpu", "h100", *argv], 2, words)
    assert not (tmp_path / "n.xlsx").exists()


def test_N18_build_refuses_experts_on_a_dense_model(tmp_path):
    refused(["build", "-o", tmp_path / "n18.xlsx", "--model", "llama-3.1-70b", "--experts-per-token", "4"], 2,
            "experts_per_token 4", "llama-3.1-70b is dense")
    assert not (tmp_path / "n18.xlsx").exists()


def test_consistent_overrides_still_plan():
    code, out, err = cli(*PLAN, "--model", "mixtral-8x7b", "--tp", "2", "--experts-per-token", "8", "--moe-layers",
                         "16", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["experts_per_token"] == 8 and doc["moe_layers"] == 16


def test_N07_same_shape_from_a_config_gets_the_same_refusal(tmp_path):
    cfg = json.loads((catalog.MODELS_DIR / "llama-3.1-70b.json").read_text())
    cfg["num_key_value_heads"] = 3
    (tmp_path / "llama-3.1-70b-kv3.json").write_text(json.dumps(cfg))
    words = "TP 4 is not a multiple of the 3 KV heads of"
    refused(["plan", "--config", tmp_path / "llama-3.1-70b-kv3.json", "--gpu", "h100", "--tp", "4"], 2, "'--tp'", words)
    refused([*PLAN, "--model", "llama-3.1-70b", "--tp", "4", "--kv-heads", "3"], 2, "'--tp'", words)
    # a model given as numbers follows the same KV-heads rule
    refused(["plan", "--params", "70e9", "--layers", "80", "--kv-heads", "3", "--head-dim", "128", "--tp", "4"], 2,
            "TP 4 is not a multiple of the 3 KV heads")


def test_model_rules_are_rendered_on_the_checks_sheet():
    """Each rule is one definition: evaluated on numbers by the resolver, rendered as the Checks sheet's formula."""
    from inference_ledger.core.expr import Sym
    from inference_ledger.workbook import checks

    labels = {c.label for c in checks.PLAN_INTEGRITY}
    for rule in resolve.MODEL_RULES:
        assert rule.label in labels
        formula = rule.condition(*(Sym(p) for p in rule.params)).text
        assert formula.startswith("OR(") and all(p in formula for p in rule.params)
    mixtral = dict(num_experts=8, experts_per_token=2, moe_layers=32, num_layers=32, kv_heads=8, tp=2, mla_latent_dim=0)
    assert all(r.holds(mixtral) for r in resolve.MODEL_RULES)
    broken = {"experts_per_token": 9, "moe_layers": 64, "kv_heads": 3}
    for rule in resolve.MODEL_RULES:
        assert not rule.holds(mixtral | {rule.option: broken[rule.option], "tp": 4 if rule.option == "kv_heads" else 2})
    dense = dict(mixtral, num_experts=0, experts_per_token=0, moe_layers=0)
    assert all(r.holds(dense) for r in resolve.MODEL_RULES)
    assert not resolve.MODEL_RULES[0].holds(dense | {"experts_per_token": 4})


def test_catalog_models_pass_the_model_rules():
    for m in catalog.load_models():
        values = {n: getattr(m, n) for n in ("num_experts", "experts_per_token", "moe_layers", "num_layers",
                                             "kv_heads", "mla_latent_dim")} | {"tp": 1}
        assert resolve.rules_problem(m, values) is None, m.id


# --- the Excel functions: an error cell never echoes a huge value ----------------------------------------------


def test_X30_error_cell_does_not_echo_a_huge_id():
    (cell,) = excel.MODEL_SPEC("x" * 100_000, "num_params")[0]
    assert cell.startswith("#VALUE! unknown model") and "100,000 characters" in cell
    assert cell.count("x") <= 100 and len(cell) <= len("#VALUE! ") + _xl.MESSAGE_LIMIT
    (cell,) = excel.PLAN("llama-3.1-70b", "h100", "k" * 5000)[0]
    assert cell.count("k") <= 100


# --- the Python functions validate as the Excel functions do ---------------------------------------------------

PYTHON = [
    ("P01", "kv_bytes", (80, 8, 128, -4096)),
    ("P02", "kv_bytes", (80, 8, 128, math.nan)),
    ("P03", "kv_bytes", (80, 8, 128, math.inf)),
    ("P04", "kv_bytes", ("80", 8, 128, 4096)),
    ("P05", "kv_bytes", (80, 8, 128, 4096, 0)),
    ("P06", "weights_bytes", (-70e9,)),
    ("P07", "weights_bytes", (math.nan,)),
    ("P08", "flops_request", (70e9, -1, 512)),
    ("P09", "decode_tpot", (70e9, 2, 0)),
    ("P10", "decode_tpot", (70e9, 2, -3e12)),
    ("P11", "decode_tpot", (70e9, 2, math.nan)),
    ("P19", "kv_bytes", (80, 8, 128, True)),
    ("P20", "flops_request", (1e300, 1e300, 1e300)),
    ("zero that divides", "sequences_in_kv_tokens", (1e6, 0)),
]


@pytest.mark.parametrize("row, name, args", PYTHON, ids=[r for r, *_ in PYTHON])
def test_P_python_functions_refuse_with_the_excel_words(row, name, args):
    with pytest.raises(ValueError) as e:
        getattr(udfs, name)(*args)
    message = str(e.value)
    assert isinstance(e.value, LedgerInputError) and "\n" not in message
    (cell,) = getattr(excel, name.upper())(*args)[0]
    assert cell == f"#VALUE! {message}"
    import inference_ledger

    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        getattr(inference_ledger, name)(*args)


def test_python_functions_keep_the_seed_values_and_arrays():
    import numpy as np

    assert udfs.kv_bytes(80, 8, 128, 4096) == 1_342_177_280 and isinstance(udfs.kv_bytes(80, 8, 128, 4096), float)
    assert udfs.decode_tpot(70e9, 2, 3e12) == pytest.approx(0.0466667, rel=1e-5)
    got = udfs.kv_bytes(80, 8, 128, np.array([1, 4096]))
    assert got.tolist() == [327_680, 1_342_177_280]
    with pytest.raises(ValueError, match=r"seq_len .* \(got -1\)"):
        udfs.kv_bytes(80, 8, 128, np.array([1, -1]))


def test_plan_graph_formulas_stay_pure():
    """The plan graph's functions take numbers, arrays and formula expressions, unchecked."""
    from inference_ledger.formulas import ledger
    from inference_ledger.core.expr import Sym

    assert ledger.kv_bytes(80, 8, 128, -1) == -327_680          # the formula itself: no range check
    assert "B1" in ledger.kv_bytes(Sym("A1"), Sym("A2"), Sym("A3"), Sym("B1"), Sym("C1")).text
    assert udfs.kv_bytes.pure is ledger.kv_bytes


def test_fifo_as_ca_bundle_refused_before_connecting(tmp_path):
    os.mkfifo(tmp_path / "ca.pem")
    r = il("email", "--to", "a@example.com", "--from", "me@example.com", "--smtp", "127.0.0.1:9", "--starttls",
           "--cafile", tmp_path / "ca.pem")
    assert r.returncode == 2, r.stderr
    assert_one_line(r.stderr, "ca.pem", "FIFO")


def _named(wb, name: str):
    sheet, ref = wb.defined_names[name].attr_text.split("!")
    return wb[sheet.strip("'")][ref.replace("$", "")]


def _check_row(wb, label: str):
    ws = wb["Checks"]
    return next(ws.cell(r, 3) for r in range(1, ws.max_row + 1) if ws.cell(r, 2).value == label)


@pytest.mark.libreoffice
def test_model_rules_recalculate_in_libreoffice(soffice, tmp_path):
    """The rules' Checks rows pass for a catalog MoE model and fail, with the master check, for an experts-per-token
    override outside 1..num_experts typed into the Plan sheet (LibreOffice recalculates; no error value)."""
    from openpyxl import load_workbook

    from inference_ledger.workbook.recalc import recalculate

    built = tmp_path / "mix.xlsx"
    code, _, err = cli("build", "-o", built, "--model", "mixtral-8x7b", "--gpu", "h100", "--tp", "2")
    assert code == 0, err
    labels = [r.label for r in resolve.MODEL_RULES]
    got = load_workbook(recalculate(built, tmp_path / "ok"), data_only=True)
    assert [_check_row(got, lab).value for lab in labels] == [1, 1, 1]
    assert _named(got, "master_check").value == 1
    wb = load_workbook(built)
    lookup = _named(wb, "experts_per_token")   # =IF(ISBLANK(D66), the catalog's value, D66): D is the override
    assert lookup.value.startswith("=IF(ISBLANK(") and lookup.offset(column=2).coordinate in lookup.value
    override = lookup.offset(column=2)
    override.value = 9                     # 9 of Mixtral's 8 experts (N05 typed into the workbook)
    bad = tmp_path / "ept9.xlsx"
    wb.save(bad)
    got = load_workbook(recalculate(bad, tmp_path / "bad"), data_only=True)
    assert _named(got, "experts_per_token").value == 9
    assert [_check_row(got, lab).value for lab in labels] == [0, 1, 1]
    # the master check no longer passes (its value is 0; cells that compute with 9 of 8 experts may propagate an
    # error value into it: turning those into a verdict is the workbook's wiring, outside these rules)
    assert _named(got, "master_check").value != 1


def test_sweep_list_item_past_the_float_range_refused(tmp_path):
    """`--context 1e999` parses to infinity: one line naming the option, exit 2 (it was an OverflowError traceback)."""
    out = tmp_path / "s.csv"
    refused(["sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--context", "1e999", "-o", out], 2,
            "--context", "1e999", "whole number")
    assert not out.exists()
