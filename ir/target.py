"""Compilation targets: what `--target` names, parsed once so passes and backends can read it.

Two spellings are accepted, as in TVM: a string (`"llvm -mcpu=znver5 -mattr=+avx512f"`,
`"cuda -arch=sm_90"`) and the JSON-dict form (`{"kind": "llvm", "mcpu": "znver5"}`).
An empty `mcpu` or `triple` means the host machine's; the LLVM backend fills them in.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import field
from typing import Any

from tirc.ir.lean_dataclass import dataclass

KINDS = ("llvm", "cuda")

# Options each kind understands; anything else is kept in `options` untouched.
_FIELDS = {"mcpu", "mattr", "mtriple", "arch", "host"}


@dataclass(frozen=True)
class TargetAttr:
    """`T.target("llvm")` / `T.target({"kind": "cuda", ...})` as an attribute value, kept as
    written (a string or a dictionary); `parse_target(attr.spec)` reads it."""

    spec: Any


class TargetError(ValueError):
    """A target string or dict that does not describe a target tirc knows."""


@dataclass(frozen=True)
class Target:
    """A compilation target: `llvm` (the CPU) or `cuda` (NVIDIA GPUs through NVPTX).

    `mattr` holds LLVM feature flags (`+avx512f`); `arch` is the CUDA compute capability
    (`sm_90`); `host` is the CPU target of a GPU target's host code; `options` keeps every
    other key as written, for backends that want them.
    """

    kind: str
    mcpu: str = ""
    mattr: tuple[str, ...] = ()
    arch: str = ""
    triple: str = ""
    host: Target | None = None
    options: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_gpu(self) -> bool:
        return self.kind == "cuda"

    def __str__(self) -> str:
        """The canonical string form, which `parse_target` reads back to an equal target."""
        parts = [self.kind]
        if self.mcpu:
            parts.append(f"-mcpu={self.mcpu}")
        if self.mattr:
            parts.append(f"-mattr={','.join(self.mattr)}")
        if self.triple:
            parts.append(f"-mtriple={self.triple}")
        if self.arch:
            parts.append(f"-arch={self.arch}")
        for key, value in self.options.items():
            parts.append(f"-{key}={value}")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """TVM's dict form of this target."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.mcpu:
            out["mcpu"] = self.mcpu
        if self.mattr:
            out["mattr"] = list(self.mattr)
        if self.triple:
            out["mtriple"] = self.triple
        if self.arch:
            out["arch"] = self.arch
        if self.host is not None:
            out["host"] = self.host.to_json()
        out.update(self.options)
        return out


def host_target() -> Target:
    """The default target: LLVM for the machine tirc runs on."""
    return Target("llvm")


def parse_target(spec: str | dict[str, Any] | Target | None) -> Target:
    """Read a target from its string form, its JSON-dict form (as text or a dict), or None."""
    if spec is None:
        return host_target()
    if isinstance(spec, Target):
        return spec
    if isinstance(spec, dict):
        return _from_dict(spec)
    text = spec.strip()
    if not text:
        raise TargetError("empty target")
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TargetError(f"target is not valid JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise TargetError("a JSON target must be an object")
        return _from_dict(data)
    return _from_string(text)


def _from_string(text: str) -> Target:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise TargetError(f"cannot read target '{text}': {exc}") from None
    data: dict[str, Any] = {"kind": words[0]}
    for word in words[1:]:
        if not word.startswith("-") or "=" not in word:
            raise TargetError(f"target option '{word}' is not of the form -key=value")
        key, value = word.lstrip("-").split("=", 1)
        if key == "mattr":
            data[key] = [a for a in value.split(",") if a]
        else:
            data[key] = value
    return _from_dict(data)


def _from_dict(data: dict[str, Any]) -> Target:
    kind = data.get("kind")
    if kind not in KINDS:
        raise TargetError(f"unknown target kind '{kind}' (expected one of: {', '.join(KINDS)})")
    mattr = data.get("mattr", ())
    if isinstance(mattr, str):
        mattr = [a for a in mattr.split(",") if a]
    if not all(isinstance(a, str) for a in mattr):
        raise TargetError("target option 'mattr' must be a list of strings")
    for key in ("mcpu", "mtriple", "arch"):
        if not isinstance(data.get(key, ""), str):
            raise TargetError(f"target option '{key}' must be a string")
    if kind == "llvm" and data.get("arch"):
        raise TargetError("target option 'arch' applies to cuda targets, not llvm")
    arch = data.get("arch", "")
    if kind == "cuda" and arch and not arch.startswith("sm_"):
        raise TargetError(f"cuda arch '{arch}' should look like sm_90")
    host = data.get("host")
    return Target(
        kind=kind,
        mcpu=data.get("mcpu", ""),
        mattr=tuple(mattr),
        arch=arch,
        triple=data.get("mtriple", ""),
        host=parse_target(host) if host is not None else None,
        options={k: v for k, v in data.items() if k not in _FIELDS and k != "kind"},
    )


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
