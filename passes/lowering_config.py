"""The lowering passes' `--pass-config` keys, their defaults, and reading them as integers.

- `vectorize.max-lanes`: most lanes of one vector (default: the target's vector width in bits
  over the element width when the target names one, else 16);
- `unroll.max-extent`: largest constant extent fully unrolled (default 64);
- `storage.stack-limit`: largest allocation, in bytes, placed on the stack (default 65536).
"""

from __future__ import annotations

from tirc.ir.diagnostics import CompileError
from tirc.passes.pass_base import PassContext

MAX_LANES = "vectorize.max-lanes"
UNROLL_MAX_EXTENT = "unroll.max-extent"
STACK_LIMIT = "storage.stack-limit"

DEFAULT_MAX_LANES = 16
DEFAULT_UNROLL_MAX_EXTENT = 64
DEFAULT_STACK_LIMIT = 64 * 1024


def config_int(ctx: PassContext, key: str, default: int | None, minimum: int = 0) -> int | None:
    """The integer value of config `key` (or `default`); a bad value is a CompileError."""
    raw = ctx.config.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip(), 0)
    except ValueError:
        raise CompileError(f"pass config '{key}' wants an integer, got '{raw}'") from None
    if value < minimum:
        raise CompileError(f"pass config '{key}' must be at least {minimum}, got {value}")
    return value


# Vector register width in bits of CPUs named by -mcpu (the widest they run at full speed).
_CPU_VECTOR_BITS = {
    "znver4": 512, "znver5": 512, "skylake-avx512": 512, "cascadelake": 512,
    "icelake-server": 512, "icelake-client": 512, "sapphirerapids": 512, "graniterapids": 512,
    "znver1": 256, "znver2": 256, "znver3": 256, "haswell": 256, "broadwell": 256,
    "skylake": 256, "alderlake": 256, "x86-64-v3": 256, "x86-64-v4": 512,
}


def target_vector_bits(target: object) -> int | None:
    """Vector register bits of a target, from its `-mcpu` or `-mattr=+avx512f`/`+avx2`."""
    if target is None:
        return None
    bits = getattr(target, "vector_bits", None)
    if isinstance(bits, int):
        return bits
    mattr = tuple(getattr(target, "mattr", ()) or ())
    if "+avx512f" in mattr:
        return 512
    mcpu = getattr(target, "mcpu", "") or ""
    if mcpu in _CPU_VECTOR_BITS:
        return _CPU_VECTOR_BITS[mcpu]
    if "+avx2" in mattr:
        return 256
    return None
