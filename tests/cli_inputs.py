"""Small .tir programs the CLI tests compile: canonical (as the printer writes) and not."""

from __future__ import annotations

# As the printer writes it: `tirc fmt --check` accepts it unchanged.
ADD_ONE = '''# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] + T.float32(1.0)
'''

# The same program, written the way a person might: not in canonical format.
ADD_ONE_MESSY = '''from tvm.script import tir as T

@T.prim_func
def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)
'''

# A block region outside its buffer: parses, but `verify` rejects it at the region.
REGION_OUT_OF_BOUNDS = '''@T.prim_func
def clear(A: T.Buffer((128,), "float32")):
    for i in range(128):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            T.reads()
            T.writes(A[0:130])
            A[vi] = T.float32(0.0)
'''

SYNTAX_ERROR = '''@T.prim_func
def broken(A: T.Buffer((8,), "float32")):
    for i in range(8)
        A[i] = T.float32(0.0)
'''

# A library function and a file that imports it (for -MD).
LIB = '''@T.prim_func
def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + T.float32(1.0)
'''

USES_LIB = '''from lib import add_one


@T.prim_func
def zero(A: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("Z"):
            vi = T.axis.remap("S", [i])
            A[vi] = T.float32(0.0)
'''

# A schedule file imports the function it schedules.
SCHEDULE = '''from add_one import add_one


@S.schedule("add_one", target="llvm")
def _(sch):
    b0 = sch.get_block("B")
'''
