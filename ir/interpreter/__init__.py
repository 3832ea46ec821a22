"""The reference interpreter: runs loop functions on numpy arrays, and graph functions.

It is the oracle that shows each pass keeps meaning: interpret a module before and after a
pass on the same random inputs and compare. Slow but exact: integer wrap-around, floor and
truncating division, float32 arithmetic in float32.

    run_prim_func(func, [a, b, c])            # runs in place on the arrays
    Interpreter(mod).call("main", x, w)       # any function of a module; graph ones return
    ExprEvaluator()(e, {n: 8})                # one expression, compiled once per node

The package, bottom up: `values` (dtype semantics, the environment), `buffer` (storage and
accesses), `extern` and `intrin` (calls: external functions, intrinsics), `expr`, `stmt`,
`prim_func` (a loop function with its argument checks), `ops` and `graph` (graph functions),
`module` (a whole module); `gpu` runs GPU-lowered IR with the threads of a block in lockstep.
"""

from tirc.ir.interpreter.expr import ExprEvaluator, eval_expr
from tirc.ir.interpreter.module import Interpreter, run_graph_func
from tirc.ir.interpreter.prim_func import DEFAULT_MAX_WHILE, CompiledPrimFunc, run_prim_func
from tirc.ir.interpreter.values import InterpreterError, np_dtype, to_scalar

__all__ = [
    "DEFAULT_MAX_WHILE", "CompiledPrimFunc", "ExprEvaluator", "Interpreter", "InterpreterError",
    "eval_expr", "np_dtype", "run_graph_func", "run_prim_func", "to_scalar",
]
