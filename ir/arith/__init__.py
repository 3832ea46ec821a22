"""tirc.ir.arith."""
