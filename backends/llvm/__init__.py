"""tirc.backends.llvm."""
