"""Differential run over random scalar expressions (tests/difftest/expr_programs.py): in every
integer width and signedness, float16/32/64 and bool, every program's results from the
reference interpreter equal those of the library built at -O0, -O1 and -O3 and of the GPU
pipeline run in the GPU interpreter. The long run is `scripts/difftest.py --kind expr`.
"""

from __future__ import annotations

import re

import pytest
from difftest.builds import compile_module, interpret_loop, loop_labels, run_loop
from difftest.expr_programs import FLOATS, INTS, expr_case, random_expr_program
from difftest.harness import Build, Checker, Report, format_report

SEEDS = range(0, 80)
BUILDS = [Build(0), Build(1), Build(3), Build(2, gpu=True)]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    checker = Checker(tmp_path_factory.mktemp("difftest_exprs"), compile_module,
                      interpret_loop, run_loop, loop_labels)
    return checker.check([expr_case(seed) for seed in SEEDS], BUILDS)


def test_random_expressions_agree_with_the_interpreter(report: Report) -> None:
    assert report.programs == len(SEEDS)
    assert report.builds == [str(b) for b in BUILDS]
    assert not report.findings, format_report(report, "random expressions")


def test_the_generator_covers_every_dtype_and_operator() -> None:
    """Over the seeds the suite runs, the generator stores every dtype and uses every
    operator, loop kind and loop variable dtype (the text of each program is checked, so
    the divisor guards, written `T.bitwise_or(b, 1)`, do not count as a `|`)."""
    whole = "\n".join(random_expr_program(seed).text for seed in SEEDS)
    for dt in (*INTS, *FLOATS, "bool"):
        assert re.search(rf'B\d: T.Buffer\(\(\d+,\), "{dt}"\)', whole), dt
    for op in (" // ", " % ", "T.truncdiv(", "T.truncmod(", " << ", " >> ", " & ", " | ",
               " ^ ", "~(", "T.min(", "T.max(", "T.Select(", "T.if_then_else(", "T.floor(",
               "T.exp(", "T.sqrt(", "T.round(", "T.tanh(", " / ", "T.Cast(", " and ", " or ",
               "not ", "T.parallel(", "T.vectorized(", "T.unroll(", "if i < "):
        assert op in whole, op
    for loop in ("(T.int64(", "(T.int16(", "(T.int8(", "(T.uint8("):
        assert f"for i in T.serial{loop}" in whole or f"for i in T.parallel{loop}" in whole \
            or f"for i in T.vectorized{loop}" in whole or f"for i in T.unroll{loop}" in whole, loop
    assert re.search(r"\n +if .*\n +B\d\[i\] = ", whole)  # a store under a computed condition
    assert re.search(r"\[\(i \* .*\) % ", whole)  # a load at a permuted index
    # the idioms: a non-zero start, a step, a scalar extent, a while loop over a counter in a
    # scratch buffer, a per-element choice of index, a rounding to bfloat16
    assert re.search(r"for i in [\w.]+\([1-3], \d+\):", whole)
    assert re.search(r"for i in range\(\d, \d+, \d\):", whole)
    for idiom in ("m: T.int32", "while c[0] < ", "[T.if_then_else(i < ", 'T.Cast("bfloat16"'):
        assert idiom in whole, idiom
    # the bit-level operations: a shift by the width or more (a constant, or any amount up to
    # twice the width in a wrapping type), bits reinterpreted between integers and from floats
    shifts = [(dt, int(k)) for dt, k in re.findall(r"<< T\.(\w+)\((\d+)\)\)", whole)]
    assert any(k >= int(dt.lstrip("uint")) for dt, k in shifts), shifts
    assert "<< T.bitwise_and(" in whole
    assert re.search(r'T\.reinterpret\("u?int\d+", T\.fabs\(', whole)
    assert re.search(r'T\.reinterpret\("u?int\d+", (?!T\.fabs)', whole)
    # inputs read through strided views of their storage, at an offset
    assert re.search(r"V\d = T\.decl_buffer\(\(\d+,\), \"\w+\", data=A\d\.data, "
                     r"strides=\[[23]\], elem_offset=[1-9]", whole)
    assert re.search(r"V\d\[T\.min\(i, \d+\)\]", whole)
    # names bound to values: `T.Let(body, where={t: value})` whose body reads the name, and
    # `t = T.bind(value)` before the stores
    assert re.search(r"T\.Let\(.*\bt\d+\b.*, where=\{t\d+: ", whole)
    assert re.search(r"\n +t\d+ = T\.bind\(", whole)
