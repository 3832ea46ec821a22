"""A seeded generator of graph functions that call loop functions of their own module, written
as TVMScript text, in the forms TVM prints and the operator generator never writes:

- `R.call_tir(cls.k, (a, b), out_sinfo=R.Tensor(...))`, and with a list of two out_sinfo
  (a tuple result, read back by `t[0]`, `t[1]`);
- `R.call_tir_inplace(cls.k, (a, b), inplace_indices=[0], ...)` and `[0, -1]` (an argument
  written in place and a fresh output);
- a scalar argument, `R.prim_value(T.float32(c))`, for a kernel's `s: T.float32`;
- the memory-planned forms of StaticPlanBlockMemory and KillAfterLastUse:
  `R.builtin.alloc_tensor`, `R.memory.alloc_storage` / `R.memory.alloc_tensor` (a storage
  reused by a later tensor once the earlier one is dead), a kernel called directly on its
  trailing allocation (`_ = cls.k(a, b, alloc)` or the bare statement),
  `R.memory.kill_tensor` and `R.memory.kill_storage`;
- `R.print(...)` (bound to `_` or a statement), which leaves the results unchanged;
- a random loop function of difftest.loop_programs (its parameters' inputs and outputs in
  any order) called by `R.call_tir_inplace` with `R.zeros` for its outputs (a stream of
  its own: a third of the programs);

between graph operators (add, subtract, multiply, maximum, relu, a broadcast add of a row
sum). The rows may be a symbolic `n`. A function without memory forms or prints may be one
dataflow block. Values are float32 multiples of 1/8 whose magnitude is tracked, so results
compare exactly. `calls_case(seed)` is deterministic in its seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tirc.frontend import parse
from tirc.ir import IRModule

from difftest.harness import Program
from difftest.loop_programs import random_loop_program
from difftest.values import Info, random_input

EXTENTS = (1, 2, 3, 4, 5, 8)
SYMBOLIC_VALUES = (1, 2, 3, 7)
KERNEL_KINDS = ("axpy", "pair", "update", "update_out", "rowsum", "scale")


@dataclass
class _Val:
    """A value of the graph function: its name, whether it is a row sum (shape (rows, 1)),
    and a bound on its magnitude with its granularity (multiples of 2**-frac)."""

    name: str
    column: bool
    mag: float
    frac: int


@dataclass
class _Gen:
    """The state of one program: kernels written, the function's lines, values alive."""

    seed: int
    rng: random.Random
    prefix: str
    rows: str
    rows_value: int
    cols: int
    symbolic: bool
    kernels: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    vals: list[_Val] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    names: int = 0
    memory: bool = False          # memory forms or prints: no dataflow block
    storages: list[tuple[str, str | None]] = field(default_factory=list)  # (storage, tensor)
    # parameters of other shapes and dtypes (a random loop function's inputs), and results
    # that are no _Val (its outputs), by name
    extra_params: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)
    extra_outs: list[tuple[str, Info]] = field(default_factory=list)

    def fresh(self, base: str) -> str:
        self.names += 1
        return f"{base}{self.names}"

    # ---- kernels ---------------------------------------------------------------------

    def shape(self, column: bool = False) -> str:
        return f"({self.rows}, {1 if column else self.cols})"

    def ttype(self, column: bool = False) -> str:
        return f'R.Tensor({self.shape(column)}, "float32")'

    def kernel(self, kind: str, c: float) -> str:
        """The name of a kernel of `kind` (constant `c`), written once per program."""
        if kind not in ("axpy", "update", "update_out"):
            c = 0.0  # the kernel does not use it
        name = f"{self.prefix}_{kind}" + (
            f"_{str(c).replace('.', '_').replace('-', 'm')}" if c else "")
        if name in self.kernels:
            return name
        rows = "n" if self.symbolic else f"T.int64({self.rows_value})"
        cols = f"T.int64({self.cols})"

        def buf(p: str, column: bool = False) -> str:
            return (f'        {p.upper()} = T.match_buffer({p}, ({rows}, '
                    f'{"T.int64(1)" if column else cols}), "float32")')

        head = {"axpy": "a: T.handle, b: T.handle, c: T.handle",
                "pair": "a: T.handle, b: T.handle, c: T.handle, d: T.handle",
                "update": "a: T.handle, b: T.handle",
                "update_out": "a: T.handle, b: T.handle, c: T.handle",
                "rowsum": "a: T.handle, c: T.handle",
                "scale": "a: T.handle, s: T.float32, c: T.handle"}[kind]
        out = ["    @T.prim_func", f"    def {name}({head}):"]
        if self.symbolic:
            out.append("        n = T.int64()")
        bufs = [p.strip().split(":")[0] for p in head.split(",") if "handle" in p]
        out += [buf(p, kind == "rowsum" and p == "c") for p in bufs]
        body = {
            "axpy": [f"C[vi, vj] = A[vi, vj] * T.float32({c}) + B[vi, vj]"],
            "pair": ["C[vi, vj] = A[vi, vj] + B[vi, vj]",
                     "D[vi, vj] = T.max(A[vi, vj], B[vi, vj])"],
            "update": [f"A[vi, vj] = A[vi, vj] * T.float32({c}) + B[vi, vj]"],
            "update_out": ["C[vi, vj] = A[vi, vj] - B[vi, vj]",
                           f"A[vi, vj] = A[vi, vj] * T.float32({c})"],
            "scale": ["C[vi, vj] = A[vi, vj] * s"],
        }.get(kind)
        if body is None:  # rowsum: a reduction with an init
            out += [f"        for i, j in T.grid({rows}, {cols}):",
                    '            with T.block("sum"):',
                    '                vi, vj = T.axis.remap("SR", [i, j])',
                    "                with T.init():",
                    "                    C[vi, T.int64(0)] = T.float32(0)",
                    "                C[vi, T.int64(0)] = C[vi, T.int64(0)] + A[vi, vj]"]
        else:
            out += [f"        for i, j in T.grid({rows}, {cols}):",
                    f'            with T.block("{kind}"):',
                    '                vi, vj = T.axis.remap("SS", [i, j])']
            out += [f"                {line}" for line in body]
        self.kernels[name] = "\n".join(out)
        return name

    # ---- values ----------------------------------------------------------------------

    def param(self) -> _Val:
        name = f"x{len(self.params)}"
        self.params.append(name)
        v = _Val(name, False, 4.0, 3)
        self.vals.append(v)
        return v

    def pick(self) -> _Val:
        fit = [v for v in self.vals if not v.column]
        if fit and self.rng.random() < 0.8:
            return self.rng.choice(fit[-4:])
        return self.param()

    def bind(self, name: str, value: str, mag: float, frac: int, column: bool = False,
             annotate: bool = False) -> _Val:
        ann = f": {self.ttype(column)}" if annotate else ""
        self.lines.append(f"{name}{ann} = {value}")
        v = _Val(name, column, mag, frac)
        self.vals.append(v)
        return v

    # ---- steps -----------------------------------------------------------------------

    def step(self) -> None:
        kind = self.rng.choice(("op", "op", "call", "call", "call"))
        if kind == "op":
            self.op()
        else:
            self.call()
        if self.memory and self.rng.random() < 0.15:
            self.print()

    def op(self) -> None:
        """A graph operator of one or two values (a row sum only as the broadcast operand)."""
        r = self.rng
        a = self.pick()
        cols = [v for v in self.vals[-3:] if v.column]
        name = self.fresh("lv")
        if cols and r.random() < 0.6:
            s = r.choice(cols)
            self.bind(name, f"R.add({a.name}, {s.name})", a.mag + s.mag, max(a.frac, s.frac))
            return
        op = r.choice(("add", "subtract", "multiply", "maximum", "relu", "half"))
        if op == "relu":
            self.bind(name, f"R.nn.relu({a.name})", a.mag, a.frac)
            return
        if op == "half":
            self.bind(name, f'R.multiply({a.name}, R.const(0.5, "float32"))', a.mag / 2,
                      a.frac + 1)
            return
        b = self.pick()
        mag, frac = a.mag + b.mag, max(a.frac, b.frac)
        if op == "multiply":
            mag, frac = a.mag * b.mag, a.frac + b.frac
            if mag > 1e4 or frac > 12:
                op, mag, frac = "maximum", max(a.mag, b.mag), max(a.frac, b.frac)
        elif op == "maximum":
            mag = max(a.mag, b.mag)
        self.bind(name, f"R.{op}({a.name}, {b.name})", mag, frac)

    def call(self) -> None:
        """A kernel called through R.call_tir, R.call_tir_inplace or a memory form."""
        r = self.rng
        kind = r.choice(KERNEL_KINDS)
        c = r.choice((0.5, 2.0, -1.0, 3.0))
        a, b = self.pick(), self.pick()
        k = self.kernel(kind, c)
        scaled = (a.mag * abs(c) + b.mag, max(a.frac + (c == 0.5), b.frac))
        forms = ["call_tir"]
        if kind in ("update", "update_out"):
            forms = ["inplace"]
        if self.memory and kind not in ("update", "update_out"):
            forms += ["builtin", "storage", "storage"] if not self.symbolic else ["builtin"]
        form = r.choice(forms)
        args = {"axpy": [a, b], "pair": [a, b], "update": [a, b], "update_out": [a, b],
                "rowsum": [a], "scale": [a]}[kind]
        arg_text = ", ".join(v.name for v in args)
        if kind == "scale":
            arg_text += f", R.prim_value(T.float32({c}))"
        outs = {"axpy": [(False, *scaled)],
                "pair": [(False, a.mag + b.mag, max(a.frac, b.frac)),
                         (False, max(a.mag, b.mag), max(a.frac, b.frac))],
                "update": [(False, *scaled)],
                "update_out": [(False, a.mag * abs(c), a.frac + (c == 0.5)),
                               (False, a.mag + b.mag, max(a.frac, b.frac))],
                "rowsum": [(True, a.mag * self.cols, a.frac)],
                "scale": [(False, a.mag * abs(c), a.frac + (c == 0.5))]}[kind]
        if form == "call_tir" or form == "inplace":
            sinfo = [self.ttype(col) for col, _, _ in outs]
            sinfo_text = sinfo[0] if len(sinfo) == 1 else f"[{', '.join(sinfo)}]"
            if form == "call_tir":
                value = f"R.call_tir(cls.{k}, ({arg_text},), out_sinfo={sinfo_text})"
            else:
                idx = "[0]" if kind == "update" else "[0, -1]"
                value = (f"R.call_tir_inplace(cls.{k}, ({arg_text},), inplace_indices={idx}, "
                         f"out_sinfo={sinfo_text})")
            name = self.fresh("lv")
            if len(outs) == 1:
                self.bind(name, value, outs[0][1], outs[0][2], outs[0][0])
                return
            self.lines.append(f"{name} = {value}")
            for i, (col, mag, frac) in enumerate(outs):
                self.bind(self.fresh("lv"), f"{name}[{i}]", mag, frac, col)
            return
        busy = {v.name for v in args}
        allocs: list[str] = []
        for col, _, _ in outs:
            allocs.append(self.alloc(form, col, busy))
            busy.add(allocs[-1])
        call = f"cls.{k}({arg_text}, {', '.join(allocs)})"
        self.lines.append(f"_ = {call}" if r.random() < 0.5 else call)
        for name, (col, mag, frac) in zip(allocs, outs):
            self.vals.append(_Val(name, col, mag, frac))

    def alloc(self, form: str, column: bool, busy: set[str]) -> str:
        """A fresh allocation for a kernel's output: R.builtin.alloc_tensor, or a tensor of a
        storage (a new one, or one whose tensor is dropped: killed, out of the values),
        never the storage of a tensor in `busy` (the call's arguments and other outputs)."""
        name = self.fresh("alloc")
        shape = f"R.shape([{self.rows}, {1 if column else self.cols}])"
        if form == "builtin":
            self.lines.append(f'{name} = R.builtin.alloc_tensor({shape}, dtype="float32", '
                              "runtime_device_index=0)")
            return name
        size = 4 * self.rows_value * self.cols
        reuse = [s for s in self.storages if s[1] not in busy]
        if reuse and self.rng.random() < 0.8:
            storage, old = self.rng.choice(reuse)
            if old is not None:
                self.vals = [v for v in self.vals if v.name != old]
                if self.rng.random() < 0.7:
                    self.lines.append(f"_ = R.memory.kill_tensor({old})")
            self.storages.remove((storage, old))
        else:
            storage = self.fresh("storage")
            self.lines.append(f"{storage} = R.memory.alloc_storage(R.shape([{size}]), "
                              'virtual_device_index=0, storage_scope="global", '
                              'dtype="float32")')
        self.storages.append((storage, name))
        self.lines.append(f"{name} = R.memory.alloc_tensor({storage}, 0, {shape}, "
                          '"float32")')
        return name

    def print(self) -> None:
        """R.print of one or two values, bound to `_` or as a statement."""
        vals = self.rng.sample(self.vals, min(len(self.vals), self.rng.choice((1, 2))))
        names = ", ".join(v.name for v in vals)
        fmt = " ".join(f"{v.name}={{}}" for v in vals)
        text = f'R.print({names}, format="{fmt}")'
        self.lines.append(f"_ = {text}" if self.rng.random() < 0.5 else text)

    def loop_kernel(self, r: random.Random) -> None:
        """A random loop function (difftest.loop_programs, its own callees too) called by
        `R.call_tir_inplace` on new parameters for its inputs and `R.zeros` for its outputs,
        which may be anywhere among its parameters; its outputs are results."""
        name = f"{self.prefix}_loop"
        prog = random_loop_program(r.randrange(1 << 30), name)
        printed = IRModule({**prog.helpers, name: prog.func}).script()
        self.kernels[name] = printed.split("class Module:\n", 1)[1].rstrip()
        args, inplace, sinfo = [], [], []
        for k, handle in enumerate(prog.func.params):
            buf = prog.func.buffer_map[handle]
            shape = tuple(int(getattr(d, "value", 0)) if not hasattr(d, "name")
                          else prog.sizes[d.name] for d in buf.shape)
            dims, dt = ", ".join(map(str, shape)), str(buf.dtype)
            if buf.name in prog.outputs:
                zeros = self.fresh("zeros")
                self.lines.append(f'{zeros} = R.zeros(R.shape([{dims}]), "{dt}")')
                args.append(zeros)
                inplace.append(k)
                sinfo.append(f'R.Tensor(({dims},), "{dt}")')
                self.extra_outs.append(("", prog.outputs[buf.name]))
            else:
                param = f"y{len(self.extra_params)}"
                self.extra_params.append((param, shape, dt))
                args.append(param)
        result = self.fresh("lv")
        sinfo_text = sinfo[0] if len(sinfo) == 1 else f"[{', '.join(sinfo)}]"
        self.lines.append(f"{result} = R.call_tir_inplace(cls.{name}, ({', '.join(args)},), "
                          f"inplace_indices={inplace}, out_sinfo={sinfo_text})")
        count = len(inplace)
        first = len(self.extra_outs) - count
        for j in range(count):
            value = result if count == 1 else f"{result}[{j}]"
            if count > 1:
                self.lines.append(f"{result}_{j} = {value}")
                value = f"{result}_{j}"
            self.extra_outs[first + j] = (value, self.extra_outs[first + j][1])

    # ---- the module ------------------------------------------------------------------

    def build(self, name: str) -> tuple[str, list[_Val]]:
        r = self.rng
        self.param()
        kernel = random.Random(self.seed * 7919 + 7)
        at = kernel.randint(0, 2) if kernel.random() < 0.35 else -1
        for k in range(r.randint(2, 6)):
            if k == at:
                self.loop_kernel(kernel)
            self.step()
        results = [v for v in self.vals if v.name not in self.params and not v.column]
        if not results:
            self.call()
            results = [v for v in self.vals if v.name not in self.params and not v.column]
        if not results:
            self.op()
            results = [v for v in self.vals if v.name not in self.params and not v.column]
        outs = [results[-1]]
        if len(results) > 1 and r.random() < 0.3:
            outs.insert(0, results[-2])
        alive = {v.name for v in outs}
        for storage, tensor in self.storages:
            if tensor not in alive and r.random() < 0.3:
                self.lines.append(f"_ = R.memory.kill_storage({storage})")
        names = [v.name for v in outs] + [n for n, _ in self.extra_outs]
        result = names[0] if len(names) == 1 else f"({', '.join(names)},)"
        rows = '"n"' if self.symbolic else self.rows
        params = ", ".join([f'{p}: R.Tensor(({rows}, {self.cols}), "float32")'
                            for p in self.params] +
                           [f'{p}: R.Tensor(({", ".join(map(str, shape))},), "{dt}")'
                            for p, shape, dt in self.extra_params])
        head = ["    @R.function", f"    def {name}({params}):"]
        if self.memory:
            head.append('        R.func_attr({"relax.force_pure": True})')
        if self.symbolic:
            head.append("        n = T.int64()")
        head.append("        cls = Module")
        if self.memory:
            body = [f"        {line}" for line in self.lines] + [f"        return {result}"]
        else:
            body = ["        with R.dataflow():"]
            body += [f"            {line}" for line in self.lines]
            body += [f"            gv = {result}", "            R.output(gv)",
                     "        return gv"]
        text = "\n\n".join(self.kernels.values()) + "\n\n" + "\n".join(head + body)
        return "@I.ir_module\nclass Module:\n" + text + "\n", outs


