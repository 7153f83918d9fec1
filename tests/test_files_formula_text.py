"""No string from data is ever written as a formula, in any writer, with or without lxml.

Data strings (scenario labels, model ids and names, config fields) starting with each
character a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"): = + - @
tab and carriage return.  The openpyxl workbook is built twice: in this process, with lxml (openpyxl's lxml
writer), and in a child process with lxml blocked (its ElementTree writer).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest

from inference_ledger.core.files import FORMULA_TRIGGERS, csv_text
from inference_ledger.catalogs import catalog

from test_cli_rules import cli

LABELS = ['=HYPERLINK("http://example.com","click")', "+1+2", "-1+2", "@SUM(1,2)", "\t=1+2", "\r=1+2"]

def read_back(path, labels: list[str]) -> dict:
    """Where the labels landed in the workbook at ``path``: each text cell holding one, any formula holding one, and
    whether a HYPERLINK formula was written; and which XML writer openpyxl used."""
    import openpyxl.xml

    # XML parsers read a bare carriage return as a line feed (XML 1.0, 2.11); compare the labels that way
    labels = [label.replace("\r", "\n") for label in labels]
    wb = openpyxl.load_workbook(path)
    found, formulas = [], []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.replace("\r", "\n") in labels:
                    found.append([ws.title, c.coordinate, c.value.replace("\r", "\n"), c.data_type])
                if c.data_type == "f" and any(label.strip() in str(c.value) for label in labels):
                    formulas.append([ws.title, c.coordinate, c.value])
    with zipfile.ZipFile(path) as z:
        xml = "".join(z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/"))
    return {"lxml": openpyxl.xml.LXML, "found": found, "formulas": formulas, "hyperlink_formula": "<f>HYPERLINK" in xml}


#: the leg without lxml: a child process in which the import of lxml fails (openpyxl falls back to ElementTree)
CHILD = r"""
import json, sys
sys.modules["lxml"] = None
sys.path.insert(0, "tests")
from inference_ledger.cli import run
from test_files_formula_text import read_back
try:
    run(["build", "-o", sys.argv[1], "--scenarios", sys.argv[2], "--config", sys.argv[3]])
except SystemExit as e:
    assert e.code == 0, e.code
print(json.dumps(read_back(sys.argv[1], json.loads(sys.argv[4]))))
"""


def _inputs(tmp: Path) -> tuple[Path, Path]:
    scenarios = tmp / "scenarios.csv"
    with scenarios.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "model", "gpu", "tp"])
        for label in LABELS:
            w.writerow([label, "llama-3.1-8b", "h100-sxm", 1])
    config = tmp / "cfg.json"
    cfg = json.loads((catalog.MODELS_DIR / "llama-3.1-8b.json").read_text())
    cfg["_name_or_path"] = LABELS[0]
    config.write_text(json.dumps(cfg))
    return scenarios, config


def _no_lxml_build(folder: Path) -> tuple[list[str], dict]:
    """The leg without lxml: the child process builds plan.xlsx from the inputs and prints what it read back."""
    scenarios, config = _inputs(folder)
    env = {**os.environ, "OPENPYXL_LXML": "True"}
    return [sys.executable, "-c", CHILD, str(folder / "plan.xlsx"), str(scenarios), str(config), json.dumps(LABELS)], env


#: started with the session (conftest.py), so its build runs beside the tests before this file's
EARLY_CHILDREN = {"no-lxml": _no_lxml_build}


@pytest.mark.parametrize("leg", ["lxml", "no-lxml"])
def test_workbook_writes_data_strings_as_text(tmp_path, leg, early_child):
    if leg == "lxml":   # this process's writer (the suite runs with lxml)
        scenarios, config = _inputs(tmp_path)
        out = tmp_path / "plan.xlsx"
        code, _, err = cli("build", "-o", out, "--scenarios", scenarios, "--config", config)
        assert code == 0, err
        got = read_back(out, LABELS)
    else:
        proc, _ = early_child("no-lxml")
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["lxml"] is (leg == "lxml")                      # the leg ran the writer it names
    assert got["formulas"] == [] and not got["hyperlink_formula"]
    on_scenarios = {v for sheet, _, v, _ in got["found"] if sheet == "Scenarios"}
    assert on_scenarios == {x.replace("\r", "\n") for x in LABELS}   # every label ...
    assert {t for *_, t in got["found"]} == {"s"}               # ... and every one a text cell
    assert any(sheet == "Models" and v == LABELS[0] for sheet, _, v, _ in got["found"])   # a config field too


@pytest.fixture
def odd_models(tmp_path, monkeypatch):
    """A model catalog whose ids start with each formula trigger (config files are named after their id), and the
    default model, whose catalog facts every plan starts from (the test passed only after another test had read
    them from the real catalog)."""
    from inference_ledger.catalogs.catalog_facts import DEFAULT_MODEL

    folder = tmp_path / "models"
    folder.mkdir()
    ids = [f"{c}cmd{k}" for k, c in enumerate(FORMULA_TRIGGERS)]
    for mid in ids:
        shutil.copy(catalog.MODELS_DIR / "llama-3.1-8b.json", folder / f"{mid}.json")
    shutil.copy(catalog.MODELS_DIR / f"{DEFAULT_MODEL}.json", folder)
    monkeypatch.setattr(catalog, "MODELS_DIR", folder)
    return ids


def test_sweep_and_recommend_write_ids_as_text(tmp_path, odd_models):
    models = ",".join(m.strip() for m in odd_models)
    for out in (tmp_path / "s.csv", tmp_path / "s.xlsx"):
        code, _, err = cli("sweep", "-m", models, "-g", "h100-sxm", "--tp", "1", "--concurrency", "1", "-o", out)
        assert code == 0, err
    code, _, err = cli("recommend", "-m", models, "--qps", "1", "-g", "h100-sxm", "--tp", "1", "--top", "20",
                       "-o", tmp_path / "r.csv")
    assert code == 0, err
    for name in ("s.csv", "r.csv"):
        rows = list(csv.DictReader(io.StringIO((tmp_path / name).read_bytes().decode(), newline="")))
        assert {r["model"] for r in rows} == {"'" + m for m in odd_models}
        assert {r["tp"] for r in rows} == {"1"}                 # whole numbers as 1, not 1.0
    ws = openpyxl.load_workbook(tmp_path / "s.xlsx")["Sweep"]
    cells = [ws.cell(row=r, column=1) for r in range(2, ws.max_row + 1)]
    assert sorted(c.value for c in cells) == sorted(odd_models) and {c.data_type for c in cells} == {"s"}
    with zipfile.ZipFile(tmp_path / "s.xlsx") as z:
        formulas = re.findall(r"<f[^>]*>([^<]*)</f>", z.read("xl/worksheets/sheet1.xml").decode())
    assert formulas and not [f for f in formulas if "cmd" in f]


@pytest.mark.parametrize("text, written", [
    ("=1+2", "'=1+2"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(1)", "'@SUM(1)"), ("\t=1", "'\t=1"), ("\r=1", "'\r=1"),
    ("h100-sxm", "h100-sxm"), ("", ""), ("1=1", "1=1"),
])
def test_csv_text_prefixes_formula_triggers(text, written):
    assert csv_text(text) == written


def test_validate_csv_row_ids_stay_text(tmp_path):
    data = tmp_path / "m.csv"
    data.write_text("id,model_id,gpu_id,engine_id,tp,weights_gib\n=1+2,llama-3.1-8b,h100-sxm,vllm,1,14.99\n")
    code, out, err = cli("validate", "--data", data, "--format", "csv")
    assert code in (0, 1), err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[1][0] == "'=1+2"
