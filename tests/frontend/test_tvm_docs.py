"""TVMScript in the style of TVM's documentation parses, in both `T.block` and `T.sblock`
spellings, and prints back to text that parses to the same module."""

from __future__ import annotations

from tirc.frontend import parse
from tirc.ir import Block, BlockRealize, For, ForKind, GCall, IterKind, structural_equal
from tirc.ir.printer import print_module


def _blocks(node: object) -> list[Block]:
    from tirc.frontend.context import walk

    found: list[Block] = []
    walk(node, lambda n: found.append(n) if isinstance(n, Block) else None)
    return found


def test_doc_module_parses_and_round_trips(doc_text: str) -> None:
    mod = parse(doc_text, "doc.tir")
    text = print_module(mod)
    again = parse(text, "printed.tir")
    assert structural_equal(again, mod)
    assert print_module(again) == text


def test_sblock_spelling_gives_the_same_module(doc_text: str) -> None:
    mod = parse(doc_text, "doc.tir")
    sblock = parse(doc_text.replace("T.block(", "T.sblock("), "doc_sblock.tir")
    assert structural_equal(mod, sblock)


def test_blitz_module_content(doc_modules: dict[str, str]) -> None:
    mod = parse(doc_modules["blitz"], "blitz.tir")
    assert mod.name == "MyModule"
    f = mod["main"]
    assert [str(p.dtype) for p in f.params] == ["handle", "handle"]
    assert [b.name for b in f.buffers] == ["A", "B"]
    assert f.attrs == {"global_symbol": "main", "tir.noalias": True}
    (blk,) = _blocks(f)
    assert blk.name == "B" and [iv.kind for iv in blk.iter_vars] == [IterKind.SPATIAL]
    # Regions inferred from the body: A[vi] read, B[vi] written, as point regions.
    assert [r.buffer.name for r in blk.reads] == ["A"]
    assert [r.buffer.name for r in blk.writes] == ["B"]
    assert blk.reads[0].region[0].min is blk.iter_vars[0].var


def test_mm_relu_root_allocation_and_reduction(doc_modules: dict[str, str]) -> None:
    f = parse(doc_modules["mm_relu"], "mm.tir")["mm_relu"]
    assert isinstance(f.body, BlockRealize) and f.body.block.name == "root"
    assert [b.name for b in f.body.block.alloc_buffers] == ["Y"]
    y_block = next(b for b in _blocks(f) if b.name == "Y")
    assert [iv.kind for iv in y_block.iter_vars] == [IterKind.SPATIAL] * 2 + [IterKind.REDUCE]
    assert y_block.init is not None
    assert [r.buffer.name for r in y_block.reads] == ["Y", "A", "B"]


def test_legalized_module_shapes_are_int64(doc_modules: dict[str, str]) -> None:
    mod = parse(doc_modules["legalized"], "legalized.tir")
    linear = mod["linear0"]
    x = linear.buffers[0]
    assert [str(d.dtype) for d in x.shape] == ["int64", "int64"]
    loop = linear.body.block.body.seq[0]  # type: ignore[attr-defined]
    assert isinstance(loop, For) and str(loop.loop_var.dtype) == "int64"
    main = mod["main"]
    call = main.body.blocks[0].bindings[0].value
    assert isinstance(call, GCall) and call.op == "call_tir"
    assert call.args[0].name == "linear0"
    # "n" in the signature and `n = T.int64()` in the body are one variable.
    n_param = main.params[0].struct_info.shape[0]
    assert call.sinfo_args[0].shape[0] is n_param


def test_gpu_schedule_thread_bindings(doc_modules: dict[str, str]) -> None:
    f = parse(doc_modules["gpu_scheduled"], "gpu.tir")["main"]
    loop = f.body.block.body
    tags = []
    while isinstance(loop, For) and loop.kind == ForKind.THREAD_BINDING:
        tags.append(loop.thread_tag)
        loop = loop.body
    assert tags == ["blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x"]
    assert [b.scope for b in f.body.block.alloc_buffers] == ["local", "shared"]


def test_launch_thread_becomes_thread_bound_loops(doc_modules: dict[str, str]) -> None:
    f = parse(doc_modules["lowered"], "lowered.tir")["scale"]
    outer = f.body
    assert isinstance(outer, For) and outer.thread_tag == "blockIdx.x"
    assert outer.extent.value == 4
    inner = outer.body
    assert isinstance(inner, For) and inner.thread_tag == "threadIdx.x"
    assert inner.loop_var.name == "threadIdx_x" and inner.extent.value == 32