def calls_module(seed: int) -> tuple[str, str, list[tuple[tuple[int, ...], str]], list[Info]]:
    """The text of `seed`'s module, its graph function's name, the run-time shape and dtype
    of each parameter, and what is known of each result."""
    rng = random.Random(seed)
    name = f"c{seed}"
    symbolic = rng.random() < 0.4
    rows_value = rng.choice(SYMBOLIC_VALUES if symbolic else EXTENTS)
    gen = _Gen(seed, rng, name, "n" if symbolic else str(rows_value), rows_value,
               rng.choice(EXTENTS), symbolic)
    gen.memory = rng.random() < 0.5
    text, outs = gen.build(name)
    params = [((rows_value, gen.cols), "float32")] * len(gen.params) + \
        [(shape, dt) for _, shape, dt in gen.extra_params]
    infos = [Info("float32", v.mag, v.frac) for v in outs] + [i for _, i in gen.extra_outs]
    return text, name, params, infos


def calls_case(seed: int) -> Program:
    """The program of `seed` as the harness takes it: the graph function, with the kernels
    it calls as its helpers."""
    text, name, params, outs = calls_module(seed)
    mod = parse(text, f"calls{seed}.tir")

    def make(rng: np.random.Generator) -> list[Any]:
        return [random_input(shape, dt, rng) for shape, dt in params]

    infos = {f"out{k}": info for k, info in enumerate(outs)}
    helpers = {k: f for k, f in mod.functions.items() if k != name}
    return Program(seed, name, mod[name], make, infos, helpers=helpers)
