"""R.scatter_nd and R.index_tensor as TVM 0.27 defines them: each program is run by the
interpreter and compiled at -O0 and -O3, checked against NumPy and PyTorch; misuse is a
diagnostic at the call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from graph_support import interpret, normalize_diagnostic, run_everywhere
from tirc.frontend import parse, parse_file
from tirc.ir import structural_equal
from tirc.ir.interpreter import InterpreterError
from tirc.ir.printer import print_module

SCATTER = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4, 2), "float32"), i: R.Tensor((5, 2), "int64"),
             u: R.Tensor((5, 2), "float32"), j: R.Tensor((2, 2, 3), "int32"),
             v: R.Tensor((2, 2), "float32"), k: R.Tensor((4, 1), "int64"),
             w: R.Tensor((4, 4, 2), "float32")):
        a = R.scatter_nd(x, i, u)
        b = R.scatter_nd(x, i, u, reduction="add")
        c = R.scatter_nd(x, i, u, reduction="mul")
        d = R.scatter_nd(x, i, u, reduction="min")
        e = R.scatter_nd(x, i, u, reduction="max")
        f = R.scatter_nd(x, j, v, "add")
        g = R.scatter_nd(x, k, w)
        gv = (a, b, c, d, e, f, g)
        return gv
"""


def _scatter_nd(data: np.ndarray, idx: np.ndarray, upd: np.ndarray, how: str) -> np.ndarray:
    """The definition, row by row in order (a negative index counts from the end)."""
    out = data.copy()
    m = idx.shape[-1]
    for pos in np.ndindex(*idx.shape[:-1]):
        at = tuple(int(v) % data.shape[n] for n, v in enumerate(idx[pos][:m]))
        new = upd[pos]
        out[at] = {"update": new, "add": out[at] + new, "mul": out[at] * new,
                   "min": np.minimum(out[at], new), "max": np.maximum(out[at], new)}[how]
    return out


def test_scatter_nd_every_reduction(tmp_path: Path) -> None:
    """Rows (5, 2) name slices of x's last axis, some twice (the later update wins, the
    reductions combine both) and one negative; (2, 2, 3) rows name single elements; K=1
    rows replace whole (4, 2) planes, the last of a repeated one winning."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 2)).astype("float32")
    i = np.array([[0, 1], [2, 3], [0, 1], [-1, -4], [1, 2]], dtype="int64")
    u = rng.standard_normal((5, 2)).astype("float32")
    j = np.array([[[0, 1, 1], [2, 3, 0]], [[0, 1, 1], [1, 1, -1]]], dtype="int32")
    v = rng.standard_normal((2, 2)).astype("float32")
    k = np.array([[2], [0], [2], [-3]], dtype="int64")
    w = rng.standard_normal((4, 4, 2)).astype("float32")
    outs = run_everywhere(tmp_path, SCATTER, [x, i, u, j, v, k, w])
    for got in outs:
        for n, how in enumerate(("update", "add", "mul", "min", "max")):
            np.testing.assert_allclose(got[n], _scatter_nd(x, i, u, how), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[5], _scatter_nd(x, j, v, "add"), rtol=1e-6)
        np.testing.assert_array_equal(got[6], _scatter_nd(x, k, w, "update"))
    assert np.array_equal(_scatter_nd(x, k, w, "update")[2], w[2])
    # PyTorch's index_put_ with accumulate is scatter_nd's "add"
    want = torch.tensor(x).index_put_((torch.tensor(i[:, 0]), torch.tensor(i[:, 1])),
                                      torch.tensor(u), accumulate=True)
    np.testing.assert_allclose(outs[1][1], want.numpy(), rtol=1e-6)


def test_scatter_nd_index_out_of_range_stops_the_interpreter(tmp_path: Path) -> None:
    path = tmp_path / "prog.tir"
    path.write_text(SCATTER)
    x = np.zeros((3, 4, 2), "float32")
    bad = np.array([[0, 0], [0, 4], [0, 0], [0, 0], [0, 0]], dtype="int64")
    with pytest.raises(InterpreterError, match=r"R.scatter_nd: index 4 at \(1, 1\) is out of "
                       "bounds for an axis of size 4"):
        interpret(parse_file(path), [x, bad, np.zeros((5, 2), "float32"),
                                     np.zeros((2, 2, 3), "int32"), np.zeros((2, 2), "float32"),
                                     np.zeros((4, 1), "int64"), np.zeros((4, 4, 2), "float32")])


INDEX = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, 2), "float32"), r: R.Tensor((2, 1), "int32"),
             c: R.Tensor((3,), "int64"), s: R.Tensor((2, 3), "int64")):
        n = T.int64()
        a = R.index_tensor(x, (r, c))
        b = R.index_tensor(x, (s,))
        d = R.index_tensor(x, (r, c, r))
        gv = (a, b, d)
        return gv
"""


