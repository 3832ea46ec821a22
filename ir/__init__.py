"""tirc's intermediate representation: dtypes, expressions, loop IR, graph IR, modules.

This package imports nothing else of tirc; every other part of the compiler builds on it.
"""

from tirc.ir.buffer import Buffer, BufferRegion, Range, make_buffer
from tirc.ir.diagnostics import CompileError, Diagnostic, DiagnosticContext
from tirc.ir.dtype import DType, DTypeError, dtype
from tirc.ir.expr import (
    BinOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    IRTypeError,
    Let,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    StringImm,
    Var,
    binop,
    cast,
    const,
)
from tirc.ir.function import PrimFunc
from tirc.ir.graph import (
    BindingBlock,
    Constant,
    ExternFunc,
    Function,
    GCall,
    GlobalVar,
    GVar,
    MatchCast,
    ObjectSInfo,
    PrimSInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeSInfo,
    StructInfo,
    TensorSInfo,
    Tuple,
    TupleGetItem,
    TupleSInfo,
    VarBinding,
)
from tirc.ir.module import IRModule
from tirc.ir.schedule import SchedInstr, SchedLambda, SchedRef, Schedule
from tirc.ir.span import Span
from tirc.ir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    LetStmt,
    MatchBufferRegion,
    SeqStmt,
    Stmt,
    While,
)
from tirc.ir.structural import structural_equal, structural_hash
from tirc.ir.visitor import Mutator, Visitor, post_order_visit, substitute

__all__ = [
    "Allocate", "AssertStmt", "AttrStmt", "BinOp", "BindingBlock", "Block", "BlockRealize",
    "Broadcast", "Buffer", "BufferLoad", "BufferRegion", "BufferStore", "Call", "Cast",
    "CompileError", "Constant", "DType", "DTypeError", "Diagnostic", "DiagnosticContext",
    "Evaluate", "ExternFunc", "FloatImm", "For", "ForKind", "Function", "GCall", "GVar",
    "GlobalVar", "IRModule", "IRTypeError", "IfThenElse", "IntImm", "IterKind", "IterVar", "Let",
    "LetStmt", "MatchBufferRegion", "MatchCast", "Mutator", "Not", "ObjectSInfo", "PrimExpr",
    "PrimFunc", "PrimSInfo", "PrimValue", "Ramp", "Range", "SchedInstr", "SchedLambda",
    "SchedRef", "Schedule", "Select", "SeqExpr", "SeqStmt", "ShapeExpr", "ShapeSInfo", "Shuffle",
    "Span", "Stmt", "StringImm", "StructInfo", "TensorSInfo", "Tuple", "TupleGetItem", "TupleSInfo",
    "Var", "VarBinding", "Visitor", "While", "binop", "cast", "const", "dtype", "make_buffer",
    "post_order_visit", "structural_equal", "structural_hash", "substitute",
]
