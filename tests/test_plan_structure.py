"""The plan's machinery, tested on its own: how an input gets its range, the order lines are
evaluated in, the cross-field rules, and what a line depends on.

These run at import time in production (``INPUTS``, ``EVALUATION_ORDER``), so the tests
call the helpers directly with small hand-made inputs and lines whose answers are
known by construction (the mutation run in tests/README.md found them untested).
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

from inference_ledger.graph import plan
from inference_ledger.core.args import ARGS, LedgerInputError
from inference_ledger.core.expr import Sym
from inference_ledger.core.line import (MEMORY, Line, derived, difference, lines_of, product, ratio, shown_with_readers,
                                        total)


# --- _inp: an input's allowed range ---------------------------------------------------------------


def test_an_input_without_an_argument_row_is_any_number_from_0_to_1e18():
    assert "no_such_arg" not in ARGS
    i = plan._inp("no_such_arg", "Label", "B", 7, "Doc.", "gpu")
    assert (i.name, i.label, i.unit, i.default, i.doc, i.group) == ("no_such_arg", "Label", "B", 7, "Doc.", "gpu")
    a = i.arg
    assert (a.name, a.doc, a.unit, a.lo, a.hi, a.lo_inclusive, a.integer, a.default) == \
        ("no_such_arg", "Doc.", "B", 0.0, 1e18, True, False, 7)
    assert a.check(0) == 0 and a.check(1e18) == 1e18
    with pytest.raises(LedgerInputError, match="no_such_arg must be a number >= 0 and <= 1e\\+18"):
        a.check(-1)


def test_explicit_bounds_override_the_argument_row_one_by_one():
    base = ARGS["tp"]
    i = plan._inp("x", "X", "GPUs", 2, "d", "deployment", arg="tp")
    assert (i.arg.lo, i.arg.hi, i.arg.lo_inclusive, i.arg.integer) == (base.lo, base.hi, base.lo_inclusive, base.integer)
    only_lo = plan._inp("x", "X", "GPUs", 2, "d", "deployment", lo=3, arg="tp").arg
    assert (only_lo.lo, only_lo.hi) == (3, base.hi)
    only_hi = plan._inp("x", "X", "GPUs", 2, "d", "deployment", hi=5, arg="tp").arg
    assert (only_hi.lo, only_hi.hi) == (base.lo, 5)
    both = plan._inp("x", "X", "u", 0.5, "d", "g", lo=0, hi=1, integer=False, lo_inclusive=False, arg="tp").arg
    assert (both.lo, both.hi, both.integer, both.lo_inclusive) == (0, 1, False, False)
    assert both.name == "x" and both.default == 0.5
    with pytest.raises(LedgerInputError, match="x must be a number > 0 and <= 1 \\(got 0\\)"):
        both.check(0)


def test_declared_ranges_of_inputs_a_user_meets():
    """Ranges from what the quantity means, hand-written (not read back from the code)."""
    def ok(name, v):
        return plan.INPUT_BY_NAME[name].arg.check(v) == v

    def bad(name, v):
        with pytest.raises(LedgerInputError, match=name):
            plan.INPUT_BY_NAME[name].arg.check(v)

    assert ok("quantized_params", 0) and ok("active_quantized_params", 0)        # a model may quantize nothing
    assert ok("num_experts", 0) and ok("experts_per_token", 0)                    # 0 = dense
    bad("hidden_size", 0), bad("hidden_size", 1.5), bad("hidden_size", 2e6)      # a positive whole width
    bad("vocab_size", 0), bad("vocab_size", 2e8)
    bad("intermediate_size", 0), bad("intermediate_size", 2e7)
    bad("num_experts", -1), bad("num_experts", 2e5), bad("experts_per_token", 2e4)
    assert ok("gpus_per_node", 1) and ok("gpus_per_node", 1024)
    bad("gpus_per_node", 0), bad("gpus_per_node", 1025), bad("gpus_per_node", 2.5)


# --- _evaluation_order: every line after what it uses ---------------------------------------------


def _line(name, *params):
    return Line(name, name, "B", MEMORY, "", lambda *a: sum(a), tuple(params))


def _order_of(monkeypatch, inputs, lines):
    monkeypatch.setattr(plan, "INPUTS", tuple(plan._inp(n, n, "B", 1, "", "g") for n in inputs))
    monkeypatch.setattr(plan, "LINES", tuple(lines))
    monkeypatch.setattr(plan, "LINE_BY_NAME", {l.name: l for l in lines})
    return [l.name for l in plan._evaluation_order()]


def test_lines_are_evaluated_after_the_lines_they_use(monkeypatch):
    # c uses b, b uses a: listed backwards, evaluated forwards; d (inputs only) keeps its place in the first round
    order = _order_of(monkeypatch, ["x"], [_line("c", "b"), _line("b", "a"), _line("a", "x"), _line("d", "x")])
    assert order == ["a", "d", "b", "c"]


def test_an_ordered_plan_keeps_its_display_order(monkeypatch):
    assert _order_of(monkeypatch, ["x", "y"], [_line("a", "x"), _line("b", "a", "y"), _line("c", "a", "b")]) == \
        ["a", "b", "c"]


def test_a_cycle_or_an_unknown_name_is_refused_with_the_names(monkeypatch):
    with pytest.raises(TypeError, match=r"unknown quantities \['nowhere'\].*\['a'\]"):
        _order_of(monkeypatch, ["x"], [_line("a", "x", "nowhere")])
    with pytest.raises(TypeError, match=r"unknown quantities \[\] or form a cycle: \['a', 'b'\]"):
        _order_of(monkeypatch, ["x"], [_line("a", "b"), _line("b", "a")])


def test_the_shipped_plan_is_in_evaluation_order():
    seen = {i.name for i in plan.INPUTS}
    for step in plan.STEPS:   # lines, and each family (of lines over a parameter) once
        assert all(p in seen for p in step.params), step.name
        seen.add(step.name)
    assert len(plan.EVALUATION_ORDER) == len(plan.LINES)
    assert [s for s in plan.STEPS if s.name in plan.LINE_BY_NAME] == list(plan.EVALUATION_ORDER)


# --- cross-field rules ------------------------------------------------------------------------------


@pytest.mark.parametrize("field,value,other,message", [
    ("active_params", 71e9, "num_params", "active_params must be <= num_params"),
    ("quantized_params", 71e9, "num_params", "quantized_params must be <= num_params"),
    ("active_quantized_params", 70e9 + 1, "active_params", "active_quantized_params must be <= active_params"),
    ("sliding_layers", 81, "num_layers", "sliding_layers must be <= num_layers"),
])
def test_a_part_larger_than_its_whole_is_refused_and_equal_is_fine(field, value, other, message):
    v = plan.defaults() | {"num_params": 70e9, "active_params": 70e9, "quantized_params": 70e9,
                           "active_quantized_params": 70e9, "num_layers": 80, "sliding_layers": 0}
    plan.validate_inputs(v | {field: v[other]})                # equal: a whole model quantized, every layer sliding
    with pytest.raises(LedgerInputError, match=message):
        plan.validate_inputs(v | {field: value})
    with pytest.raises(LedgerInputError) as e:
        plan.validate_inputs(v | {field: value})
    assert str(e.value) == message


def test_missing_input_is_named():
    v = plan.defaults()
    del v["head_dim"]
    with pytest.raises(LedgerInputError, match="^head_dim is missing$"):
        plan.validate_inputs(v)


def test_arrays_are_checked_element_by_element():
    v = plan.defaults() | {"concurrency": np.array([1.0, 16.0])}
    assert plan.validate_inputs(v)["concurrency"].tolist() == [1.0, 16.0]
    with pytest.raises(LedgerInputError, match="concurrency"):
        plan.validate_inputs(v | {"concurrency": np.array([1.0, 0.0])})


# --- what a line depends on ----------------------------------------------------------------------------


def test_depends_on_follows_lines_through_other_lines():
    assert plan.depends_on("weights_bytes_per_gpu", "tp")                 # directly
    assert plan.depends_on("weights_bytes_per_gpu", "num_params")         # through weights_bytes
    assert plan.depends_on("weights_bytes_per_gpu", "weights_bytes")      # a line it uses
    assert not plan.depends_on("weights_bytes", "tp")                     # the whole model: no TP
    assert not plan.depends_on("weights_bytes_per_gpu", "concurrency")
    assert plan.dependencies("weights_bytes_per_gpu") == ["weights_bytes", "expert_weights_bytes", "resident_expert_bytes",
                                                          "tp", "gpus_per_stage", "pp", "moe_padding_bytes_per_gpu"]


def test_render_names_what_a_formula_uses():
    formula, used = plan.render("weights_bytes_per_gpu", lambda n: n.upper())
    assert formula.startswith("=") and "WEIGHTS_BYTES" in formula and "TP" in formula
    assert used == plan.dependencies("weights_bytes_per_gpu")


def test_evaluate_without_validation_takes_any_numbers_quietly():
    """A sweep block evaluates rows that cannot run: no exception, no numpy warning, inf/nan in their cells."""
    v = plan.defaults() | {"concurrency": np.array([16.0, 0.0]), "hbm_bw": np.array([3.35e12, 0.0])}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = plan.evaluate(v, validate=False)
    assert out["concurrency"].tolist() == [16.0, 0.0]
    with pytest.raises(LedgerInputError, match="^(concurrency|hbm_bw) must be"):
        plan.evaluate(v)


def test_a_line_that_renders_to_a_number_is_a_bug_named_by_its_line():
    constant = Line("constant", "Constant", "B", MEMORY, "", lambda tp: 1, ("tp",))
    with pytest.raises(TypeError, match="^line constant did not render to a formula$"):
        plan.render(constant, lambda n: n)


# --- derived lines: a formula under the plan's names, one declaration --------------------------------


def _gap(total, part, scale=1):
    return (total - part) * scale


def test_a_derived_line_renames_the_formulas_parameters_and_keeps_a_default():
    fn = derived("spare_bytes", _gap, "Spare", "B", MEMORY, "Budget minus use.", total="kv_budget", scale=None)
    assert fn.plan_line.params == ("kv_budget", "part")                 # 'part' keeps its name, 'scale' its default
    assert fn(10, 4) == 6 and fn(kv_budget=10, part=4) == 6 and fn.plan_line({"kv_budget": 10, "part": 4}) == 6
    assert fn(Sym("B1"), Sym("B2")).text == "(B1-B2)*1"                 # the same call renders the formula
    assert fn.__name__ == "spare_bytes" and fn.formula is _gap and fn.__module__ == __name__


def test_a_derived_line_refuses_an_unknown_parameter_and_a_dropped_one_without_default():
    with pytest.raises(TypeError, match="has no parameter totl"):
        derived("x", _gap, "X", "B", MEMORY, "", totl="a")
    with pytest.raises(TypeError, match="part has no default"):
        derived("x", _gap, "X", "B", MEMORY, "", part=None)
    with pytest.raises(TypeError, match="read the same quantity"):
        derived("x", _gap, "X", "B", MEMORY, "", total="a", part="a")


def test_a_product_line_is_its_operands_multiplied_left_to_right_as_the_function_it_replaces():
    fn = product("kv_peak", ("kv_per_sequence", "concurrency", "layers"), "KV", "B", MEMORY, "KV x sequences x layers.")
    assert fn.plan_line.params == ("kv_per_sequence", "concurrency", "layers") and fn.plan_line.doc == fn.__doc__
    assert fn(3, 4, 5) == 60 and fn(layers=5, concurrency=4, kv_per_sequence=3) == 60
    assert fn(Sym("a"), Sym("b"), Sym("c")).text == "a*b*c" and fn.__name__ == "kv_peak" and fn.__module__ == __name__
    assert total("t", ("a", "b", "c"), "T", "B", MEMORY, "")(Sym("a"), Sym("b"), Sym("c")).text == "a+b+c"
    assert ratio("r", ("a", "b"), "R", "x", MEMORY, "")(6, 4) == 1.5
    assert difference("d", ("a", "b"), "D", "B", MEMORY, "")(Sym("a"), Sym("b") - Sym("c")).text == "a-(b-c)"
    with pytest.raises(TypeError, match="two or more different quantities"):
        product("x", ("a", "a"), "X", "B", MEMORY, "")
    with pytest.raises(TypeError, match="two or more different quantities"):
        total("x", ("a",), "X", "B", MEMORY, "")


def test_lines_of_finds_derived_lines_once_and_refuses_one_bound_to_another_name():
    mod = types.ModuleType("fake_lines")
    mod.a = derived("a", _gap, "A", "B", MEMORY, "")
    mod.a.__module__ = "fake_lines"
    mod.alias = mod.a                                       # the same line under a second name is an error, not twice
    with pytest.raises(TypeError, match="fake_lines.alias is the line a"):
        lines_of(mod)
    del mod.alias
    assert [l.name for l in lines_of(mod)] == ["a"]


def test_a_formula_modules_line_is_shown_where_the_plan_reads_it():
    a, b, c = _line("a", "x"), _line("b", "a"), _line("c", "b", "f")
    f, g = _line("f", "x"), _line("g", "c")                # f is read by c; g reads c and nothing reads it
    assert [l.name for l in shown_with_readers((a, b, c), (f, g))] == ["a", "b", "f", "c", "g"]


def test_every_plan_line_is_listed_once():
    names = [l.name for l in plan.LINES]
    assert len(names) == len(set(names))
