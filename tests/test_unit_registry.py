"""The unit registry (inference_ledger/data/units.csv, unit_formats.csv): one definition read by every reader."""

from __future__ import annotations

import pytest

from inference_ledger.core import unit_registry
from inference_ledger.cli.plan import parse_quantity, shown_default
from inference_ledger.io.report import human
from inference_ledger.workbook import style
from inference_ledger.workbook.cells import second_view


@pytest.mark.parametrize("text, unit, value", [
    ("80GB", "B", 80e9), ("40GiB", "B", 40 * 2**30), ("1.5 TiB", "B", 1.5 * 2**40), ("3.35TB/s", "B/s", 3.35e12),
    ("989TFLOPS", "FLOP/s", 989e12), ("1.2pflop/s", "FLOP/s", 1.2e15), ("70B", "params", 70e9), ("8k", "params", 8e3),
    ("500ms", "s", 0.5), ("250us", "s", 250e-6), ("90%", "fraction", 0.9), ("1,024 tokens", "tokens", 1024),
    ("$2.50/GPU-h", "$/GPU-h", 2.5),
])
def test_cli_values_parse_by_the_registry(text, unit, value):
    assert parse_quantity(text, unit) == pytest.approx(value, rel=1e-12)


def test_a_wrong_suffix_names_the_registry_suffixes():
    with pytest.raises(ValueError) as e:
        parse_quantity("40XB", "B")
    assert str(e.value) == "'40XB' is not a number in B (suffixes: b, kb, mb, gb, tb, kib, mib, gib, tib)"


