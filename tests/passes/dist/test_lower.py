"""lower-sharding: per-device shapes (uneven ones in the mesh coordinate), collectives for
every redistribution, sizes in attributes made local, the global view recorded."""

from __future__ import annotations

import numpy as np
import pytest
from dist_support import ccl_ops, check_simulated, lowered, module_text
from tirc.ir.diagnostics import CompileError
from tirc.ir.dist.simulate import simulate
from tirc.ir.graph import ShapeSInfo, TensorSInfo
from tirc.ir.ops.sinfo_util import shape_text


def _shapes(mod, name="main"):  # noqa: ANN001, ANN202
    f = mod.functions[name]
    return {b.var.name: shape_text(b.var.struct_info.shape) for blk in f.body.blocks
            for b in blk.bindings if isinstance(b.var.struct_info, TensorSInfo)}


def test_even_split_gives_constant_local_shapes() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((8, 6), "float32", "mesh[0]", "S[0]")):
    r = R.reshape(x, R.shape([8, 2, 3]))
    z = R.zeros(R.shape([8, 2, 3]), "float32")
    s = R.add(r, z)
    b = R.broadcast_to(R.const(1.0, "float32"), R.shape([8, 2, 3]))
    t = R.multiply(s, b)
    return t
''', mesh=(4,))
    low = check_simulated(text, "main", np.arange(48, dtype="float32").reshape(8, 6))
    f = low["main"]
    assert [shape_text(p.struct_info.shape) for p in f.params] == ["(2, 6)"]
    assert _shapes(low) == {"r": "(2, 2, 3)", "z": "(2, 2, 3)", "s": "(2, 2, 3)",
                            "b": "(2, 2, 3)", "t": "(2, 2, 3)"}
    assert f.attrs["tirc.sharding"] == {"mesh": [4], "axes": ["d0"], "params": ["S[0]"],
                                        "results": ["S[0]"]}


def test_uneven_split_takes_the_mesh_coordinate() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((5, 3), "float32", "mesh[0]", "S[0]")):
    y = R.exp(x)
    return y
''')
    low = lowered(text)
    f = low["main"]
    coord = f.params[0]
    assert coord.name == "device_coord" and isinstance(coord.struct_info, ShapeSInfo)
    assert shape_text(f.params[1].struct_info.shape) == "((6 - coord_d0) // 2, 3)"
    assert f.attrs["tirc.sharding"]["coords"] == ["coord_d0"]
    parts = simulate(low, "main", np.ones((5, 3), "float32"), local=True)
    assert [parts[(c,)].shape for c in range(2)] == [(3, 3), (2, 3)]


def test_mean_over_a_split_dimension_divides_by_the_global_count() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((6, 10), "float32", "mesh[0]", "S[1]")):
    m = R.mean(x, axis=[1])
    k = R.mean(x, axis=[1], keepdims=True)
    a = R.mean(x)
    return (m, k, a)
''', mesh=(3,))
    low = check_simulated(text, "main",
                          np.random.default_rng(0).standard_normal((6, 10)).astype("float32"))
    ops = [b.value.op for blk in low["main"].body.blocks for b in blk.bindings]
    assert "mean" not in ops and ops.count("divide") == 3


def test_every_collective_kind() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((6, 4), "float32", "mesh[0]", "S[0]"),
         p: R.DTensor((6, 4), "float32", "mesh[0]", "P"),
         o: R.DTensor((6, 4), "float32", "mesh[0]", "O[1]")):
    a = R.dist.redistribute(x, device_mesh="mesh[0]", placement="S[1]")
    g = R.dist.redistribute(x, device_mesh="mesh[0]", placement="R")
    r = R.dist.redistribute(p, device_mesh="mesh[0]", placement="S[0]")
    b = R.dist.redistribute(o, device_mesh="mesh[0]", placement="R")
    s = R.dist.redistribute(b, device_mesh="mesh[0]", placement="S[1]")
    return (a, g, r, b, s)
''')
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((6, 4)).astype("float32") for _ in range(3)]
    low = check_simulated(text, "main", *args)
    assert [op for op, _ in ccl_ops(low)] == ["ccl.all_to_all", "ccl.allgather",
                                              "ccl.reduce_scatter", "ccl.broadcast", "ccl.shard"]


def test_a_group_of_one_device_moves_nothing() -> None:
    text = module_text('''@R.function
def main(x: R.DTensor((6, 4), "float32", "mesh[0]", "S[1]"), w: R.Tensor((4, 3), "float32")):
    y = R.matmul(x, w)
    return y
''', mesh=(1,))
    assert ccl_ops(lowered(text)) == []


def test_a_split_symbolic_size_is_given_to_the_program() -> None:
    """Data parallelism over a symbolic batch: no device has all of `n`, so the program takes
    it with its mesh coordinate."""
    text = module_text('''@R.function
def main(x: R.DTensor(("n", 4), "float32", "mesh[0]", "S[0]"), w: R.Tensor((4, 3), "float32")):
    y = R.matmul(x, w)
    s = R.sum(y, axis=[0])
    return (y, s)
''')
    low = lowered(text)
    f = low["main"]
    assert [v.name for v in f.params[0].struct_info.values] == ["coord_d0", "n"]
    assert f.attrs["tirc.sharding"]["sizes"] == {"n": [0, 0, 0]}
    rng = np.random.default_rng(0)
    for n in (1, 4, 5):
        check_simulated(text, "main", rng.standard_normal((n, 4)).astype("float32"),
                        rng.standard_normal((4, 3)).astype("float32"))


def test_partial_parameters_of_every_reduction() -> None:
    for op in ("P", "P[max]", "P[min]", "P[prod]"):
        text = module_text(f'''@R.function
def main(x: R.DTensor((4, 3), "float32", "mesh[0]", "{op}")):
    return R.exp(x)
''', mesh=(3,))
        low = check_simulated(text, "main", np.linspace(-1, 1, 12, dtype="float32").reshape(4, 3))
        assert [a["op_type"] for _, a in ccl_ops(low)] == [op[2:-1] if "[" in op else "sum"]
