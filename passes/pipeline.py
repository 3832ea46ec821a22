"""The default pipeline for every target and -O level: the table of contents of the compiler.

`pipeline_steps` lists every step in order, one line each with what it does and when it runs;
a step is `optional` when its pass is (`Pass.optional`: an optimisation the IR reaches its
backend without, what `--opt-bisect-limit` may skip). `default_pipeline` is the names alone.
`build_pipeline` turns names (with options, `unroll{max-extent=8}`) into pass objects;
`--passes a,b,c` goes through it too, and a name that no pass has is an error everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tirc.ir.deep_call import deep_call
from tirc.ir.diagnostics import did_you_mean
from tirc.ir.lean_dataclass import dataclass
from tirc.ir.target import Target
from tirc.passes.pass_base import Pass, option_fields, option_type, parse_text
from tirc.passes.registry import pass_class, pass_names


@dataclass(frozen=True)
class Step:
    """One step of the default pipeline: the pass, why it runs, and whether it runs here."""

    name: str
    why: str
    when: bool = True

    @property
    def optional(self) -> bool:
        """Whether the step may be skipped: its pass says so (`Pass.optional`, declared once,
        where the pass is), so bisection and this table cannot disagree."""
        return pass_class(self.name).optional


def pipeline_steps(target: Target, opt_level: int, megakernel: str | None = None) -> list[Step]:
    """The steps that turn a parsed module into one ready for `target`'s backend, in order.

    `megakernel` is `-fmegakernel` (static or dynamic): on the GPU its graph functions become
    persistent kernels (megakernel-gpu) instead of launch plans of one kernel per operator; on
    the CPU the megakernel passes read it from the pass config.
    """
    cpu, gpu = not target.is_gpu, target.is_gpu
    mk_gpu = gpu and megakernel is not None      # GPU megakernel: graph steps fuse at any -O
    o1, o2 = opt_level >= 1, opt_level >= 2
    steps = [
        Step("verify", "the input is well-formed (definitions, ranks, regions)"),
        Step("static-check", "provable out-of-bounds accesses and bindings, racy parallel "
             "loops, reductions without an init"),
        Step("apply-schedules", "the module's @S.schedule functions (and --schedule files)"),
        # graph level: graph functions -> kernels and a host loop function
        Step("inline-calls", "direct calls between graph functions -> the callee's bindings"),
        Step("normalize", "struct info of every binding, shape errors at their source"),
        Step("propagate-sharding", "distributed functions: a placement for every value"),
        Step("lower-sharding", "... and the per-device program with its collectives"),
        Step("legalize-ops", "operators -> call_tir of generated loop functions"),
        Step("lower-sparse-iterations", "sparse kernels (written or legalized) -> loops with "
             "data-dependent extents, flat storage"),
        Step("annotate-op-pattern", "elementwise / broadcast / injective / reduction / fusable"),
        Step("fold-constants", "scalar computations on constants at compile time",
             when=o1 or mk_gpu),
        Step("fuse-ops", "group producers, consumers and epilogues", when=o1 or mk_gpu),
        # at every level: a module may hold `Primitive` groups of its own (TVM's FuseOps output)
        Step("fuse-tir", "one loop function per group"),
        Step("dead-code-elim", "unused bindings and functions"),
        Step("default-schedule", "parallel outer, vectorized inner loops, tiled matmul",
             when=cpu and o1),
        Step("gpu-default-schedule", "kernels bound to blocks and threads (unbound code cannot "
             "run on a GPU)", when=gpu and not mk_gpu),
        Step("megakernel-gpu-tiles", "kernels cut into the tiles of a GPU megakernel's tasks",
             when=mk_gpu),
        Step("memory-plan", "intermediate storage: tokens reused after last use"),
        Step("megakernel", "marked graph functions -> tasks and event tensors", when=cpu or mk_gpu),
        Step("lower-graph", "graph function -> host loop function running the kernels",
             when=not mk_gpu),
        Step("gpu-bind-graph-host", "the copies and constants lower-graph adds -> kernels",
             when=gpu and not mk_gpu),
        Step("megakernel-runtime", "task graphs -> one parallel region with a schedule", when=cpu),
        Step("megakernel-gpu", "task graphs -> one persistent kernel, a block per SM",
             when=mk_gpu),
        # loop level
        Step("gpu-lower-cross-thread-reduction", "reductions bound to threads -> partial folds "
             "and a tree over shared memory", when=gpu),
        Step("bounds-check", "-fbounds-check: a run-time check of every access not proved in "
             "bounds (nothing without the flag)", when=not mk_gpu),
        Step("lower-init", "block `init` -> `if` on the first reduction iteration"),
        Step("lower-blocks", "blocks -> plain loop nests with their predicates (thread "
             "bindings kept)"),
        Step("compact-buffers", "allocations moved to their uses and shrunk to what they touch "
             "(on the GPU: cached tiles to what a block or thread touches)"),
        Step("lower-layouts", "buffers with layouts -> flat storage and physical offsets"),
        Step("flatten-buffers", "n-d buffer accesses -> 1-d offsets"),
        Step("simplify", "fold and canonicalise index arithmetic", when=o1),
        Step("inject-vthread", "vthread loops -> unrolled loops (on the GPU: cut at "
             "barriers)"),
        Step("gpu-thread-binding", "check thread-bound loops; start each at 0", when=gpu),
        Step("gpu-launch-dims", "one extent per thread axis and kernel (guards)", when=gpu),
        Step("gpu-storage-scope", "shared/local buffers into the kernels that use them",
             when=gpu),
        Step("gpu-storage-sync", "barriers between shared-memory phases, where missing",
             when=gpu),
        Step("hoist-invariant-lets", "loop-invariant lets (sparse position searches) "
             "computed once before their loop", when=cpu and o2),
        Step("unswitch-guards", "full tiles of a partial-tile loop without their guards",
             when=cpu and o2),
        Step("speculate-guards", "a partial tile's accumulators updated for every row, on "
             "clamped loads", when=cpu and o2),
        Step("vectorize", "vectorized loops -> ramps and broadcasts", when=o2),
        Step("unroll", "unrolled (and small constant) loops -> straight-line code",
             when=o2),
        Step("simplify", "clean up what vectorize and unroll left", when=o2),
        Step("storage-rewrite", "allocations hoisted out of loops, stack or heap", when=cpu),
        Step("gpu-split-host-device", "each launch region -> a kernel; host -> launch plan",
             when=gpu),
        Step("gpu-bounds-record", "-fbounds-check in kernels: a failed check fills the call's "
             "error record and ends its thread; the host reports it", when=gpu and not mk_gpu),
        Step("verify-gpu", "no parallel loops, launch and shared-memory limits", when=gpu),
        Step("make-entry", "exported entry points that check their arguments", when=cpu),
    ]
    return [s for s in steps if s.when]


def default_pipeline(target: Target, opt_level: int, megakernel: str | None = None) -> list[str]:
    """The pass names of `pipeline_steps`, in order."""
    return [s.name for s in pipeline_steps(target, opt_level, megakernel)]


class PipelineError(ValueError):
    """A pass name or option that no pass has; the message suggests close matches."""


def split_spec(text: str) -> list[str]:
    """Split `a,b{x=1,y=2},c` at the commas outside braces."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    items.append(cur.strip())
    return [i for i in items if i]


