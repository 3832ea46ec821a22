"""tirc.runtime: load a library tirc built and call its functions with numpy arrays.

Imports only numpy, ctypes and the standard library, so a deployed library needs nothing else.
"""

from tirc.runtime import cpu_check
from tirc.runtime.arguments import empty_aligned
from tirc.runtime.errors import TircError
from tirc.runtime.externs import get_func, register_func
from tirc.runtime.function import Function
from tirc.runtime.module import Module, load

__all__ = ["Function", "Module", "TircError", "cpu_check", "empty_aligned", "get_func", "load",
           "register_func"]
