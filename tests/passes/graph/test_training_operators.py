"""The operators of training graphs and exported models: `collapse_sum_like`/`collapse_sum_to`,
`nn.group_norm`, `nn.instance_norm`, `gather_elements`, `scatter_elements`, `nn.nll_loss` and
`nn.cross_entropy_with_logits`. Each one compiled at -O0..-O3 agrees with the reference
interpreter; both agree with NumPy written here from the definitions, one output element at a
time; bad operands are diagnostics at their place; an out-of-range scatter index is an
interpreter error and never a write outside the output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_support import compile_levels, compile_sample, functions_module
from tirc.frontend import parse, parse_file
from tirc.ir import CompileError
from tirc.ir.interpreter import Interpreter, InterpreterError
from tirc.ir.printer import print_module
from tirc.passes.graph.normalize import Normalize

F = '"float32"'
I64 = '"int64"'

# name -> (parameters, body, {integer parameter: (low, high) of its values})
CASES: dict[str, tuple[str, str, dict[str, tuple[int, int]]]] = {
    "collapse_to": (f"x: R.Tensor((3, 2, 3), {F})", "R.collapse_sum_to(x, (2, 1))", {}),
    "collapse_like": (f"x: R.Tensor((4, 1, 3, 5), {F}), y: R.Tensor((3, 1), {F})",
                      "R.collapse_sum_like(x, y)", {}),
    "collapse_symbolic": (f'x: R.Tensor(("n", 4, 3), {F})', "R.collapse_sum_to(x, (4, 1))", {}),
    "collapse_symbolic_kept": (f'x: R.Tensor(("n", 4), {F}), y: R.Tensor(("n", 1), {F})',
                               "R.collapse_sum_like(x, y)", {}),
    "collapse_int": ('x: R.Tensor((2, 3, 4), "int32")', "R.collapse_sum_to(x, (3, 1))", {}),
    "collapse_same": (f"x: R.Tensor((2, 3), {F})", "R.collapse_sum_to(x, (2, 3))", {}),
    "gn": (f"x: R.Tensor((2, 6, 3, 2), {F}), g: R.Tensor((6,), {F}), b: R.Tensor((6,), {F})",
           "R.nn.group_norm(x, g, b, num_groups=3, channel_axis=1, axes=[2, 3])", {}),
    "gn_last": (f"x: R.Tensor((2, 3, 4), {F}), g: R.Tensor((4,), {F}), b: R.Tensor((4,), {F})",
                "R.nn.group_norm(x, g, b, 2, -1, [1], 1e-3, False, True)", {}),
    "gn_no_axes": (f"x: R.Tensor((3, 4, 2), {F}), g: R.Tensor((4,), {F}), "
                   f"b: R.Tensor((4,), {F})",
                   "R.nn.group_norm(x, g, b, 2, 1, [], scale=False)", {}),
    "gn_symbolic": (f'x: R.Tensor(("n", 4, 5), {F}), g: R.Tensor((4,), {F}), '
                    f"b: R.Tensor((4,), {F})",
                    "R.nn.group_norm(x, g, b, num_groups=4, channel_axis=1, axes=[2])", {}),
    "gn_half": ('x: R.Tensor((2, 4, 3), "float16"), g: R.Tensor((4,), "float16"), '
                'b: R.Tensor((4,), "float16")',
                "R.nn.group_norm(x, g, b, num_groups=2, channel_axis=1, axes=[2])", {}),
    "in": (f"x: R.Tensor((2, 3, 4, 2), {F}), g: R.Tensor((3,), {F}), b: R.Tensor((3,), {F})",
           "R.nn.instance_norm(x, g, b, channel_axis=1, axes=[2, 3], epsilon=1e-05)", {}),
    "in_last": (f"x: R.Tensor((2, 5, 4), {F}), g: R.Tensor((4,), {F}), b: R.Tensor((4,), {F})",
                "R.nn.instance_norm(x, g, b, -1, [1], 1e-3, False, True)", {}),
    "ga": (f"x: R.Tensor((4, 6), {F}), i: R.Tensor((3, 5), {I64})",
           "R.gather_elements(x, i, axis=1)", {"i": (-6, 6)}),
    "ga_rows": (f"x: R.Tensor((4, 6), {F}), i: R.Tensor((2, 6), {I64})",
                "R.gather_elements(x, i)", {"i": (-4, 4)}),
    "sc_update": (f"x: R.Tensor((4, 6), {F}), i: R.Tensor((4, 5), {I64}), "
                  f"u: R.Tensor((4, 5), {F})", "R.scatter_elements(x, i, u, axis=1)",
                  {"i": (-6, 6)}),
    "sc_add_rows": (f"x: R.Tensor((4, 6), {F}), i: R.Tensor((2, 3), {I64}), "
                    f"u: R.Tensor((2, 3), {F})",
                    'R.scatter_elements(x, i, u, axis=-1, reduction="add")', {"i": (-6, 6)}),
    "sc_mul": (f"x: R.Tensor((5, 3), {F}), i: R.Tensor((4, 3), {I64}), "
               f"u: R.Tensor((4, 3), {F})", 'R.scatter_elements(x, i, u, 0, "mul")',
               {"i": (-5, 5)}),
    "sc_mean": (f"x: R.Tensor((3, 4, 5), {F}), i: R.Tensor((2, 4, 3), {I64}), "
                f"u: R.Tensor((2, 4, 3), {F})",
                'R.scatter_elements(x, i, u, axis=2, reduction="mean")', {"i": (-5, 5)}),
    "sc_min_int": ('x: R.Tensor((5, 4), "int32"), i: R.Tensor((3, 2), "int32"), '
                   'u: R.Tensor((3, 2), "int32")',
                   'R.scatter_elements(x, i, u, axis=0, reduction="min")', {"i": (-5, 5)}),
    "sc_max": (f"x: R.Tensor((3, 5, 2), {F}), i: R.Tensor((3, 4, 1), {I64}), "
               f"u: R.Tensor((3, 4, 1), {F})",
               'R.scatter_elements(x, i, u, axis=1, reduction="max")', {"i": (-5, 5)}),
    "sc_add_int": ('x: R.Tensor((6,), "int32"), i: R.Tensor((9,), "int32"), '
                   'u: R.Tensor((9,), "int32")',
                   'R.scatter_elements(x, i, u, reduction="add")', {"i": (-6, 6)}),
    "sc_symbolic": (f'x: R.Tensor(("n", 5), {F}), i: R.Tensor(("n", 2), {I64}), '
                    f'u: R.Tensor(("n", 2), {F})', "R.scatter_elements(x, i, u, axis=1)",
                    {"i": (-5, 5)}),
    "nll_mean": (f"p: R.Tensor((3, 5, 2), {F}), t: R.Tensor((3, 2), {I64}), "
                 f"w: R.Tensor((5,), {F})", "R.nn.nll_loss(p, t, w, ignore_index=1)",
                 {"t": (0, 5)}),
    "nll_none": (f'p: R.Tensor((4, 5), {F}), t: R.Tensor((4,), "int32")',
                 'R.nn.nll_loss(p, t, reduction="none", ignore_index=2)', {"t": (0, 5)}),
    "nll_sum": (f"p: R.Tensor((2, 3, 2, 2), {F}), t: R.Tensor((2, 2, 2), {I64}), "
                f"w: R.Tensor((3,), {F})", 'R.nn.nll_loss(p, t, w, "sum")', {"t": (0, 3)}),
    "nll_one": (f"p: R.Tensor((5,), {F}), t: R.Tensor((), {I64}), w: R.Tensor((5,), {F})",
                "R.nn.nll_loss(p, t, w)", {"t": (0, 5)}),
    "nll_symbolic": (f'p: R.Tensor(("n", 4), {F}), t: R.Tensor(("n",), {I64})',
                     "R.nn.nll_loss(p, t)", {"t": (0, 4)}),
    "ce": (f"p: R.Tensor((3, 5), {F}), l: R.Tensor((3, 5), {F})",
           "R.nn.cross_entropy_with_logits(p, l)", {}),
    "ce_one": (f"p: R.Tensor((5,), {F}), l: R.Tensor((5,), {F})",
               "R.nn.cross_entropy_with_logits(p, l)", {}),
    "ce_symbolic": (f'p: R.Tensor(("n", 2, 3), {F}), l: R.Tensor(("n", 2, 3), {F})',
                    "R.nn.cross_entropy_with_logits(p, l)", {}),
}
TEXT = functions_module({name: (params, body) for name, (params, body, _) in CASES.items()})


def arguments(mod: Any, name: str, seed: int, size: int = 3) -> list[np.ndarray]:
    """Arguments for `name`: integer parameters in their case's range (else [-5, 5]), floats
    standard normal (positive weights for a `mean` loss); a symbolic dimension is `size`."""
    rng = np.random.default_rng(seed)
    ranges = CASES[name][2]
    out = []
    for p in mod[name].params:
        s = p.struct_info
        shape = tuple(int(d.value) if hasattr(d, "value") else size for d in s.shape)
        dt = str(s.dtype)
        if "int" in dt:
            low, high = ranges.get(p.name, (-5, 6))
            out.append(np.asarray(rng.integers(low, high, shape)).astype(dt))
        elif p.name == "w":
            out.append((rng.random(shape) + 0.5).astype(dt))
        else:
            out.append(rng.standard_normal(shape).astype(dt))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Any]]:
    return compile_levels(TEXT, tmp_path_factory.mktemp("training"), levels=(0, 1, 2, 3))


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_agrees_with_the_interpreter(built: tuple[Path, dict[int, Any]],
                                              name: str) -> None:
    path, libs = built
    mod = parse_file(path)
    for seed in range(2):
        args = arguments(mod, name, seed)
        want = np.asarray(Interpreter(mod).call(name, *[a.copy() for a in args]))
        tol = 2e-3 if want.dtype == np.float16 else 1e-5
        for level, lib in libs.items():
            got = np.asarray(getattr(lib, name)(*[a.copy() for a in args]))
            assert got.dtype == want.dtype and got.shape == want.shape, (name, level)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol,
                                       err_msg=f"{name} at -O{level}")


# ---- the definitions, one output element at a time ------------------------------------------


def naive_collapse(x: np.ndarray, target: tuple[int, ...]) -> np.ndarray:
    """Each data element added into the target element broadcasting would have read it
    from (index 0 along a target axis of 1, none along the leading axes)."""
    out = np.zeros(target, dtype=np.float64)
    lead = x.ndim - len(target)
    for idx in np.ndindex(*x.shape):
        out[tuple(0 if t == 1 else idx[lead + j] for j, t in enumerate(target))] += x[idx]
    return out


def naive_group_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, groups: int, channel: int,
                     axes: list[int], eps: float, center: bool, scale: bool) -> np.ndarray:
    """Each element normalized by the mean and variance of the elements sharing its group
    and its coordinates off `axes`."""
    channel %= x.ndim
    per = x.shape[channel] // groups
    out = np.empty(x.shape, dtype=np.float64)
    for idx in np.ndindex(*x.shape):
        same = [v for other in np.ndindex(*x.shape)
                if other[channel] // per == idx[channel] // per
                and all(other[a] == idx[a] for a in range(x.ndim)
                        if a != channel and a % x.ndim not in [c % x.ndim for c in axes])
                for v in [float(x[other])]]
        mean = sum(same) / len(same)
        var = sum((v - mean) ** 2 for v in same) / len(same)
        v = (float(x[idx]) - mean) / np.sqrt(var + eps)
        c = idx[channel]
        out[idx] = v * (g[c] if scale else 1.0) + (b[c] if center else 0.0)
    return out


def naive_scatter(x: np.ndarray, i: np.ndarray, u: np.ndarray, axis: int,
                  reduction: str) -> np.ndarray:
    """Row by row (the coordinates off `axis`), the updates in order along the axis."""
    out = x.astype(np.float64)
    axis %= x.ndim
    size = x.shape[axis]
    off = [d for a, d in enumerate(i.shape) if a != axis]
    for row in np.ndindex(*off):
        for k in range(i.shape[axis]):
            src = row[:axis] + (k,) + row[axis:]
            dst = row[:axis] + (int(i[src]) % size,) + row[axis:]
            old, new = out[dst], float(u[src])
            out[dst] = {"update": new, "add": old + new, "mul": old * new,
                        "mean": (old + new) / 2, "min": min(old, new),
                        "max": max(old, new)}[reduction]
    return out


def naive_gather(x: np.ndarray, i: np.ndarray, axis: int) -> np.ndarray:
    """Each output element the data at its own coordinates, `axis` replaced by its index."""
    out = np.empty(i.shape, dtype=np.float64)
    axis %= x.ndim
    for idx in np.ndindex(*i.shape):
        src = idx[:axis] + (int(i[idx]) % x.shape[axis],) + idx[axis + 1:]
        out[idx] = x[src]
    return out


def naive_nll(p: np.ndarray, t: np.ndarray, w: np.ndarray | None, reduction: str,
              ignore: int) -> np.ndarray:
    """-w[c] * p[n, c, ...] per target; summed, or divided by the counted weights."""
    classes = p.shape[1] if p.ndim > 1 else p.shape[0]
    w = np.ones(classes) if w is None else w.astype(np.float64)
    losses, weights = np.zeros(t.shape), np.zeros(t.shape)
    for idx in np.ndindex(*t.shape):
        c = int(t[idx])
        if c != ignore:
            at = (c,) if p.ndim == 1 else (idx[0], c) + idx[1:]
            losses[idx], weights[idx] = -w[c] * p[at], w[c]
    if reduction == "none":
        return losses
    return np.asarray(losses.sum() if reduction == "sum" else losses.sum() / weights.sum())


def naive_cross_entropy(p: np.ndarray, lab: np.ndarray) -> np.ndarray:
    total = -sum(float(a) * float(b) for a, b in zip(p.ravel(), lab.ravel()))
    return np.asarray(total / p.shape[0] if p.ndim > 1 else total)


DEFINITIONS: dict[str, Any] = {
    "collapse_to": lambda x: naive_collapse(x, (2, 1)),
    "collapse_like": lambda x, y: naive_collapse(x, y.shape),
    "collapse_symbolic": lambda x: naive_collapse(x, (4, 1)),
    "collapse_symbolic_kept": lambda x, y: naive_collapse(x, y.shape),
    "collapse_int": lambda x: naive_collapse(x, (3, 1)),
    "collapse_same": lambda x: naive_collapse(x, (2, 3)),
    "gn": lambda x, g, b: naive_group_norm(x, g, b, 3, 1, [2, 3], 1e-5, True, True),
    "gn_last": lambda x, g, b: naive_group_norm(x, g, b, 2, -1, [1], 1e-3, False, True),
    "gn_no_axes": lambda x, g, b: naive_group_norm(x, g, b, 2, 1, [], 1e-5, True, False),
    "gn_symbolic": lambda x, g, b: naive_group_norm(x, g, b, 4, 1, [2], 1e-5, True, True),
    "gn_half": lambda x, g, b: naive_group_norm(x, g, b, 2, 1, [2], 1e-5, True, True),
    "in": lambda x, g, b: naive_group_norm(x, g, b, 3, 1, [2, 3], 1e-5, True, True),
    "in_last": lambda x, g, b: naive_group_norm(x, g, b, 4, -1, [1], 1e-3, False, True),
    "ga": lambda x, i: naive_gather(x, i, 1),
    "ga_rows": lambda x, i: naive_gather(x, i, 0),
    "sc_update": lambda x, i, u: naive_scatter(x, i, u, 1, "update"),
    "sc_add_rows": lambda x, i, u: naive_scatter(x, i, u, -1, "add"),
    "sc_mul": lambda x, i, u: naive_scatter(x, i, u, 0, "mul"),
    "sc_mean": lambda x, i, u: naive_scatter(x, i, u, 2, "mean"),
    "sc_min_int": lambda x, i, u: naive_scatter(x, i, u, 0, "min"),
    "sc_max": lambda x, i, u: naive_scatter(x, i, u, 1, "max"),
    "sc_add_int": lambda x, i, u: naive_scatter(x, i, u, 0, "add"),
    "sc_symbolic": lambda x, i, u: naive_scatter(x, i, u, 1, "update"),
    "nll_mean": lambda p, t, w: naive_nll(p, t, w, "mean", 1),
    "nll_none": lambda p, t: naive_nll(p, t, None, "none", 2),
    "nll_sum": lambda p, t, w: naive_nll(p, t, w, "sum", -100),
    "nll_one": lambda p, t, w: naive_nll(p, t, w, "mean", -100),
    "nll_symbolic": lambda p, t: naive_nll(p, t, None, "mean", -100),
    "ce": naive_cross_entropy,
    "ce_one": naive_cross_entropy,
    "ce_symbolic": naive_cross_entropy,
}


def test_every_case_has_a_definition() -> None:
    assert sorted(DEFINITIONS) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_are_the_definition(built: tuple[Path, dict[int, Any]], name: str) -> None:
    path, libs = built
    mod = parse_file(path)
    args = arguments(mod, name, 11)
    want = DEFINITIONS[name](*args)
    got = {"interpreter": Interpreter(mod).call(name, *[a.copy() for a in args])}
    got.update({f"-O{level}": getattr(lib, name)(*[a.copy() for a in args])
                for level, lib in libs.items()})
    for label, value in got.items():
        tol = 2e-3 if np.asarray(value).dtype == np.float16 else 1e-5
        np.testing.assert_allclose(np.asarray(value, dtype=np.float64), want, rtol=tol,
                                   atol=tol, err_msg=f"{name}: {label}")


# ---- bad indices ----------------------------------------------------------------------------

SCATTER = functions_module({"main": (
    f"x: R.Tensor((3, 4), {F}), i: R.Tensor((3, 2), {I64}), u: R.Tensor((3, 2), {F})",
    'R.scatter_elements(x, i, u, axis=1, reduction="add")')})


def test_an_out_of_range_scatter_index_is_an_error_and_never_a_stray_write(
        tmp_path: Path) -> None:
    """The interpreter refuses an index outside [-size, size), as R.take's does; compiled
    code drops the update (it reduces, per output element, the updates that name it), so the
    output around the bad index is the data's and no memory outside it is touched."""
    x = np.arange(12, dtype="float32").reshape(3, 4)
    i = np.array([[0, -1], [4, 1], [-5, 9]], dtype="int64")
    u = np.full((3, 2), 100, dtype="float32")
    with pytest.raises(InterpreterError, match="index 4 is out of bounds for axis 1"):
        Interpreter(parse(SCATTER)).call("main", x, i, u)
    path = tmp_path / "scatter.tir"
    path.write_text(SCATTER)
    lib = compile_sample(path, tmp_path / "scatter.so", 2)
    want = x.copy()
    want[0, 0] += 100
    want[0, 3] += 100
    want[1, 1] += 100
    np.testing.assert_array_equal(lib.main(x, i, u), want)


