"""Loop-level constructs build the IR the printer and the passes expect."""

from __future__ import annotations

from tirc.frontend import parse
from tirc.ir import (
    Allocate,
    AssertStmt,
    BinOp,
    BlockRealize,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    Evaluate,
    FloatImm,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IterKind,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Var,
    While,
    structural_equal,
)

HEADER = "from tvm.script import tir as T\n\n\n"


def func(body: str, params: str = 'A: T.Buffer((64,), "float32")') -> PrimFunc:
    text = HEADER + f"@T.prim_func\ndef f({params}):\n" + body
    f = parse(text, "loops.tir")["f"]
    assert isinstance(f, PrimFunc)
    return f


def test_loop_kinds_and_ranges() -> None:
    f = func("""\
    for i in range(2, 10):
        for j in T.parallel(8):
            for k in T.vectorized(4):
                for u in T.unroll(0, 4, annotations={"pragma": 1}):
                    for t in T.thread_binding(0, 32, thread="threadIdx.x"):
                        A[i + j + k + u + t] = 1.0
""")
    loops = []
    s = f.body
    while isinstance(s, For):
        loops.append(s)
        s = s.body
    assert [lp.kind for lp in loops] == [ForKind.SERIAL, ForKind.PARALLEL, ForKind.VECTORIZED,
                                         ForKind.UNROLLED, ForKind.THREAD_BINDING]
    assert [(lp.min.value, lp.extent.value) for lp in loops] == [(2, 8), (0, 8), (0, 4),
                                                                   (0, 4), (0, 32)]
    assert loops[3].annotations == {"pragma": 1}
    assert loops[4].thread_tag == "threadIdx.x"
    assert isinstance(s, BufferStore) and isinstance(s.value, FloatImm)


def test_grid_nests_loops_with_the_extent_dtype() -> None:
    f = func("""\
    for i, j in T.grid(T.int64(4), 8):
        A[i * T.int64(8) + j] = 0.0
""")
    outer = f.body
    assert isinstance(outer, For) and isinstance(outer.body, For)
    assert str(outer.loop_var.dtype) == "int64" and str(outer.min.dtype) == "int64"
    assert str(outer.body.loop_var.dtype) == "int32"
    store = outer.body.body
    # int32 j is widened to int64 next to the int64 product.
    assert isinstance(store.indices[0], BinOp) and str(store.indices[0].dtype) == "int64"
    assert isinstance(store.indices[0].b, Cast)


def test_symbolic_size_and_match_buffer() -> None:
    f = func("""\
    n = T.int64()
    X = T.match_buffer(x, (n, 4), "float16")
    for i in range(n):
        X[i, 0] = T.float16(0)
""", params="x: T.handle, k: T.int32")
    x, k = f.params
    assert str(x.dtype) == "handle" and str(k.dtype) == "int32"
    buf = f.buffer_map[x]
    assert buf.name == "X" and str(buf.dtype) == "float16"
    n = buf.shape[0]
    assert isinstance(n, Var) and str(n.dtype) == "int64"
    assert f.body.extent is n and str(f.body.loop_var.dtype) == "int64"
    assert k not in f.buffer_map


def test_buffer_parameter_is_a_handle_with_a_buffer() -> None:
    f = func("    pass\n", params='A: T.Buffer((4, 8), "int8", strides=(16, 1), align=32)')
    (h,) = f.params
    buf = f.buffer_map[h]
    assert str(h.dtype) == "handle" and buf.name == "A"
    assert [d.value for d in buf.shape] == [4, 8] and [s.value for s in buf.strides] == [16, 1]
    assert buf.align == 32 and str(buf.dtype) == "int8"
    assert isinstance(f.body, Evaluate) and f.body.value.value == 0