def test_index_tensor_broadcasts_like_pytorch(tmp_path: Path) -> None:
    """Index tensors (2, 1) and (3,) broadcast to (2, 3); one (2, 3) tensor keeps x's other
    axes; three index every axis; negative indices count from the end (as PyTorch's)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4, 2)).astype("float32")
    r = np.array([[0], [-1]], dtype="int32")
    c = np.array([1, 3, -4], dtype="int64")
    s = np.array([[4, 0, 2], [-5, 1, 1]], dtype="int64")
    t = torch.tensor(x)
    wants = [t[torch.tensor(r).long(), torch.tensor(c)], t[torch.tensor(s)],
             t[torch.tensor(r).long(), torch.tensor(c), torch.tensor(r).long()]]
    for got in run_everywhere(tmp_path, INDEX, [x, r, c, s]):
        for g, want in zip(got, wants):
            assert g.shape == tuple(want.shape)
            np.testing.assert_array_equal(g, want.numpy())
        np.testing.assert_array_equal(got[0], x[r, c])


def test_both_print_and_parse_back() -> None:
    for text in (SCATTER, INDEX):
        mod = parse(text)
        printed = print_module(mod)
        assert structural_equal(parse(printed), mod)
    assert 'R.scatter_nd(x, i, u, reduction="add")' in print_module(parse(SCATTER))


BAD = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4, 2), "float32"), i: R.Tensor((5, 2), "int64"),
             u: R.Tensor((5, 2), "float32"), f: R.Tensor((5, 2), "float32"),
             q: R.Tensor((5, 4), "int64"), s: R.Tensor((4,), "int64"), b: R.Tensor((5,), "bool")):
        gv = CALL
        return gv
"""


@pytest.mark.parametrize(("call", "message"), [
    ("R.scatter_nd(x, f, u)", "R.scatter_nd: indices must be integers, got float32"),
    ("R.scatter_nd(x, i, R.astype(u, \"int32\"))",
     "R.scatter_nd: dtype mismatch: float32 and int32"),
    ("R.scatter_nd(x, i, u, reduction=\"mean\")", "R.scatter_nd: reduction must be one of "
     "update, add, mul, min, max, got 'mean'"),
    ("R.scatter_nd(x, q, R.zeros((5,), \"float32\"))", "R.scatter_nd: the last axis of the "
     "indices (5, 4) must be in [1, 3] (the data's rank)"),
    ("R.scatter_nd(x, i, x)", "R.scatter_nd: updates (3, 4, 2) must have the shape "
     "indices.shape[:-1] + data.shape[2:] = (5, 2)"),
    ("R.index_tensor(x, (s, s, s, s))", "R.index_tensor: 4 index tensors for data (3, 4, 2) "
     "of rank 3"),
    ("R.index_tensor(x, (i, s))", "R.index_tensor: cannot broadcast (5, 2) with (4,)"),
    ("R.index_tensor(x, (f,))", "R.index_tensor: index tensor 0 must have an integer dtype, "
     "got float32"),
    ("R.index_tensor(x, (s, b))", "R.index_tensor: index tensor 1 must have an integer "
     "dtype, got bool"),
])
def test_misuse_is_a_diagnostic_at_the_call(tmp_path: Path, call: str, message: str) -> None:
    diag = normalize_diagnostic(tmp_path, BAD.replace("CALL", call))
    assert diag.message == message
    assert diag.span is not None and diag.span.line == 7


def test_cli_reports_file_line_col(tmp_path: Path) -> None:
    """The command line prints the diagnostic as file:line:col: error: and fails."""
    path = tmp_path / "bad.tir"
    path.write_text(BAD.replace("CALL", "R.scatter_nd(x, f, u)"))
    tirc = Path(sys.executable).with_name("tirc")
    run = subprocess.run([str(tirc), str(path), "--emit", "tir"], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 1
    assert f"{path}:7:14: error: R.scatter_nd: indices must be integers, got float32" in \
        run.stderr
