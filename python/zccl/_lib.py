"""libzccl.so through ctypes: where it is found, and its functions' types.

ctypes, not cffi: it comes with Python (Debian's python3 has it, cffi is a
package more), needs no compiler at install time, and zccl's C API is a
handful of functions on plain pointers and a few small structs, which
ctypes describes directly.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

UNIQUE_ID_BYTES = 128

# zcclResult_t
SUCCESS, IN_PROGRESS = 0, 7


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class _Compression(ctypes.Structure):
    """zcclCompression_t (zccl.h)."""

    _fields_ = [
        ("codec", ctypes.c_int),
        ("mode", ctypes.c_int),
        ("eb", ctypes.c_double),
        ("hasFill", ctypes.c_int),
        ("fillValue", ctypes.c_double),
        ("minBytes", ctypes.c_size_t),
    ]


def default_compression() -> _Compression:
    """ZCCL_COMPRESSION_INITIALIZER: off, REL 1e-3, no fill, 64 KiB."""
    return _Compression(codec=0, mode=1, eb=1e-3, hasFill=0, fillValue=0.0, minBytes=64 << 10)


def _candidates() -> list[Path]:
    """Where libzccl.so may be, in the order tried."""
    out = []
    env = os.environ.get("ZCCL_LIBRARY")
    if env:
        out.append(Path(env))
    here = Path(__file__).resolve().parent
    out.append(here / "libzccl.so")  # a copy installed with the package
    for up in here.parents:  # the source tree's build directory
        out.append(up / "build" / "libzccl.so")
        if (up / "CMakeLists.txt").exists():
            break
    found = ctypes.util.find_library("zccl")
    if found:
        out.append(Path(found))
    return out


def load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_absolute() and not path.exists():
            continue
        try:
            lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        _declare(lib)
        lib._zccl_path = str(path)
        return lib
    raise OSError("libzccl.so not found; set ZCCL_LIBRARY to its path (tried: " + ", ".join(tried) + ")")


def _declare(lib: ctypes.CDLL) -> None:
    P, I, Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    R = ctypes.c_int
    comm_p = ctypes.POINTER(ctypes.c_void_p)
    sigs = {
        "zcclGetVersion": (R, [ctypes.POINTER(I)]),
        "zcclGetErrorString": (ctypes.c_char_p, [I]),
        "zcclGetLastError": (ctypes.c_char_p, [P]),
        "zcclGetUniqueId": (R, [ctypes.POINTER(_UniqueId)]),
        "zcclCommInitRank": (R, [comm_p, I, _UniqueId, I]),
        "zcclCommDestroy": (R, [P]),
        "zcclCommAbort": (R, [P]),
        "zcclCommCount": (R, [P, ctypes.POINTER(I)]),
        "zcclCommUserRank": (R, [P, ctypes.POINTER(I)]),
        "zcclCommSplit": (R, [P, I, I, comm_p, P]),
        "zcclCommSetCompression": (R, [P, ctypes.POINTER(_Compression)]),
        "zcclCommGetCompression": (R, [P, ctypes.POINTER(_Compression)]),
        "zcclCommCompressionStats": (R, [P, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]),
        "zcclCompressionFromString": (R, [ctypes.c_char_p, ctypes.POINTER(_Compression)]),
        "zcclCompressionToString": (R, [ctypes.POINTER(_Compression), ctypes.c_char_p, Z]),
        "zcclCompressRoundtrip": (R, [ctypes.POINTER(_Compression), P, P, Z, I, ctypes.POINTER(ctypes.c_double)]),
        "zcclAllReduce": (R, [P, P, Z, I, I, P, P]),
        "zcclBroadcast": (R, [P, P, Z, I, I, P, P]),
        "zcclReduce": (R, [P, P, Z, I, I, I, P, P]),
        "zcclAllGather": (R, [P, P, Z, I, P, P]),
        "zcclReduceScatter": (R, [P, P, Z, I, I, P, P]),
        "zcclAlltoAll": (R, [P, P, Z, I, P, P]),
        "zcclGather": (R, [P, P, Z, I, I, P, P]),
        "zcclScatter": (R, [P, P, Z, I, I, P, P]),
        "zcclSend": (R, [P, Z, I, I, P, P]),
        "zcclRecv": (R, [P, Z, I, I, P, P]),
        "zcclGroupStart": (R, []),
        "zcclGroupEnd": (R, []),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