def test_block_iter_vars_regions_and_init() -> None:
    f = func("""\
    for i, k in T.grid(8, 16):
        with T.block("row_sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            T.where(vi < 7)
            T.reads(A[vi * 8:vi * 8 + 8])
            T.writes(A[vi])
            T.block_attr({"tag": "x"})
            with T.init():
                A[vi] = 0.0
            A[vi] = A[vi] + A[vk]
""")
    br = f.body.body.body
    assert isinstance(br, BlockRealize)
    blk = br.block
    i, k = f.body.loop_var, f.body.body.loop_var
    assert br.iter_values == (i, k)
    assert [iv.kind for iv in blk.iter_vars] == [IterKind.SPATIAL, IterKind.REDUCE]
    assert [iv.dom.extent.value for iv in blk.iter_vars] == [8, 16]
    assert isinstance(br.predicate, BinOp) and br.predicate.op == "lt"
    (read,) = blk.reads
    assert read.region[0].extent.value == 8  # vi*8 : vi*8 + 8 folds to extent 8
    assert blk.annotations == {"tag": "x"}
    assert isinstance(blk.init, BufferStore)


def test_axis_spatial_with_start_and_stop() -> None:
    f = func("""\
    for i in range(8):
        with T.sblock("b"):
            vi = T.axis.spatial((4, 12), i + 4)
            vo = T.axis.opaque(8, i)
            A[vi + vo] = 1.0
""")
    blk = f.body.body.block
    dom = blk.iter_vars[0].dom
    assert (dom.min.value, dom.extent.value) == (4, 8)
    assert blk.iter_vars[1].kind == IterKind.OPAQUE


def test_inferred_regions_relax_inner_loops() -> None:
    f = func("""\
    B = T.alloc_buffer((8,), "float32")
    for i in range(8):
        with T.block("row"):
            vi = T.axis.spatial(8, i)
            for k in range(8):
                B[vi] = B[vi] + A[vi * 8 + k]
""")
    blk = f.body.block.body.body.block
    reads = {r.buffer.name: r.region[0] for r in blk.reads}
    assert set(reads) == {"A", "B"}
    assert reads["B"].min is blk.iter_vars[0].var and reads["B"].extent.value == 1
    # A's index uses the inner loop variable k: the whole dimension is read.
    assert (reads["A"].min.value, reads["A"].extent.value) == (0, 64)
    assert [w.buffer.name for w in blk.writes] == ["B"]


def test_implicit_and_explicit_root_blocks_are_equal() -> None:
    implicit = func("""\
    B = T.alloc_buffer((4,), "float32")
    for i in range(4):
        B[i] = A[i]
""")
    explicit = func("""\
    with T.block("root"):
        B = T.alloc_buffer((4,), "float32")
        for i in range(4):
            B[i] = A[i]
""")
    root = implicit.body
    assert isinstance(root, BlockRealize) and root.block.name == "root"
    assert root.iter_values == () and root.block.reads == () and root.block.writes == ()
    assert [b.name for b in root.block.alloc_buffers] == ["B"]
    assert structural_equal(implicit, explicit)


def test_lets_and_declarations_scope_over_the_rest() -> None:
    f = func("""\
    x: T.float32 = A[0] * 2.0
    y = T.float32(1)
    D = T.decl_buffer((8,), "int32", scope="shared")
    D[0] = 1
    A[1] = x + y
""")
    assert isinstance(f.body, LetStmt) and str(f.body.var.dtype) == "float32"
    inner = f.body.body
    assert isinstance(inner, LetStmt) and isinstance(inner.value, FloatImm)
    alloc = inner.body
    assert isinstance(alloc, Allocate) and alloc.buffer.scope == "shared"
    assert isinstance(alloc.body, SeqStmt) and len(alloc.body.seq) == 2


