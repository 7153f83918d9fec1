"""Own vs rent, the capacity timeline and the sensitivity grid: hand-derived values and LibreOffice.

The hand-derived example is computed in the comments (a calculator's arithmetic, not the
code's); LibreOffice recalculates the built workbook after its inputs are changed in the
file, and the timeline and the verdicts must follow.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from openpyxl import load_workbook

from inference_ledger.catalogs import catalog
from inference_ledger.formulas import finance, finance_forecast
from inference_ledger.graph import plan
from inference_ledger.workbook.build import check_rows, make_context
from inference_ledger.workbook.context import xname
from inference_ledger.workbook.recalc import recalculate

from renders import opened
from test_cli_rules import cli

pytestmark = pytest.mark.filterwarnings("ignore:.*extension is not supported:UserWarning")

ROOT = Path(__file__).resolve().parents[1]

# One 8x H100 SXM server bought for $280,000: $35,000 per GPU.
# Power: 700 W GPU TDP + 575 W of the server per GPU (DGX H100: (10.2 kW - 8 x 700 W) / 8) = 1.275 kW.
# PUE 1.3, $0.10 per kWh, hosting $150 per kW-month, support and software 10% of capex a year,
# depreciated over 5 years at an 8% cost of capital, used 60% of the hours; on demand $3.78/GPU-h.
HAND = dict(server_price_per_gpu=280_000 / 8, gpu_power_w=700, server_power_w_per_gpu=575, pue=1.3,
            electricity_price=0.10, hosting_per_kw_month=150, support_fraction=0.10, depreciation_years=5,
            cost_of_capital=0.08, utilization=0.6, price_per_gpu_hour=3.78)
# 1.08^5 = 1.469328077; 1 / 1.469328077 = 0.680583197; CRF = 0.08 / (1 - 0.680583197) = 0.08 / 0.319416803
#   = 0.250456455 per year
# capital  35,000 x 0.250456455        =  8,765.98 $/year
# support  35,000 x 0.10               =  3,500.00 $/year
# hosting  1.275 kW x $150 x 12 months =  2,295.00 $/year
# fixed                                = 14,560.98 $/year  -> / 8,760 h = 1.662212 $ per hour of the year
# energy   1.275 kW x 1.3 x $0.10      =  0.16575 $ per working hour
# owned per used hour at 60%: 1.662212 / 0.6 + 0.16575 = 2.770353 + 0.16575 = 2.936103 -> $2.94
# break-even vs $3.78 on demand: 1.662212 / (3.78 - 0.16575) = 1.662212 / 3.61425 = 0.459905 -> 45.99%
# payback: running cash a month = 3,500 / 12 + 1.275 x 150 + 0.16575 x 730 x 0.6 = 291.67 + 191.25 + 72.60 = 555.52;
#   on demand a month = 3.78 x 730 x 0.6 = 1,655.64; 35,000 / (1,655.64 - 555.52) = 35,000 / 1,100.12 = 31.81 months


def _hand_plan() -> dict:
    inputs = plan.defaults() | HAND
    return plan.evaluate(inputs)


def test_hand_derived_owned_gpu_hour_and_break_even():
    v = _hand_plan()
    assert round(float(v["capital_recovery_factor"]), 6) == 0.250456
    assert round(float(v["owned_fixed_cost_per_gpu_year"]), 2) == 14_560.98
    assert round(float(v["owned_energy_cost_per_gpu_hour"]), 5) == 0.16575
    assert round(float(v["owned_cost_per_gpu_hour"]), 2) == 2.94
    assert round(float(v["breakeven_utilization"]), 4) == 0.4599
    assert v["owned_beats_rent"] == 1  # 60% >= 45.99%
    assert round(float(v["payback_months"]), 2) == 31.81
    # renting: 1-year reserved at 30% off, paid for every hour, per used hour at 60%: 3.78 x 0.7 / 0.6 = 4.41
    assert round(float(v["reserved_1y_cost_per_gpu_hour"]), 2) == 4.41
    # the cheapest of on demand 3.78, 1-year 4.41, 3-year 3.78 x 0.55 / 0.6 = 3.465 and owned 2.936: owned
    assert math.isclose(v["best_cost_per_gpu_hour"], v["owned_cost_per_gpu_hour"])


def test_break_even_means_equal_cost_per_used_hour():
    """At the break-even utilization owning costs exactly the on-demand price per used hour."""
    v = _hand_plan()
    at = finance.owned_cost_per_gpu_hour(v["owned_fixed_cost_per_gpu_year"], v["owned_energy_cost_per_gpu_hour"],
                                    v["breakeven_utilization"])
    assert math.isclose(at, 3.78, rel_tol=1e-12)


def test_plan_json_has_the_finance_keys():
    code, out, err = cli("plan", "--json", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--electricity-price", "0.10",
                         "--pue", "1.3", "--support-fraction", "0.1", "--utilization", "0.6")
    assert code == 0, err
    d = json.loads(out)
    for key in ("owned_cost_per_gpu_hour", "owned_cost_per_million_output_tokens", "breakeven_utilization",
                "reserved_1y_cost_per_gpu_hour", "reserved_3y_cost_per_gpu_hour", "spot_price_per_gpu_hour",
                "payback_months", "best_cost_per_million_output_tokens"):
        assert isinstance(d[key], float), key
    # the catalog's H100 row: $270,000 / 8 = $33,750 per GPU; 700 W + 575 W; on demand $3.78
    assert d["server_price_per_gpu"] == 33_750 and d["price_per_gpu_hour"] == 3.78
    # same hand arithmetic as above at $33,750: fixed = 33,750 x (0.250456 + 0.1) + 2,295 = 14,122.66 $/year
    # -> 1.612175 $/h; / 0.6 + 0.16575 = 2.85271 -> $2.85
    assert round(d["owned_cost_per_gpu_hour"], 2) == 2.85


def test_gpu_costs_catalog_covers_every_gpu_with_sources():
    costs = {c.id: c for c in finance.load_gpu_costs()}
    for g in catalog.load_gpus():
        c = costs[g.id]
        assert c.source and c.date and c.price_source and c.price_date, g.id
        assert c.server_price_per_gpu > 0 and c.price_public in (0, 1)
        if c.price_public == 0:
            assert "no public" in c.price_source, g.id  # an estimate says so
        if g.tdp_w:
            assert c.gpu_power_w == g.tdp_w, g.id  # the GPU's TDP, as the GPUs sheet has it
    with open(finance.GPU_COSTS_CSV, encoding="utf-8") as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert len(rows) == len(costs)


def test_an_estimated_price_is_flagged_on_the_checks_sheet():
    def finding(gpu):
        rows = check_rows(make_context(gpu=gpu))
        return [v for g, label, *_r, v in rows if "public figure" in label][0]

    assert finding("h100-sxm") == 1
    assert finding("h200") == 0  # no public server price: an estimate


def test_a_placeholder_hourly_price_is_flagged_on_the_checks_sheet():
    """MI355X's hourly price is the catalog's placeholder (gpus.csv says so in its price_source); a price typed over
    it on the Plan is the user's.  The cell's formula reads the GPUs sheet, so a workbook mailed on still knows."""
    def finding(**options):
        rows = check_rows(make_context(**options))
        return [(v, formula) for g, label, _w, formula, v in rows if "public list price" in label][0]

    assert finding(gpu="h100-sxm")[0] == 1
    value, formula = finding(gpu="mi355x", model="llama-3.1-8b", tp=1)
    assert value == 0 and formula.value == 0, formula.text
    assert 'LEFT(INDEX(GPU_TABLE,MATCH(gpu_id,GPU_IDS,0),MATCH("price_source",GPU_FIELDS,0)),LEN("placeholder"))' \
        in formula.text
    assert finding(gpu="mi355x", model="llama-3.1-8b", tp=1, price_per_gpu_hour=3.0)[0] == 1


@pytest.fixture(scope="module")
def built(workbooks):
    return workbooks()


def test_the_price_lookup_is_written_once_and_the_summary_reads_it(built):
    """The placeholder-price lookup was written twice, in the Checks finding and in a hidden Summary cell; the
    Summary's price sentence now reads the finding's cell by name."""
    wb = load_workbook(built[0])
    lookups = [(ws.title, c.coordinate) for ws in wb for row in ws.iter_rows() for c in row
               if isinstance(c.value, str) and c.value.startswith("=") and '"price_source"' in c.value]
    finding = _cell(wb, "price_listed")
    assert lookups == [("Checks", finding.coordinate)]
    assert wb["Checks"].cell(finding.row, 2).value == "Hourly price of the chosen GPU is a public list price"
    said = [c.value for row in wb["Summary"].iter_rows() for c in row
            if isinstance(c.value, str) and c.value.startswith("=IF(price_listed=1,")]
    assert len(said) == 1


def _cell(wb, name):
    (sheet, coord), = list(wb.defined_names[name].destinations)
    return wb[sheet][coord.replace("$", "")]


def _row(ws, label):
    for row in ws.iter_rows(min_col=1, max_col=1):
        if row[0].value == label:
            return row[0].row
    raise KeyError(label)


def test_default_workbook_has_the_finance_sheets_and_charts(built):
    wb = opened(built[0])
    for sheet in ("TCO", "Forecast", "Sensitivity", "GPU costs"):
        assert sheet in wb.sheetnames
    charts = sum(len(wb[s]._charts) for s in ("TCO", "Forecast", "Sensitivity"))
    assert charts >= 4
    fc = wb["Forecast"]
    assert fc.cell(_row(fc, "Month"), 3 + 35).value is not None  # 36 monthly columns
    # no formula of the new sheets over 300 characters
    for s in ("TCO", "Forecast", "Sensitivity"):
        for row in wb[s].iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith("="):
                    assert len(c.value) <= 300, (s, c.coordinate)


@pytest.mark.libreoffice
def test_growth_and_power_price_changed_in_the_file_move_the_timeline_and_verdicts(built, soffice, tmp_path):
    base = load_workbook(built[0], data_only=True)
    wb = load_workbook(built[0])
    # defaults: owning pays (break-even 44% < 60% utilization) and buying the base wins the forecast
    assert _cell(base, "owned_beats_rent").value == 1
    assert _cell(base, "forecast_verdict").value.startswith("Buy")
    _cell(wb, "growth").value = 0.10
    _cell(wb, "electricity_price").value = 3.0  # $3/kWh: energy alone (1.275 kW x 1.4 x 3 = 5.36 $/h) > on demand
    typed = _row(wb["Forecast"], "Peak QPS typed (optional: overrides the growth)")
    wb["Forecast"].cell(typed, 3 + 1).value = 100  # month 2 typed: 100 QPS
    changed = tmp_path / "changed.xlsx"
    wb.save(changed)
    got = load_workbook(recalculate(changed, tmp_path / "out"), data_only=True)
    fc, fb = got["Forecast"], base["Forecast"]
    r = _row(fc, "GPUs needed (peak + headroom)")
    # month 36 peak: 20 QPS x 1.1^35 x 1.2 headroom, in whole 4-GPU replicas: far above the 5% growth's
    assert fc.cell(r, 3 + 35).value > 2 * fb.cell(r, 3 + 35).value
    assert fc.cell(r, 3).value == fb.cell(r, 3).value  # month 1 is today's load either way
    # month 2 typed at 100 QPS: 100 x 1.2 headroom / QPS per replica, in whole replicas of TP 4
    per_replica, tp = _cell(got, "qps_per_replica").value, _cell(got, "tp").value
    assert fc.cell(r, 3 + 1).value == tp * math.ceil(100 * 1.2 / per_replica)
    # the verdicts turn: energy alone costs more than renting, so owning never pays
    assert _cell(got, "owned_beats_rent").value == 0
    assert _cell(got, "breakeven_utilization").value < 0
    assert _cell(got, "forecast_verdict").value.startswith("Rent")
    assert _cell(got, "forecast_npv_buy").value > _cell(got, "forecast_npv_rent").value
    # and LibreOffice's numbers are the plan's for the new inputs
    inputs = {i.name: _cell(got, xname(i.name)).value for i in plan.INPUTS}
    v = plan.evaluate({k: (float(x) if isinstance(x, (int, float)) else x) for k, x in inputs.items()}, validate=False)
    assert math.isclose(_cell(got, "owned_cost_per_gpu_hour").value, v["owned_cost_per_gpu_hour"], rel_tol=1e-9)
    assert _cell(got, "master_check").value == 1


def test_sensitivity_tornado_rows_are_sorted_by_swing(built):
    ws = opened(built[0], data_only=True)["Sensitivity"]
    for title in ("Swings: Cheapest $/Mtok", "Swings: GPUs needed in the last forecast month"):
        top = _row(ws, title) + 1  # header of the swing table
        swing = {ws.cell(top + i, 1).value: ws.cell(top + i, 4).value for i in range(1, 8)}
        sorted_top = top + 9  # header of the sorted table
        labels = [ws.cell(sorted_top + k, 1).value for k in range(1, 8)]
        assert sorted(labels) == sorted(swing)
        got = [swing[x] for x in labels]
        assert got == sorted(got, reverse=True), title
        # each sorted row's changes are that input's outputs minus the base
        for k, label in enumerate(labels, 1):
            i = list(swing).index(label) + 1
            lo, hi = ws.cell(top + i, 2).value, ws.cell(top + i, 3).value
            assert math.isclose(abs(ws.cell(sorted_top + k, 3).value - ws.cell(sorted_top + k, 2).value),
                                abs(hi - lo), rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.libreoffice
def test_build_options_set_the_timeline_and_the_currency(soffice, tmp_path):
    out = tmp_path / "eur.xlsx"
    run = subprocess.run([sys.executable, "-m", "inference_ledger", "build", "-o", str(out), "--forecast-months", "12",
                          "--growth", "0.1", "--currency", "eur"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    formulas, cached = load_workbook(out), load_workbook(out, data_only=True)
    recalc = load_workbook(recalculate(out, tmp_path / "rc"), data_only=True)
    fc = formulas["Forecast"]
    month = _row(fc, "Month")
    assert fc.cell(month, 3 + 11).value is not None and fc.cell(month, 3 + 12).value is None  # 12 months
    assert _cell(cached, "growth").value == 0.1 and _cell(cached, "forecast_months").value == 12
    assert _cell(cached, "currency_code").value == "EUR" and _cell(cached, "currency_symbol").value == "€"
    money = {c.number_format for ws in formulas.worksheets for row in ws.iter_rows() for c in row
             if "€" in (c.number_format or "") or "$" in (c.number_format or "")}
    assert money and all("€" in f and "$" not in f for f in money)
    bad = []
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith("="):
                    a, b = cached[ws.title][c.coordinate].value, recalc[ws.title][c.coordinate].value
                    same = a == b if isinstance(a, str) or isinstance(b, str) or a is None or b is None else \
                        math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                    if not same:
                        bad.append((ws.title, c.coordinate, a, b))
    assert bad == []
    bad_months = subprocess.run([sys.executable, "-m", "inference_ledger", "build", "-o", str(tmp_path / "x.xlsx"),
                                 "--forecast-months", "0"], capture_output=True, text=True, cwd=ROOT)
    assert bad_months.returncode == 2 and "--forecast-months" in bad_months.stderr
    assert not (tmp_path / "x.xlsx").exists()


def _plan_json(*argv: str) -> dict:
    run = subprocess.run([sys.executable, "-m", "inference_ledger", "plan", *argv, "--json"], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_plan_json_carries_the_forecast_and_its_npv_derived_by_hand():
    """No growth: the peak fleet is the same every month, so renting it all is a level monthly bill, discounted."""
    d = _plan_json("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--growth", "0")
    assert d["forecast_months"] == 36 and d["units"]["forecast_npv_rent"] == "$"
    # GPUs for the peak + headroom, in whole replicas of the plan's QPS per replica, every month
    gpus = d["gpus_per_replica"] * math.ceil(d["target_qps"] * (1 + d["headroom_target"]) / d["qps_per_replica"])
    assert d["forecast_gpus_end"] == gpus
    # 730 h a month (8,760 h / 12) at the on-demand price, paid at the end of month m, discounted at
    # (1 + cost of capital)^(m / 12)
    rent = d["price_per_gpu_hour"] * 730 * gpus
    npv_rent = sum(rent / (1 + d["cost_of_capital"]) ** (m / 12) for m in range(1, 37))
    assert d["forecast_npv_rent"] == pytest.approx(npv_rent, rel=1e-12)
    assert d["forecast_saving"] == pytest.approx(d["forecast_npv_rent"] - d["forecast_npv_buy"], rel=1e-12)
    buy_wins = d["forecast_npv_buy"] < d["forecast_npv_rent"]
    assert d["forecast_verdict"] == (finance_forecast.VERDICT_BUY if buy_wins else finance_forecast.VERDICT_RENT)


@pytest.mark.libreoffice
def test_plan_json_forecast_and_sensitivity_equal_the_sheets_as_libreoffice_computes_them(built, soffice, tmp_path):
    from inference_ledger.io.report import forecast_of, plan_json

    got = load_workbook(recalculate(built[0], tmp_path), data_only=True)
    want = forecast_of(built[1])
    assert len(want) == 9
    for key, v in want.items():
        if isinstance(v, str):
            assert _cell(got, key).value == v, key
        else:
            assert _cell(got, key).value == pytest.approx(v, rel=1e-9), key
    # the swing tables of the Sensitivity sheet: input label | output at -step | at +step | swing | rank
    grid, ws = plan_json(built[1])["sensitivity"], got["Sensitivity"]
    for key, label, _unit in finance_forecast.SENSITIVITY_OUTPUTS:
        if key not in ("best_cost_per_million_output_tokens", "gpus_at_horizon"):
            continue   # the tornado's outputs
        top = _row(ws, f"Swings: {label}") + 1
        for i in range(1, len(finance_forecast.SENSITIVITY_INPUTS) + 1):
            name = next(n for n in finance_forecast.SENSITIVITY_INPUTS if plan.INPUT_BY_NAME[n].label == ws.cell(top + i, 1).value)
            row = grid[key][name]
            assert [ws.cell(top + i, c).value for c in (2, 3, 4)] == pytest.approx(
                [row["low"], row["high"], row["swing"]], rel=1e-9, abs=1e-12), (key, name)
            assert ws.cell(top + i, 5).value == row["rank"], (key, name)
