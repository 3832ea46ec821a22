"""lit configuration for tirc's text tests: `.tir` files with RUN and CHECK lines.

`tirc` and `filecheck` in RUN lines are replaced by the console scripts of the environment
lit runs in (the project's .venv), so a test runs the tirc that is being tested.
"""

import os
import shutil
import sys

import lit.formats

config = globals()["config"]  # provided by lit

config.name = "tirc"
config.test_format = lit.formats.ShTest(False)  # lit's internal shell (lit 23 wants this)
config.suffixes = [".tir"]
config.excludes = ["lit.cfg.py", "Inputs", "Output"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = config.test_source_root

BIN = os.path.dirname(sys.executable)


def tool(name: str) -> str:
    """The path of a console script beside this Python, else the one on PATH."""
    beside = os.path.join(BIN, name)
    found = beside if os.path.exists(beside) else shutil.which(name)
    if found is None:
        raise RuntimeError(f"lit: cannot find '{name}'; install the package with '.[test]'")
    return found


# Replace the tool names only as whole words, never inside a path.
for name in ("tirc", "filecheck"):
    config.substitutions.append((rf"(?<![\w/.-]){name}(?![\w/.-])", tool(name)))

config.environment["NO_COLOR"] = "1"
config.environment["PATH"] = os.pathsep.join([BIN, os.environ.get("PATH", "")])
