"""What the IR says about GPUs, shared by the GPU passes, the GPU interpreter and the NVPTX
backend: thread tags and launch regions (`threads`), the architectures (`arch`), and what a
kernel's launch needs (`launch`: extents per thread axis, shared memory)."""