def test_a_unit_added_to_the_registry_is_parsed_and_shown(tmp_path):
    """The CLI has no suffix table of its own: a row appended to units.csv is a suffix the next parse accepts."""
    extra = tmp_path / "units.csv"
    extra.write_text(unit_registry.UNITS_CSV.read_text(encoding="utf-8")
                     + "PB,B,1e15,1,petabyte,0,1e13,,SI peta\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(unit_registry, "UNITS_CSV", extra)
        unit_registry.units.cache_clear()
        try:
            assert parse_quantity("2PB", "B") == 2e15 and parse_quantity("3 petabyte", "B") == 3e15
            assert shown_default(2e15, "B") == "2PB"   # rank 0 comes before GiB
        finally:
            unit_registry.units.cache_clear()
    with pytest.raises(ValueError):
        parse_quantity("2PB", "B")


@pytest.mark.parametrize("x, unit, option", [
    (80e9, "B", "80GB"), (79.1875 * 2**30, "B", "79.1875GiB"), (0.5e9, "B", "0.5GB"), (12, "B", "12 B"),
    (3.35e12, "B/s", "3.35TB/s"), (989e12, "FLOP/s", "989TFLOP/s"), (0.5, "s", "500ms"), (2, "s", "2s"),
    (0.9, "fraction", "90%"), (70.5537e9, "params", "70.5537B"), (2.5, "$/GPU-h", "$2.50/GPU-h"),
    (1, "stages", "1 stage"), (2, "stages", "2 stages"), (1, "GPUs", "1 GPU"), (1, "all-reduces", "1 all-reduce"),
])
def test_defaults_show_as_the_option_takes_them(x, unit, option):
    assert shown_default(x, unit) == option
    assert parse_quantity(option, unit) == pytest.approx(x, rel=1e-6)   # what the help shows, the option takes


@pytest.mark.parametrize("x, unit, text", [
    (80e9, "B", "80.00 GB (74.51 GiB)"), (5e8, "B", "500.0 MB (476.8 MiB)"), (512, "B", "512 B"),
    (327680, "B/token", "327,680 B/token (320.0 KiB)"), (1.5e-5, "s", "15.00 µs"), (5.5664e-8, "s", "55.66 ns"), (4.13e-10, "s", "0.413 ns"), (2.5, "s", "2.500 s"),
    (0.925, "fraction", "92.5%"), (0.08, "fraction/year", "8.0%/year"), (1, "1/0", "yes"),
    (33113.4, "$/month", "$33,113/month"), (0.0123, "$/Mtok", "$0.0123/Mtok"),
    # a count of one takes its noun's singular ('1 stages' in the table and 'Default: 1 stages.' in the help before)
    (1, "stages", "1 stage"), (1, "replicas", "1 replica"), (3, "replicas", "3 replicas"), (1, "s", "1.000 s"),
    (1, "tokens/s", "1 tokens/s"), (1, "x", "1 x"),
    # a small fraction keeps three significant digits ('-0.00 s2' before)
    (-0.000764023, "s2", "-0.000764 s2"), (2.5, "x", "2.50 x"), (0.0123, "x", "0.01 x"),
])
def test_the_plan_table_text(x, unit, text):
    assert human(x, unit) == text


def test_excel_formats_come_from_the_registry_with_the_build_currency():
    assert style.number_format("B", 80e9) == '#,##0.00,,," GB"' and style.shown_as("B", 80e9) == "GB (1e9 B)"
    assert style.number_format("B", 512) == '#,##0" B"' and style.shown_as("B", 512) == "B"
    # a tiny quantity keeps its unit in the format, whatever the unit: seconds and the kernel model's s2 alike
    assert style.number_format("s", 1.5e-5) == '#,##0.0000000" s"'
    assert style.number_format("s2", 1.5e-12) == '#,##0.' + "0" * 14 + '" s2"'
    before = dict(style.CURRENCY)
    style.set_currency("EUR", "€")
    try:
        assert style.number_format("$/month", 1e4) == '"€"#,##0' and style.shown_as("$/month") == "EUR/month"
    finally:
        style.set_currency(before["code"], before["symbol"])


@pytest.mark.parametrize("name, seconds, shown, expected", [
    ("a_duration", 0.0163, "ms", 16.3), ("a_duration", 59.0, "ms", 59_000.0),
    ("a_duration", 90.0, "min", 1.5), ("a_duration", 7200.0, "h", 2.0), ("a_duration", -90.0, "min", -1.5),
    ("host_allreduce_floor_seconds", 28.9e-6, "µs", 28.9), ("allreduce_latency_seconds", 15e-6, "µs", 15.0)])
def test_a_durations_second_view_is_in_the_unit_a_reader_reads_it_in(name, seconds, shown, expected):
    """The workbook's 'Also' column: microseconds under a millisecond (the all-reduce floors read '0.0 ms' before),
    milliseconds under a minute, then minutes, then hours (90 s is 1.5 min, not 90,000 ms), each a conversion by a
    named constant."""
    conv, unit, fmt = second_view(name, "s", seconds)
    assert unit == ("us" if shown == "µs" else shown) and conv(seconds) == pytest.approx(expected)
    assert fmt.endswith(f'" {shown}"')


def test_a_line_some_model_has_over_a_millisecond_stays_in_milliseconds():
    """The TPOT floor is 16 ms for the default plan and under a millisecond for the catalog's smallest model: its
    Also view is chosen for the line (ms), not for the model picked, so 16 ms never reads as 16,039 µs."""
    from inference_ledger.workbook.cells import _catalog_range

    lo, hi = _catalog_range()["tpot_floor_seconds"]
    assert lo < 1e-3 <= hi
    assert second_view("tpot_floor_seconds", "s", lo)[1] == "ms" and second_view("tpot_floor_seconds", "s", 0.016)[1] == "ms"


def test_every_count_a_plan_shows_has_a_number_format():
    """A count with no row in unit_formats.csv showed in General: 255.99999111 experts on the Bandwidth sheet (the
    expected number of distinct experts a DeepSeek-V3 chunk touches). Every unit of a plan input or line has a format
    but codes (shown with their words); seconds per byte show three significant digits (a few picoseconds)."""
    from inference_ledger.graph import plan

    units = {x.unit for x in (*plan.LINES, *plan.INPUTS)}
    assert {u for u in units if unit_registry.excel_format(u, 1.0, "$") is None} == {"code"}
    assert style.number_format("experts", 255.99999111253183) == "#,##0.0"   # shows 256.0
    assert style.number_format("requests", 1000) == "#,##0"