def test_control_flow_and_intrinsic_statements() -> None:
    f = func("""\
    if n > 4:
        A[0] = -A[1]
    else:
        A[1] = T.Cast("float32", T.max_value("float16"))
    while n < 10:
        T.evaluate(0)
    T.tvm_storage_sync("shared")
    T.assume(n > 0)
    assert n > 1, "n must be big"
    A[2] = T.float32(-3)
""", params='A: T.Buffer((64,), "float32"), n: T.int32')
    ite, loop, sync, assume, check = f.body.seq
    assert isinstance(ite, IfThenElse) and ite.else_case is not None
    assert isinstance(ite.else_case.value, FloatImm) and ite.else_case.value.value == 65504.0
    assert isinstance(loop, While)
    assert isinstance(sync.value, Call) and sync.value.op == "tvm_storage_sync"
    assert assume.value.op == "assume"
    assert isinstance(check, AssertStmt) and check.message == "n must be big"
    assert check.body.value.value == -3.0


def test_event_tensors() -> None:
    f = func("""\
    E = T.event_tensor((16,), init=n * 2)
    T.event_wait(E[0])
    T.event_notify(E[1], 2)
""", params="n: T.int32")
    alloc = f.body
    assert isinstance(alloc, Allocate)
    assert alloc.buffer.scope == "event" and str(alloc.buffer.dtype) == "int32"
    assert isinstance(alloc.init, BinOp) and alloc.init.op == "mul"
    wait, notify = alloc.body.seq
    assert wait.value.op == "event_wait" and isinstance(wait.value.args[0], BufferLoad)
    assert notify.value.op == "event_notify" and notify.value.args[1].value == 2


def test_typed_literals_and_casts() -> None:
    f = func("""\
    A[0] = T.float32(1) + T.Cast("float32", n) + T.cast(n, "float32") + T.float32("inf")
    A[1] = T.exp(1)
""", params='A: T.Buffer((4,), "float32"), n: T.int64')
    first, second = f.body.seq
    assert isinstance(second.value, Call) and second.value.op == "exp"
    assert isinstance(second.value.args[0], FloatImm)
    casts = []

    def collect(e: object) -> None:
        if isinstance(e, Cast):
            casts.append(str(e.dtype))
        for child in getattr(e, "a", None), getattr(e, "b", None):
            if child is not None:
                collect(child)

    collect(first.value)
    assert casts == ["float32", "float32"]


def test_int_literals_take_the_other_operand_dtype() -> None:
    f = func("    A[n + 1] = 0.0\n", params='A: T.Buffer((64,), "float32"), n: T.int64')
    idx = f.body.indices[0]
    assert isinstance(idx.b, IntImm) and str(idx.b.dtype) == "int64"


def test_layouts_in_both_spellings() -> None:
    from tirc.ir.layout import TileLayout, parse_layout

    f = func("""\
    S = T.alloc_buffer((8, 16), "float16", scope="shared",
                       layout=T.TileLayout(T.S[(8, 4, 2):(4 @ Axis.laneid, 1 @ Axis.laneid, 1)]))
    S[0, 0] = T.float16(A[0])
""", params='A: T.Buffer((64,), "float32", layout="S[(8, 8):(8, 1)]")')
    a_layout = f.buffers[0].layout
    s_layout = f.body.block.alloc_buffers[0].layout
    assert isinstance(a_layout, TileLayout) and a_layout == parse_layout("S[(8, 8):(8, 1)]")
    assert s_layout == parse_layout("S[(8,4,2):(4@laneid,1@laneid,1)]")


def test_ceildiv_and_infinity() -> None:
    f = func("    A[T.ceildiv(n, 8)] = T.infinity(\"float32\")\n",
             params='A: T.Buffer((64,), "float32"), n: T.int32')
    idx = f.body.indices[0]
    # (n + (8 - 1)) // 8, with the constant folded by the IR's constructors or not.
    assert isinstance(idx, BinOp) and idx.op == "floordiv" and idx.b.value == 8
    assert idx.a.op == "add" and idx.a.a is f.params[1]
    assert f.body.value.value == float("inf")
