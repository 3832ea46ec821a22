"""NVPTX code generation: loop IR with thread bindings to PTX through LLVM."""