def check_pass_name(name: str) -> None:
    """Raise PipelineError for a name no pass has, listing the closest ones."""
    names = pass_names()
    if name in names:
        return
    import difflib

    scored = sorted(((difflib.SequenceMatcher(None, name, n).ratio(), n) for n in names),
                    reverse=True)
    best = scored[0][0] if scored else 0.0
    close = [n for r, n in scored[:3] if r >= max(0.6, best - 0.1)]
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise PipelineError(f"unknown pass '{name}'{hint} ('tirc passes' lists them all)")


def make_pass(spec: str) -> Pass:
    """One pass from `name` or `name{option=value,...}`; option values are typed by field and
    checked as the option says."""
    name, _, rest = spec.partition("{")
    name = name.strip()
    check_pass_name(name)
    cls = pass_class(name)
    options: dict[str, Any] = {}
    if rest:
        if not rest.endswith("}"):
            raise PipelineError(f"missing '}}' in pass options of '{spec}'")
        fields = {f.name.replace("_", "-"): f for f in option_fields(cls)}
        for item in split_spec(rest[:-1]):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or key not in fields:
                known = ", ".join(fields) or "none"
                raise PipelineError(f"pass '{name}' has no option '{key}' (options: {known})")
            f = fields[key]
            options[f.name] = parse_option_value(value.strip(), option_type(f), name, key)
            check = f.metadata.get("check")
            problem = check(options[f.name]) if check is not None else None
            if problem is not None:
                raise PipelineError(f"option '{key}' of pass '{name}' {problem}")
    return cls(**options)


def parse_option_value(value: str, annotation: Any, pass_name: str, key: str) -> Any:
    """A pass option's text as the field's type (bool, int, float, optionally `| None`;
    anything else stays str)."""
    kind = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    try:
        return parse_text(value, kind)
    except ValueError:
        base = kind.replace(" ", "").removesuffix("|None")
        article = "an" if base == "int" else "a"
        raise PipelineError(f"option '{key}' of pass '{pass_name}' wants {article} {base}, "
                            f"got '{value}'") from None


def pass_spec(p: Pass) -> str:
    """`p` as `--passes` writes it: the name, and `{option=value,...}` for every option, so
    that `make_pass(pass_spec(p)) == p`."""
    options = [f"{f.name.replace('_', '-')}={_option_text(getattr(p, f.name))}"
               for f in option_fields(type(p))]
    return f"{p.name}{{{','.join(options)}}}" if options else p.name


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else str(value)


def config_keys() -> list[str]:
    """Every `--pass-config` key: the `config` alias of some registered pass's option (imports
    every pass module; asked only when a compile has config entries)."""
    keys = {f.metadata.get("config") for name in pass_names()
            for f in option_fields(pass_class(name))}
    return sorted(k for k in keys if k)


def check_config_keys(keys: Iterable[str]) -> None:
    """Raise PipelineError for a `--pass-config` key no pass option reads (a misspelt key
    would otherwise be ignored without a word), with the closest keys."""
    known = config_keys()
    for key in keys:
        if key not in known:
            raise PipelineError(f"unknown pass config key '{key}'{did_you_mean(key, known)} "
                                f"('tirc passes -v' lists each option with its key)")


def build_pipeline(specs: Iterable[str], disabled: Iterable[str] = ()) -> list[Pass]:
    """Pass objects for `specs` (names with optional options), leaving out `disabled` ones."""
    off = set(disabled)
    for name in off:
        check_pass_name(name)
    # On one big-stack thread: the first import of a pass's module may nest deep (numpy's own
    # imports under it), and the caller's recursion limit is not ours to assume.
    passes = deep_call(lambda: [make_pass(s) for s in specs])
    return [p for p in passes if p.name not in off]

