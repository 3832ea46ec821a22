"""R.nn.dropout and R.nn.pixel_shuffle as TVM 0.27 defines them: each program is run by the
interpreter and compiled at -O0 and -O3, checked against PyTorch; misuse is a diagnostic at
the call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from graph_support import normalize_diagnostic, run_everywhere
from tirc.frontend import parse
from tirc.ir import structural_equal
from tirc.ir.graph import TupleSInfo
from tirc.ir.printer import print_module
from tirc.passes.graph.normalize import Normalize

DROPOUT = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), k: R.Tensor((2, 2), "int32")):
        n = T.int64()
        a = R.nn.dropout(x, 0.4)
        b = R.nn.dropout(k)
        gv = (a[0], a[1], b[0], b[1])
        return gv
"""


def test_dropout_is_the_identity_with_a_mask_of_ones(tmp_path: Path) -> None:
    """TVM's inference legalization: the output is the data (PyTorch's eval-mode dropout),
    the mask all ones of the data's dtype, whatever the rate."""
    x = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    k = np.array([[1, -2], [3, 7]], dtype="int32")
    drop = torch.nn.Dropout(0.4).eval()
    for got in run_everywhere(tmp_path, DROPOUT, [x, k]):
        np.testing.assert_array_equal(got[0], drop(torch.tensor(x)).numpy())
        assert got[1].dtype == np.float32 and np.array_equal(got[1], np.ones((4, 3)))
        np.testing.assert_array_equal(got[2], k)
        assert got[3].dtype == np.int32 and np.array_equal(got[3], np.ones((2, 2)))


def test_dropout_struct_info_is_a_pair_of_the_datas() -> None:
    mod = Normalize()(parse(DROPOUT))
    a = mod["main"].body.blocks[0].bindings[0].var.struct_info
    assert isinstance(a, TupleSInfo) and len(a.fields) == 2
    assert all(str(f.dtype) == "float32" and f.shape[0].name == "n" for f in a.fields)


SHUFFLE = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 8, 3, 5), "float32"), y: R.Tensor((18, 2, 1), "int32"),
             z: R.Tensor(("n", 2, 4, 1, 2), "float32")):
        n = T.int64()
        a = R.nn.pixel_shuffle(x, 2)
        b = R.nn.pixel_shuffle(y, 3)
        c = R.nn.pixel_shuffle(z, upscale_factor=2)
        d = R.nn.pixel_shuffle(x, 1)
        gv = (a, b, c, d)
        return gv
"""


def test_pixel_shuffle_matches_pytorch(tmp_path: Path) -> None:
    """4-d, 3-d (int) and 5-d data with a symbolic batch: (..., C r r, H, W) -> (..., C,
    H r, W r), as torch.nn.functional.pixel_shuffle; r = 1 is the identity."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8, 3, 5)).astype("float32")
    y = rng.integers(-9, 9, (18, 2, 1)).astype("int32")
    z = rng.standard_normal((3, 2, 4, 1, 2)).astype("float32")
    shuffle = torch.nn.functional.pixel_shuffle
    for got in run_everywhere(tmp_path, SHUFFLE, [x, y, z]):
        np.testing.assert_array_equal(got[0], shuffle(torch.tensor(x), 2).numpy())
        assert got[0].shape == (2, 2, 6, 10)
        np.testing.assert_array_equal(got[1], shuffle(torch.tensor(y), 3).numpy())
        assert got[1].dtype == np.int32 and got[1].shape == (2, 6, 3)
        np.testing.assert_array_equal(got[2], shuffle(torch.tensor(z), 2).numpy())
        assert got[2].shape == (3, 2, 1, 2, 4)
        np.testing.assert_array_equal(got[3], x)


def test_both_print_and_parse_back() -> None:
    for text in (DROPOUT, SHUFFLE):
        mod = parse(text)
        assert structural_equal(parse(print_module(mod)), mod)
    printed = print_module(parse(DROPOUT))
    assert "R.nn.dropout(x, rate=0.4)" in printed and "R.nn.dropout(k)" in printed


TVM_PRINTED = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4, 2), dtype="float32"), p: R.Tensor((1, 8, 3, 5), dtype="float32")):
        d: R.Tuple(R.Tensor((3, 4, 2), dtype="float32"), R.Tensor((3, 4, 2), dtype="float32")) \
            = R.nn.dropout(x, rate=0.20000000000000001)
        e: R.Tensor((1, 2, 6, 10), dtype="float32") = R.nn.pixel_shuffle(p, upscale_factor=2)
        gv = (d[1], e)
        return gv
"""


def test_tvm_printed_forms_parse() -> None:
    """TVM 0.27's printer annotates dropout's tuple and writes the attributes as keywords."""
    mod = Normalize()(parse(TVM_PRINTED))
    out = mod["main"].ret_struct_info
    assert [tuple(int(d.value) for d in f.shape) for f in out.fields] == [(3, 4, 2),
                                                                          (1, 2, 6, 10)]


BAD = """\
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 8, 3, 5), "float32"), v: R.Tensor((8, 3), "float32")):
        gv = CALL
        return gv
"""


@pytest.mark.parametrize(("call", "message"), [
    ("R.nn.dropout(x, 1.5)", "R.nn.dropout: rate must be within [0, 1], got 1.5"),
    ("R.nn.dropout(x, -0.1)", "R.nn.dropout: rate must be within [0, 1], got -0.1"),
    ("R.nn.dropout(x, \"half\")", "R.nn.dropout: argument 'rate' must be a number"),
    ("R.nn.pixel_shuffle(x, 3)", "R.nn.pixel_shuffle: the channels 8 of (2, 8, 3, 5) must be "
     "divisible by upscale_factor squared (9)"),
    ("R.nn.pixel_shuffle(x, 0)", "R.nn.pixel_shuffle: upscale_factor must be positive, got 0"),
    ("R.nn.pixel_shuffle(v, 2)", "R.nn.pixel_shuffle: data must have at least 3 axes (..., C, "
     "H, W), got (8, 3)"),
    ("R.nn.pixel_shuffle(x)", "R.nn.pixel_shuffle: missing argument 'upscale_factor'"),
])
def test_misuse_is_a_diagnostic_at_the_call(tmp_path: Path, call: str, message: str) -> None:
    diag = normalize_diagnostic(tmp_path, BAD.replace("CALL", call))
    assert diag.message == message
    assert diag.span is not None and (diag.span.line, diag.span.col) == (5, 14)
