"""`tirc run LIB FUNC`: call a function of a compiled library from the shell and time it.

Inputs come from `.npy` files (`--input A=a.npy`; a scalar parameter takes a number,
`--input n=128`) or, with `--random`, are made up (symbolic sizes from `--dim n=128`).
Outputs are allocated from the metadata's shapes; `--output DIR` saves each as `NAME.npy`.
After `--warmup N` untimed calls, the call is timed `--repeat N` times (the library call alone,
after the arguments are checked once); the median, the interquartile range and the rates are
printed: GFLOP/s from the operation count the compiler recorded for the function (`flops` in
its metadata), GB/s from the bytes of its array arguments (each read or written once).
`--ranks N` runs a library compiled for a device mesh as N processes with the installed MPI
(cli/run_ranks.py).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import click
import numpy as np
from tirc.cli.diagnostics_output import color_option, fail, reported_errors, set_color


def _pairs(items: tuple[str, ...], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise fail(f"{option} wants NAME=VALUE, got '{item}'")
        out[name] = value
    return out


def _random_array(shape: tuple[int, ...], dtype_name: str, rng: np.random.Generator) -> Any:
    from tirc.runtime.dlpack import numpy_dtype

    dt = numpy_dtype(dtype_name)
    if dt is None:
        raise fail("random bfloat16 inputs need the ml_dtypes package")
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "u":
        return rng.integers(0, 10, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-10, 10, shape).astype(dt)
    return rng.uniform(-1.0, 1.0, shape).astype(dt)


def _scalar(text: str, param: dict[str, Any]) -> Any:
    if param["dtype"] == "bool":  # `--input c=true`, `c=1`: the runtime takes a Python bool
        value = {"1": True, "true": True, "0": False, "false": False}.get(text.lower())
        if value is None:
            raise fail(f"--input {param['name']}: expected true, false, 1 or 0 for a bool "
                       f"scalar, got '{text}'")
        return value
    try:
        return float(text) if param["dtype"].startswith(("float", "bfloat")) else int(text)
    except ValueError:
        raise fail(f"--input {param['name']}: expected a number for a {param['dtype']} scalar, "
                   f"got '{text}'") from None


def _arguments(fn: Any, inputs: dict[str, str], dims: dict[str, str], random: bool,
               seed: int) -> dict[str, Any]:
    """Arrays and scalars by parameter name; outputs not given are left to allocate."""
    from tirc.runtime.shape_expr import ShapeExprError, evaluate

    names = [p["name"] for p in fn.params]
    for name in inputs:
        if name not in names:
            raise fail(f"{fn.name} has no parameter '{name}' (parameters: {', '.join(names)})")
    env = {k: _int(v, k) for k, v in dims.items()}
    values: dict[str, Any] = {}
    for p in fn.params:
        if p["name"] not in inputs:
            continue
        if p["kind"] == "scalar":
            values[p["name"]] = _scalar(inputs[p["name"]], p)
            continue
        try:
            arr = np.load(inputs[p["name"]], allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise fail(f"--input {p['name']}: cannot read '{inputs[p['name']]}': {exc}") from None
        values[p["name"]] = arr
        for k, dim in enumerate(p["shape"]):
            if isinstance(dim, str) and dim.isidentifier() and k < arr.ndim:
                env.setdefault(dim, int(arr.shape[k]))
    rng = np.random.default_rng(seed)
    args: dict[str, Any] = {}
    for p in fn.params:
        if p["name"] in values:
            args[p["name"]] = values[p["name"]]
        elif p.get("output"):
            continue  # allocated by the runtime from the metadata's shape
        elif not random:
            raise fail(f"{fn.name}: no value for parameter '{p['name']}' "
                       "(give --input NAME=FILE, or --random)")
        elif p["kind"] == "scalar":
            args[p["name"]] = _scalar(dims.get(p["name"], "1"), p)
        else:
            try:
                shape = tuple(evaluate(d, env) for d in p["shape"])
            except ShapeExprError as exc:
                raise fail(f"{fn.name}: cannot make a random '{p['name']}': {exc} "
                           "(give --dim NAME=VALUE)") from None
            args[p["name"]] = _random_array(shape, p["dtype"], rng)
    return args


def _int(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise fail(f"--dim {name}: expected an integer, got '{text}'") from None


def _fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


@click.command("run")
@click.argument("library", type=click.Path(dir_okay=False))
@click.argument("function")
@click.option("--input", "-i", "inputs", multiple=True, metavar="NAME=FILE",
              help="A parameter's value: a .npy file (or a number for a scalar parameter).")
@click.option("--random", is_flag=True, help="Make up inputs that are not given.")
@click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE",
              help="The value of a symbolic size, for --random inputs.")
@click.option("--seed", default=0, show_default=True, help="Seed of the --random inputs.")
@click.option("--output", "-o", "output_dir", type=click.Path(file_okay=False),
              help="Save each output as DIR/NAME.npy.")
@click.option("--repeat", "-n", default=10, show_default=True, type=click.IntRange(min=1),
              help="How many timed calls to make.")
@click.option("--warmup", default=1, show_default=True, type=click.IntRange(min=0),
              help="Untimed calls made first (caches, thread pool, page faults).")
@click.option("--ranks", type=click.IntRange(min=1), metavar="N",
              help="Run as N processes (one per device of the mesh) with mpiexec.")
@color_option
@click.option("--debug", is_flag=True, help="Show a traceback for internal errors.")
def run_command(library: str, function: str, inputs: tuple[str, ...], random: bool,
                dims: tuple[str, ...], seed: int, output_dir: str | None, repeat: int,
                warmup: int, ranks: int | None, color: str, debug: bool) -> None:
    """Call FUNCTION of the compiled LIBRARY (.so) and print its timing."""
    set_color(color)
    with reported_errors(debug):
        if ranks is not None:
            from tirc.cli.run_ranks import launch_ranks

            launch_ranks(ranks)
            return
        _run(library, function, _pairs(inputs, "--input"), _pairs(dims, "--dim"), random, seed,
             output_dir, repeat, warmup)


def timing_lines(times: list[float], flops: float | None, nbytes: int) -> list[str]:
    """The median, interquartile range, extremes and rates of a series of call times."""
    median = statistics.median(times)
    q1, _, q3 = (statistics.quantiles(times, n=4, method="inclusive") if len(times) > 1
                 else (times[0],) * 3)
    calls = f"{len(times)} call{'s' if len(times) != 1 else ''}"
    lines = [f"{calls}: median {_fmt_time(median)}, IQR {_fmt_time(q1)} .. {_fmt_time(q3)}, "
             f"min {_fmt_time(min(times))}, max {_fmt_time(max(times))}"]
    rates = []
    if flops and median > 0:
        rates.append(f"{flops / median / 1e9:.3g} GFLOP/s ({flops:.4g} operations)")
    if nbytes and median > 0:
        rates.append(f"{nbytes / median / 1e9:.3g} GB/s ({nbytes} bytes of arguments)")
    if rates:
        lines.append("rate at the median: " + ", ".join(rates))
    return lines


def _flops(fn: Any, args: list[Any]) -> float | None:
    """The function's recorded operation count for these arguments' sizes, if any."""
    from tirc.runtime.arguments import Binder
    from tirc.runtime.shape_expr import ShapeExprError, evaluate

    text = fn.meta.get("flops")
    if text is None:
        return None
    binder = Binder(fn.name)
    for spec, arr in zip(fn._specs, args):
        if spec.kind == "buffer":
            binder.bind(spec, arr)
        else:
            binder.env[spec.name] = int(np.asarray(arr).reshape(-1)[0]) \
                if np.asarray(arr).dtype.kind in "iub" else 0
    try:
        return float(evaluate(text, binder.env))
    except ShapeExprError:
        return None


def _run(library: str, function: str, inputs: dict[str, str], dims: dict[str, str],
         random: bool, seed: int, output_dir: str | None, repeat: int, warmup: int) -> None:
    import tirc.runtime as rt
    from tirc.cli.run_ranks import load_function, report_rank

    try:
        fn = load_function(library, function)
    except KeyError as exc:
        raise fail(str(exc.args[0])) from None
    except (rt.TircError, FileNotFoundError) as exc:
        raise fail(str(exc)) from None
    dims = {**{k: str(v) for k, v in getattr(fn, "coords", {}).items()}, **dims}
    args = _arguments(fn, inputs, dims, random, seed)
    try:
        call = fn.prepare((), args)
        for _ in range(warmup):
            fn.call_prepared(call)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn.call_prepared(call)
            times.append(time.perf_counter() - start)
    except (TypeError, ValueError, rt.TircError) as exc:
        raise fail(str(exc)) from None
    if not report_rank(fn):
        return
    click.echo(f"{fn.signature()}")
    # Rates for a plain call; a distributed one's arrays are this rank's shards.
    plain = getattr(fn, "shim", None) is None
    nbytes = sum(a.nbytes for a, s in zip(call.arrays, fn._specs)
                 if s.kind == "buffer") if plain else 0
    for line in timing_lines(times, _flops(fn, call.arrays) if plain else None, nbytes):
        click.echo(line)
    value = getattr(call, "value", None)
    if value is not None:  # a function returning a value (docs/abi.md)
        click.echo(f"  result: {value[()].item()}")
    outputs = [(p, a) for p, a in zip(fn.params, call.arrays) if p.get("output")]
    for p, arr in outputs:
        summary = f"  {p['name']}: {arr.dtype}{list(arr.shape)}"
        if arr.size:
            wide = arr.astype(np.float64)
            summary += f" min {wide.min():.6g} max {wide.max():.6g} mean {wide.mean():.6g}"
        click.echo(summary)
        if output_dir is not None:
            Path(output_dir).mkdir(parents=True, exist_ok=True)
            np.save(Path(output_dir) / f"{p['name']}.npy", arr)
    if output_dir is not None:
        click.echo(f"saved {len(outputs)} output(s) in {output_dir}")
