"""A library rebuilt at the same path and loaded again in one process runs the new code: the
dynamic loader hands back the library already loaded under a path, so the runtime opens a
changed file through a private copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from graph_support import compile_sample
from tirc.runtime import load

SOURCE = """from tvm.script import relax as R

@R.function
def main(x: R.Tensor((4,), "float32")):
    return R.add(x, R.const({}, "float32"))
"""


def test_a_rebuilt_library_is_the_new_one(tmp_path: Path) -> None:
    src, lib = tmp_path / "add.tir", tmp_path / "add.so"
    x = np.zeros(4, np.float32)
    first = None
    for value in (1.0, 2.0, 3.0):
        src.write_text(SOURCE.format(value))
        module = compile_sample(src, lib, 0)
        first = first or module
        np.testing.assert_array_equal(module.main(x), x + value)
        np.testing.assert_array_equal(load(lib).main(x), x + value)
    assert first is not None
    np.testing.assert_array_equal(first.main(x), x + 1.0)  # an earlier module keeps its code
