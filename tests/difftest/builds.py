"""How the differential harness builds and runs a module: `tirc FILE -o OUT.so -O<n>
[-fmegakernel=MODE]` through the compile command's own function, loaded with tirc.runtime;
the GPU pipeline, whose lowered IR runs in the GPU interpreter; or PTX, loaded by tirc.runtime
onto a real GPU (scripts/difftest.py --cuda, on a machine with one)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tirc.ir import IRModule, PrimFunc
from tirc.ir.interpreter import Interpreter

from difftest.harness import Build


def compile_module(mod: IRModule, build: Build, stem: Path) -> Any:
    """The path of `mod`'s shared object (or PTX) built as `build` says (for the GPU
    interpreter build, a GPU interpreter of the lowered module; for the scheduled build, the
    reference interpreter of the module with its schedules applied)."""
    if build.scheduled:
        from tirc.passes.schedule.apply import ApplySchedules

        return Interpreter(ApplySchedules()(mod))
    if build.cuda:
        from tirc.driver import compile_ptx

        ptx = stem.with_suffix(".ptx")
        ptx.write_text(compile_ptx(mod, f"cuda -arch={build.cuda}", opt_level=build.level).ptx)
        return ptx
    if build.gpu:
        from tirc.ir.interpreter.gpu import GPUInterpreter
        from tirc.ir.target import parse_target
        from tirc.passes.manager import run_pipeline
        from tirc.passes.pass_base import PassContext
        from tirc.passes.pipeline import build_pipeline, default_pipeline

        target = parse_target("cuda -arch=sm_80")
        ctx = PassContext(opt_level=build.level, target=target)
        lowered = run_pipeline(mod, build_pipeline(default_pipeline(target, build.level)), ctx)
        return GPUInterpreter(lowered)
    from tirc.cli.compile_cmd import CompileOptions, compile_file

    source = stem.with_suffix(".tir")
    source.write_text(mod.script())
    out = stem.with_suffix(".so")
    compile_file(CompileOptions(file=str(source), output=str(out), opt_level=build.level,
                                megakernel=build.megakernel, bounds_check=build.bounds_check))
    return out


def interpret_loop(mod: IRModule, name: str, args: list[Any]) -> list[np.ndarray]:
    """The reference: the loop function run by the interpreter, in place on `args`."""
    Interpreter(mod).call(name, *args)
    return args


Call = tuple[str, list[Any], list[np.ndarray]]
Results = Callable[[Any, str, list[Any], list[np.ndarray]], list[np.ndarray]]


def run_calls(lib: Any, calls: list[Call], results: Results
              ) -> list[list[np.ndarray] | str]:
    """Each call's results, or how it failed. A shared object runs in a child process that
    reports after every call, so a crash (a segfault in compiled code) is a finding that
    names the call, and the calls after it still run, in a new child."""
    if not isinstance(lib, Path):
        out: list[list[np.ndarray] | str] = []
        for name, args, expected in calls:
            try:
                out.append(results(lib, name, args, expected))
            except Exception as exc:  # noqa: BLE001 (reported as a finding)
                out.append(f"{type(exc).__name__}: {exc}"[:300])
        return out
    done: list[list[np.ndarray] | str] = []
    while len(done) < len(calls):
        done += _run_in_child(lib, calls[len(done):], results)
    return done


# Seconds a compiled call of a random program may take before it counts as a hang (the
# programs are small: a correct call takes milliseconds, even on a loaded machine).
CALL_TIMEOUT = 60


def _run_in_child(path: Path, calls: list[Call], results: Results
                  ) -> list[list[np.ndarray] | str]:
    """Run `calls` in a child process until they are done, the child dies or a call hangs; a
    death or a hang is the result of the call in flight (and ends the child). The child is
    spawned, not forked: a fork of a process with threads (pytest-xdist's, the big-stack
    threads of tirc.ir.deep_call) may inherit a lock some thread held and wait on it
    forever."""
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(path, calls, results, send), daemon=True)
    child.start()
    send.close()
    out: list[list[np.ndarray] | str] = []
    while len(out) < len(calls):
        try:
            if not recv.poll(CALL_TIMEOUT):
                child.kill()
                child.join()
                return [*out, f"the call did not return within {CALL_TIMEOUT} s (a hang)"]
            out.append(recv.recv())
        except EOFError:
            break
    child.join()
    if len(out) < len(calls):
        code = child.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        out.append(f"the call crashed the process ({how})")
    return out


def _child(path: Path, calls: list[Call], results: Results,
           send: Any) -> None:
    import faulthandler

    from tirc.runtime import load

    faulthandler.disable()  # a crash is reported by the parent; no traceback dump

    try:
        lib = load(path)
    except Exception as exc:  # noqa: BLE001
        for _ in calls:
            send.send(f"cannot load the library: {exc}"[:300])
        return
    for name, args, expected in calls:
        try:
            send.send(results(lib, name, args, expected))
        except Exception as exc:  # noqa: BLE001
            send.send(f"{type(exc).__name__}: {exc}"[:300])


def loop_results(lib: Any, name: str, args: list[Any], expected: list[np.ndarray]
                 ) -> list[np.ndarray]:
    """A compiled loop function (or the GPU interpreter's) run in place on `args`."""
    if hasattr(lib, "call"):
        lib.call(name, *args)
    else:
        lib[name](*args)
    return args


def run_loop(lib: Any, calls: list[Call]) -> list[list[np.ndarray] | str]:
    return run_calls(lib, calls, loop_results)


def loop_labels(func: PrimFunc) -> list[str]:
    """The buffer name of each parameter (a scalar's own name), in order (outputs' Infos are
    keyed by them)."""
    return [func.buffer_map[p].name if p in func.buffer_map else p.name for p in func.params]


def interpret_graph(mod: IRModule, name: str, args: list[Any]) -> list[np.ndarray]:
    """The reference: the graph function run by the interpreter; its results as a list."""
    got = Interpreter(mod).call(name, *args)
    return list(got) if isinstance(got, tuple) else [got]


def graph_results(lib: Any, name: str, args: list[Any], expected: list[np.ndarray]
                  ) -> list[np.ndarray]:
    """A compiled graph function's results (outputs allocated by the runtime); the GPU's
    host function takes its outputs as arguments, shaped like the expected results."""
    if hasattr(lib, "call"):
        outs = [np.zeros_like(e) for e in expected]
        lib.call(name, *args, *outs)
        return outs
    got = lib[name](*args)
    return list(got) if isinstance(got, tuple) else [np.asarray(got)]


def run_graph(lib: Any, calls: list[Call]) -> list[list[np.ndarray] | str]:
    return run_calls(lib, calls, graph_results)


def graph_labels(func: Any) -> list[str]:
    """Results of a graph function are labelled by position ("out0", "out1", ...)."""
    from tirc.ir.graph import TupleSInfo

    ret = func.ret_struct_info
    count = len(ret.fields) if isinstance(ret, TupleSInfo) else 1
    return [f"out{k}" for k in range(count)]
