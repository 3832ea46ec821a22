"""A program with `break` and `continue` from TVM's test suite
(tests/python/tvmscript/test_tvmscript_roundtrip.py), shared by the frontend and interpreter
tests of loop jumps."""

TVM_LOOP_JUMPS = '''
from tvm.script import tir as T

@T.prim_func
def main(a: T.handle, b: T.handle):
    A = T.match_buffer(a, (4,), "float32")
    B = T.match_buffer(b, (4,), "float32")
    for i in range(1000):
        if i % 13 == 0:
            A[1] = A[1] + 1
            continue
        if A[0] >= B[0]:
            break
'''
