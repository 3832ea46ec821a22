"""Random distributed programs (hypothesis): chains of elementwise operators, matmuls,
reductions, softmaxes, transposes and annotations over randomly placed inputs (split,
replicated, partial, owned) on meshes of 2, 3 and 2x2 devices (uneven splits included) run
on the numpy-simulated mesh and equal the single-process interpreter."""

from __future__ import annotations

import numpy as np
from dist_support import check_simulated, module_text
from hypothesis import given, settings
from hypothesis import strategies as st

MESHES = [(2,), (3,), (2, 2)]


@st.composite
def placement(draw: st.DrawFn, mesh: tuple[int, ...], ndim: int, partial: bool = False) -> str:
    items: list[str] = []
    for _ in mesh:
        free = [f"S[{d}]" for d in range(ndim) if f"S[{d}]" not in items]
        extra = ["P", "P[max]", "O[1]"] if partial else []
        items.append(draw(st.sampled_from(["R", *free, *extra])))
    return ", ".join(items)


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, list[np.ndarray]]:
    mesh = draw(st.sampled_from(MESHES))
    params = {"x": (6, 5), "y": (6, 5), "w": (5, 5), "b": (5,)}
    decls = []
    for name, shape in params.items():
        pl = draw(placement(mesh, len(shape), partial=True))
        decls.append(f'{name}: R.DTensor({shape}, "float32", "mesh[0]", "{pl}")')
    shapes = dict(params)
    lines = []
    for k in range(draw(st.integers(1, 5))):
        name = f"v{k}"
        pool = [v for v, s in shapes.items() if len(s) == 2]
        a = draw(st.sampled_from(pool))
        sa = shapes[a]
        rhs = [v for v, s in shapes.items() if len(s) == 2 and s[0] == sa[1]]
        op = draw(st.sampled_from(["binary", "unary", "matmul", "reduce", "softmax",
                                   "transpose", "annotate"] if rhs else
                                  ["binary", "unary", "reduce", "transpose"]))
        if op == "binary":
            others = [v for v, s in shapes.items() if s == sa or s == sa[1:] or
                      (len(s) == 2 and 1 in s and all(d in (1, e) for d, e in zip(s, sa)))]
            b = draw(st.sampled_from(others))
            f = draw(st.sampled_from(["add", "multiply", "subtract", "maximum"]))
            lines.append(f"{name} = R.{f}({a}, {b})")
            shapes[name] = sa
        elif op == "unary":
            f = draw(st.sampled_from(["exp", "tanh", "nn.relu", "negative"]))
            lines.append(f"{name} = R.{f}({a})")
            shapes[name] = sa
        elif op == "matmul":
            b = draw(st.sampled_from(rhs))
            lines.append(f"{name} = R.matmul({a}, {b})")
            shapes[name] = (sa[0], shapes[b][1])
        elif op == "reduce":
            f = draw(st.sampled_from(["sum", "max", "mean", "min"]))
            axis = draw(st.integers(0, 1))
            lines.append(f"{name} = R.{f}({a}, axis=[{axis}], keepdims=True)")
            shapes[name] = (1, sa[1]) if axis == 0 else (sa[0], 1)
        elif op == "softmax":
            axis = draw(st.integers(0, 1))
            lines.append(f"{name} = R.nn.softmax({a}, axis={axis})")
            shapes[name] = sa
        elif op == "transpose":
            lines.append(f"{name} = R.permute_dims({a}, axes=[1, 0])")
            shapes[name] = (sa[1], sa[0])
        else:
            pl = draw(placement(mesh, 2))
            lines.append(f'{name} = R.dist.annotate_sharding({a}, device_mesh="mesh[0]", '
                         f'placement="{pl}")')
            shapes[name] = sa
    last = f"v{len(lines) - 1}"
    body = "\n".join("    " + line for line in lines)
    text = module_text(f"@R.function\ndef main({', '.join(decls)}):\n{body}\n"
                       f"    return ({last}, x)\n", mesh)
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    args = [rng.uniform(-1, 1, s).astype("float32") for s in params.values()]
    return text, args


@settings(max_examples=30, deadline=None)
@given(programs())
def test_random_program_on_a_simulated_mesh(program: tuple[str, list[np.ndarray]]) -> None:
    text, args = program
    check_simulated(text, "main", *args, rtol=1e-4, atol=1e-5)