def test_an_out_of_range_target_is_an_error(tmp_path: Path) -> None:
    """The interpreter refuses a class outside [0, C); compiled code reads it as R.take reads a
    bad index, which -fbounds-check reports."""
    from tirc.cli.compile_cmd import CompileOptions, compile_file
    from tirc.runtime import load

    text = functions_module({"main": (f'p: R.Tensor((2, 3), {F}), t: R.Tensor((2,), {I64})',
                                      'R.nn.nll_loss(p, t, reduction="sum")')})
    p = np.ones((2, 3), "float32")
    with pytest.raises(InterpreterError, match="target 3 is out of range for 3 classes"):
        Interpreter(parse(text)).call("main", p, np.array([0, 3]))
    path = tmp_path / "nll.tir"
    path.write_text(text)
    compile_file(CompileOptions(file=str(path), output=str(tmp_path / "nll.so"), opt_level=2,
                                bounds_check=True))
    lib = load(tmp_path / "nll.so")
    assert lib.main(p, np.array([0, 2])) == -2.0
    with pytest.raises(Exception, match=r"out-of-bounds read of p\[1, 3\], shape \(2, 3\)"):
        lib.main(p, np.array([0, 3]))


# ---- diagnostics ----------------------------------------------------------------------------

X = f"x: R.Tensor((4, 8), {F})"
X3 = f"x: R.Tensor((2, 6, 4), {F}), g: R.Tensor((6,), {F}), b: R.Tensor((6,), {F})"
SC = f"x: R.Tensor((4, 6), {F}), i: R.Tensor((4, 2), {I64}), u: R.Tensor((4, 2), {F})"
NLL = f'p: R.Tensor((3, 5), {F}), t: R.Tensor((3,), {I64}), w: R.Tensor((5,), {F})'


