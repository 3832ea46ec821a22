"""Annotation and attribute forms TVM 0.27 prints: a buffer inside a block annotation
(`T.block_attr({"layout_free_placeholders": [B]})`, in both spellings) and `T.attr` as TVM's
scatter_elements legalization and its tirx kernels write it. Each parses, prints back to the
same IR, and runs in the interpreter and at -O0 and -O3 as NumPy computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from frontend_support import round_trip
from tirc import driver
from tirc.frontend import parse
from tirc.ir import IRModule, structural_equal
from tirc.ir.diagnostics import CompileError
from tirc.ir.interpreter import Interpreter
from tirc.ir.printer import print_module
from tirc.ir.stmt import DEVICE_ENTRY, AttrStmt, Block
from tirc.ir.visitor import post_order_visit
from tirc.runtime import load


def _runs_as(mod: IRModule, func: str, args: list[np.ndarray], out: int,
             want: np.ndarray, tmp_path: Path) -> None:
    """`func` writes `want` into argument `out` in the interpreter and at -O0 and -O3."""
    got = [a.copy() for a in args]
    Interpreter(mod).call(func, *got)
    np.testing.assert_allclose(got[out], want, rtol=1e-6)
    for level in (0, 3):
        lib = load(driver.build(mod, tmp_path / f"m_O{level}.so", "llvm", level))
        got = [a.copy() for a in args]
        lib[func](*got)
        np.testing.assert_allclose(got[out], want, rtol=1e-6)


LAYOUT_FREE = '''
from tvm.script import {module} as T

@T.prim_func
def f(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8,), "float32"),
      C: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.{block}("c"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.{block}_attr({{"layout_free_placeholders": [B], "note": [A, 2, "s"]}})
            C[vi, vj] = A[vi, vj] * B[vj] + 1.0
{schedule}'''

SCHEDULE = '''
@S.schedule("f")
def _(sch):
    b = sch.get_block("c")
    i, j = sch.get_loops(b)
    io, ii = sch.split(i, factors=[None, 4])
    bb = sch.cache_read(b, 1, "local")
    sch.compute_at(bb, io)
    sch.parallel(io)
'''


@pytest.mark.parametrize(("module", "block"), [("tir", "block"), ("tirx", "sblock")])
def test_buffers_in_a_block_annotation(module: str, block: str, tmp_path: Path) -> None:
    """The annotation holds the parameter buffers themselves (lists read back as tuples)
    and prints them by name; the program runs unchanged."""
    mod = round_trip(LAYOUT_FREE.format(module=module, block=block, schedule=""))
    func = mod.functions["f"]
    blocks: list[Block] = []
    post_order_visit(func.body, lambda n: blocks.append(n) if isinstance(n, Block) else None)
    (c,) = [b for b in blocks if b.name == "c"]
    a_buf, b_buf = func.buffer_map[func.params[0]], func.buffer_map[func.params[1]]
    assert c.annotations["layout_free_placeholders"] == (b_buf,)
    assert c.annotations["layout_free_placeholders"][0] is b_buf
    assert c.annotations["note"][0] is a_buf and c.annotations["note"][1:] == (2, "s")
    assert f'T.{block}_attr({{"layout_free_placeholders": (B,), "note": (A, 2, "s")}})' in \
        print_module(mod)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((16, 8), "float32"), rng.standard_normal(8, "float32")
    _runs_as(mod, "f", [a, b, np.zeros((16, 8), "float32")], 2, a * b + 1, tmp_path)


def test_a_scheduled_block_keeps_its_buffer_annotation(tmp_path: Path) -> None:
    """split, cache_read (which replaces B in the block), compute_at and parallel keep an
    annotation that names buffers; the result still prints, parses back and computes."""
    mod = round_trip(LAYOUT_FREE.format(module="tir", block="block", schedule=SCHEDULE))
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((16, 8), "float32"), rng.standard_normal(8, "float32")
    _runs_as(mod, "f", [a, b, np.zeros((16, 8), "float32")], 2, a * b + 1, tmp_path)


def test_an_unknown_name_in_an_annotation_is_a_diagnostic() -> None:
    with pytest.raises(CompileError) as err:
        parse(LAYOUT_FREE.format(module="tir", block="block", schedule="").replace(
            "[B]", "[D]"))
    diag = err.value.diagnostics[0]
    assert diag.message == "unknown name 'D'"
    assert diag.span is not None and (diag.span.line, diag.span.col) == (10, 56)


PRAGMA_SCOPE = '''
from tvm.script import tirx as T

@T.prim_func
def scatter(data: T.Buffer((4, 4), offset_factor=1), idx: T.Buffer((2, 2), "int64"),
            upd: T.Buffer((2, 2), "float32"), out: T.Buffer((4, 4), "float32")):
    with T.sblock("scatter_generic"):
        T.attr(0, "pragma_scope", "seq")
        for i in T.parallel(16):
            out[i // 4, i % 4] = data[i // 4, i % 4]
        for r in T.parallel(2):
            for k in range(2):
                out[r, idx[r, k] + T.Cast("int64", idx[r, k] < T.int64(0)) * T.int64(4)] = \\
                    upd[r, k]
'''


def test_pragma_scope_attribute_over_a_block_body(tmp_path: Path) -> None:
    """`T.attr(0, "pragma_scope", "seq")` as TVM's scatter_elements legalization prints it:
    an attribute over the rest of the block body (tirc uses no such pragma; it is kept in
    the IR and ignored by code generation)."""
    mod = round_trip(PRAGMA_SCOPE)
    attrs: list[AttrStmt] = []
    post_order_visit(mod.functions["scatter"].body,
                     lambda n: attrs.append(n) if isinstance(n, AttrStmt) else None)
    assert [(a.key, a.value.value) for a in attrs] == [("pragma_scope", "seq")]  # type: ignore[attr-defined]
    rng = np.random.default_rng(5)
    data = rng.standard_normal((4, 4)).astype("float32")
    idx = np.array([[1, -1], [0, 2]], dtype="int64")
    upd = rng.standard_normal((2, 2)).astype("float32")
    want = data.copy()
    for r in range(2):
        for k in range(2):
            want[r, idx[r, k] % 4] = upd[r, k]
    _runs_as(mod, "scatter", [data, idx, upd, np.zeros((4, 4), "float32")], 3, want, tmp_path)


FLAT_DICT = '''
from tvm.script import tirx as T

@T.prim_func
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    {attr}
    for i in range(16):
        B[i] = A[i] * 2.0
'''


def test_one_argument_attr_dictionary(tmp_path: Path) -> None:
    """`T.attr({"key": value, ...})` (TVM 0.27's tirx form): one attribute on no node per
    key, in order, over the statements after it; the device-entry key is T.device_entry()."""
    mod = round_trip(FLAT_DICT.format(attr='T.attr({"pragma_scope": "seq", "k": 3})'))
    nested = parse(FLAT_DICT.format(attr='T.attr(None, "pragma_scope", "seq")\n'
                                    '    T.attr(None, "k", 3)'))
    assert structural_equal(mod, nested)
    entry = parse(FLAT_DICT.format(attr=f'T.attr({{"{DEVICE_ENTRY}": T.bool(True)}})'))
    assert structural_equal(entry, parse(FLAT_DICT.format(attr="T.device_entry()")))
    a = np.arange(16, dtype="float32")
    _runs_as(mod, "f", [a, np.zeros(16, "float32")], 1, a * 2, tmp_path)


@pytest.mark.parametrize(("attr", "message"), [
    ("T.attr({})", "T.attr({...}) needs at least one \"key\": value"),
    ("T.attr({1: 2})", "the attribute key"),
])
def test_attr_dictionary_errors(attr: str, message: str) -> None:
    with pytest.raises(CompileError) as err:
        parse(FLAT_DICT.format(attr=attr))
    assert message in err.value.diagnostics[0].message
