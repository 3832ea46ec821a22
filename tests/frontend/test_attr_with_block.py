"""TVM 0.27's one-argument attribute scope as a with-block, `with T.attr({"key": value}):`:
one attribute on no node per key, in order, over the block's body only (what follows the
block is outside it); it prints as nested `with T.attr(None, "key", value):`, parses back to
the same IR and runs in the interpreter and at -O0 and -O3 as NumPy computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from frontend_support import round_trip
from tirc import driver
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.printer import print_module
from tirc.ir.stmt import AttrStmt
from tirc.ir.visitor import post_order_visit
from tirc.runtime import load

FUNC = '''
@T.prim_func
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    with T.attr(ATTRS):
        for i in range(8):
            B[i] = A[i] * T.float32(2)
    for i in range(8, 16):
        B[i] = A[i] + T.float32(1)
'''


def test_with_attr_dictionary_scopes_its_body(tmp_path: Path) -> None:
    text = FUNC.replace("ATTRS", '{"pragma_scope": "seq", "k": 3}')
    mod = round_trip(text)
    nested = parse(FUNC.replace('    with T.attr(ATTRS):\n', '    with T.attr(None, '
                                '"pragma_scope", "seq"):\n        with T.attr(None, "k", 3):\n')
                   .replace("            B[i] = A[i] * T.float32(2)",
                            "                B[i] = A[i] * T.float32(2)")
                   .replace("        for i in range(8):", "            for i in range(8):"))
    assert structural_equal(mod, nested)
    found: list[tuple[str, object]] = []
    post_order_visit(mod.functions["f"].body, lambda n: found.append((n.key, n.node))
                     if isinstance(n, AttrStmt) else None)
    assert found == [("k", None), ("pragma_scope", None)]
    printed = print_module(mod)
    assert '        with T.attr(None, "pragma_scope", "seq"):\n' \
        '            with T.attr(None, "k", 3):\n' in printed
    a = np.arange(16, dtype="float32")
    want = np.concatenate([a[:8] * 2, a[8:] + 1])
    got = np.zeros(16, "float32")
    Interpreter(mod).call("f", a, got)
    np.testing.assert_array_equal(got, want)
    for level in (0, 3):
        lib = load(driver.build(mod, tmp_path / f"m_O{level}.so", "llvm", level))
        got = np.zeros(16, "float32")
        lib["f"](a, got)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("attrs", "message"), [
    ("{}", "T.attr({...}) needs at least one \"key\": value"),
    ("{1: 2}", "the attribute key"),
])
def test_with_attr_dictionary_errors(attrs: str, message: str) -> None:
    with pytest.raises(CompileError) as err:
        parse(FUNC.replace("ATTRS", attrs))
    assert message in err.value.diagnostics[0].message