@pytest.mark.parametrize("params, body, message", [
    (X, "R.collapse_sum_to(x, (3, 8))", "R.collapse_sum_to: cannot collapse (4, 8) to (3, 8): "
     "axis 0 has 4 elements and the target's 3"),
    (X, "R.collapse_sum_to(x, (1, 4, 8))", "R.collapse_sum_to: cannot collapse (4, 8) to "
     "(1, 4, 8): the target has more axes than the data"),
    (X, "R.collapse_sum_like(x, R.zeros((2, 1), \"float32\"))", "R.collapse_sum_like: cannot "
     "collapse (4, 8) to (2, 1): axis 0 has 4 elements and the target's 2"),
    (X, "R.collapse_sum_to(R.greater(x, x), (8,))",
     "R.collapse_sum_to: needs a numeric tensor, got bool"),
    ('x: R.Tensor(("n", 4), "float32")', "R.collapse_sum_to(x, (3, 4))",
     "R.collapse_sum_to: cannot collapse (n, 4) to (3, 4): the sizes n and 3 of axis 0 are "
     "not provably equal"),
    (X3, "R.nn.group_norm(x, g, b, 3, 1, [1, 2])", "R.nn.group_norm: channel_axis 1 must not "
     "be among the axes (1, 2)"),
    (X3, "R.nn.group_norm(x, g, b, 4, 1, [2])", "R.nn.group_norm: 6 channels (axis 1) do not "
     "split into 4 groups"),
    (X3, "R.nn.group_norm(x, g, b, 0, 1, [2])", "R.nn.group_norm: num_groups must be positive, "
     "got 0"),
    (X3, "R.nn.group_norm(x, g, b, 2, 3, [2])", "R.nn.group_norm: channel_axis 3 is out of "
     "range for a tensor of rank 3"),
    (X3, "R.nn.group_norm(x, b, R.zeros((4,), \"float32\"), 2, 1, [2])",
     "R.nn.group_norm: 'beta' must have shape (6,) (the normalized axes of (2, 6, 4)), got (4,)"),
    (X3, "R.nn.group_norm(R.astype(x, \"int32\"), g, b, 2, 1, [2])",
     "R.nn.group_norm: needs a floating-point tensor, got int32"),
    ('x: R.Tensor((2, "c", 4), "float32"), g: R.Tensor(("c",), "float32"), '
     'b: R.Tensor(("c",), "float32")', "R.nn.group_norm(x, g, b, 2, 1, [2])",
     "R.nn.group_norm: the channel axis 1 has the symbolic size c; group_norm needs a "
     "constant number of channels"),
    (SC, "R.gather_elements(x, R.reshape(i, (8,)))", "R.gather_elements: indices (8,) must "
     "have the rank of the data (4, 6)"),
    (SC, "R.gather_elements(x, R.zeros((5, 2), \"int64\"), axis=1)", "R.gather_elements: "
     "indices (5, 2) are larger than the data (4, 6) along axis 0"),
    (SC, "R.scatter_elements(x, R.astype(i, \"float32\"), u)",
     "R.scatter_elements: indices must be integers, got float32"),
    (SC, "R.scatter_elements(x, i, u, reduction=\"sub\")", "R.scatter_elements: reduction "
     "must be one of update, add, mul, mean, min, max, got 'sub'"),
    (SC, "R.scatter_elements(R.astype(x, \"int32\"), i, R.astype(u, \"int32\"), "
     "reduction=\"mean\")",
     "R.scatter_elements: reduction 'mean' needs a floating-point tensor, got int32"),
    (SC, "R.scatter_elements(x, i, R.astype(u, \"float16\"))",
     "R.scatter_elements: dtype mismatch: float32 and float16"),
    (SC, "R.scatter_elements(x, R.reshape(i, (8,)), u)", "R.scatter_elements: indices (8,) "
     "must have the rank of the data (4, 6)"),
    (SC, "R.scatter_elements(x, i, R.permute_dims(u))", "R.scatter_elements: updates (2, 4) "
     "must have the shape of the indices (4, 2)"),
    (SC, "R.scatter_elements(x, i, u, axis=2)", "R.scatter_elements: axis 2 is out of range "
     "for a tensor of rank 2"),
    (SC, "R.scatter_elements(x, R.concat((i, i), axis=0), R.concat((u, u), axis=0), axis=1)",
     "R.scatter_elements: indices (8, 2) are larger than the data (4, 6) along axis 0"),
    (NLL, "R.nn.nll_loss(p, R.astype(t, \"float32\"))",
     "R.nn.nll_loss: targets must be integers, got float32"),
    (NLL, "R.nn.nll_loss(p, t, reduction=\"max\")", "R.nn.nll_loss: reduction must be one of "
     "none, mean, sum, got 'max'"),
    (NLL, "R.nn.nll_loss(p, R.zeros((5,), \"int64\"))", "R.nn.nll_loss: targets must have "
     "shape (3,) (the predictions (3, 5) without the class axis), got (5,)"),
    (NLL, "R.nn.nll_loss(p, t, R.zeros((3,), \"float32\"))", "R.nn.nll_loss: weights must have "
     "shape (5,) (one per class), got (3,)"),
    (NLL, "R.nn.nll_loss(R.astype(p, \"int32\"), t)",
     "R.nn.nll_loss: needs a floating-point tensor, got int32"),
    (NLL, "R.nn.cross_entropy_with_logits(p, R.permute_dims(p))",
     "R.nn.cross_entropy_with_logits: predictions (3, 5) and labels (5, 3) must have the same "
     "shape"),
    (NLL, "R.nn.cross_entropy_with_logits(p, R.astype(p, \"float16\"))",
     "R.nn.cross_entropy_with_logits: dtype mismatch: float32 and float16"),
])
def test_wrong_operands_are_diagnostics(params: str, body: str, message: str) -> None:
    with pytest.raises(CompileError) as err:
        Normalize()(parse(functions_module({"main": (params, body)})))
    assert err.value.diagnostics[0].message == message


def test_a_diagnostic_names_the_call(tmp_path: Path) -> None:
    """file:line:col of the call, as every graph operator's error."""
    from tirc.driver import lower

    path = tmp_path / "bad.tir"
    path.write_text(functions_module({"main": (X, "R.collapse_sum_to(x, (3, 8))")}))
    with pytest.raises(CompileError) as err:
        lower(parse_file(path))
    assert str(err.value).startswith(f"{path}:8:16: error: R.collapse_sum_to: cannot collapse")


def test_printed_calls_read_back() -> None:
    printed = print_module(Normalize()(parse(TEXT)))
    assert print_module(parse(printed)) == printed
    assert print_module(parse(TEXT)) == print_module(parse(print_module(parse(TEXT))))
