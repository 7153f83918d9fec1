"""The dual numeric/Excel evaluation that keeps one definition per formula."""

import numpy as np
import pytest

from inference_ledger.formulas import ledger
from inference_ledger.core.expr import HardCodedConstant, Sym
from inference_ledger.core.sheetfuncs import ceil, concat, floor, maximum, where, ge


def S(*names):
    return [Sym(n) for n in names]


def test_kv_bytes_renders_with_named_constant():
    f = ledger.kv_bytes(*S("L", "K", "H", "S", "b")).formula()
    assert f == "=KV_FACTOR*L*K*H*S*b"


def test_literal_constants_are_refused():
    with pytest.raises(HardCodedConstant):
        ledger.kv_bytes(*S("L", "K", "H", "S"))  # default bytes_per=2 would be a bare 2


def test_precedence_parenthesises_only_where_needed():
    a, b, c = S("a", "b", "c")
    assert (a - (b - c)).text == "a-(b-c)"
    assert ((a - b) - c).text == "a-b-c"
    assert (a / (b * c)).text == "a/(b*c)"
    assert ((a + b) * c).text == "(a+b)*c"
    assert (a ** (b ** c)).text == "a^(b^c)"
    assert (-(a + b)).text == "-(a+b)"


def test_rounding_snaps_float_noise_like_excel():
    assert ceil(2.0000000000000004) == 2
    assert floor(2.9999999999999996) == 3
    assert ceil(2.1) == 3 and floor(2.9) == 2
    np.testing.assert_array_equal(ceil(np.array([0.5, 2.0000000000000004])), [1, 2])


def test_helpers_work_on_arrays_and_scalars():
    assert maximum(1, 3, 2) == 3
    np.testing.assert_array_equal(maximum(np.array([1.0, 5.0]), 2), [2, 5])
    assert where(ge(3, 2), 10, 20) == 10
    np.testing.assert_array_equal(where(ge(np.array([1, 3]), 2), 10, 20), [20, 10])


def test_mod_abs_isnumber_render_and_compute():
    from inference_ledger.core.sheetfuncs import abs_, isnumber, mod
    a, b = S("a", "b")
    assert mod(a, b).text == "MOD(a,b)" and mod(7, 4) == 3
    assert abs_(a - b).text == "ABS(a-b)" and abs_(-2.5) == 2.5
    assert isnumber(a).text == "ISNUMBER(a)" and isnumber(1.0) and not isnumber("") and not isnumber(None)
    with pytest.raises(HardCodedConstant):
        mod(a, 8)  # a literal divisor must be a named constant


def test_a_join_writes_neighbouring_texts_as_one_literal():
    """ "GB"&" of " is written "GB of " (shorter formulas, same text); a literal's own quotes and a tighter-binding
    part are left alone."""
    a, b = Sym("a"), Sym("b")
    assert concat(concat(a, " s"), " (band ", b, ")").text == 'a&" s (band "&b&")"'
    assert concat('q"', '"r', a).text == '"q""""r"&a'          # q" then "r: one literal q""r
    assert concat('x"&"y', "z", a).text == '"x""&""yz"&a'      # a quote-and-ampersand inside a literal stays text
    assert concat(a + b, "x").text == '(a+b)&"x"'
    assert concat(where(a, "p", "q"), "z").text == 'IF(a,"p","q")&"z"'
