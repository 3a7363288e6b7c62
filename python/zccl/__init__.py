"""zccl for Python: error-bounded compressed collectives on numpy arrays and
CPU torch tensors, over libzccl.so (docs/python.md).

    import numpy as np, zccl
    from mpi4py import MPI
    comm = zccl.Comm.from_mpi(MPI.COMM_WORLD)
    comm.set_compression("codec=hz,mode=rel,eb=1e-3")
    x = np.random.rand(1 << 20).astype(np.float32)
    comm.allreduce(x)                      # in place, like torch.distributed
    print(comm.compression_stats())

Buffers are used where they lie (zero copy): they must be C-contiguous,
of a dtype zccl has, and writable where results go; anything else raises
ValueError or TypeError before zccl is called. zccl's failures raise
ZcclError carrying zccl's message.
"""
from __future__ import annotations

import ctypes
import dataclasses
from typing import Any, Optional, Tuple, Union

from . import _lib

__all__ = ["Comm", "Compression", "CompressionStats", "UniqueId", "ZcclError", "compress_roundtrip", "version",
           "library_path"]

_L = _lib.load()

_RESULT_NAMES = ["success", "unhandled CUDA error", "system error", "internal error", "invalid argument",
                 "invalid usage", "remote error", "in progress"]

_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}

# zcclDataType_t by numpy dtype name and by torch dtype name
_NP_TYPES = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5, "float16": 6,
             "float32": 7, "float64": 8}
_TORCH_TYPES = {"torch.int8": 0, "torch.uint8": 1, "torch.int32": 2, "torch.int64": 4, "torch.float16": 6,
                "torch.float32": 7, "torch.float64": 8, "torch.bfloat16": 9}


class ZcclError(RuntimeError):
    """A zccl call failed: code is its zcclResult_t, the message zccl's."""

    def __init__(self, code: int, message: str):
        self.code = code
        name = _RESULT_NAMES[code] if 0 <= code < len(_RESULT_NAMES) else "unknown"
        super().__init__(f"{message} ({name}, {code})" if message else f"zccl: {name} ({code})")


def _check(res: int, comm: Optional[ctypes.c_void_p] = None) -> None:
    if res != _lib.SUCCESS:
        msg = _L.zcclGetLastError(comm)
        raise ZcclError(res, msg.decode(errors="replace") if msg else "")


def version() -> int:
    """The library's ZCCL_VERSION_CODE (major*10000 + minor*100 + patch)."""
    v = ctypes.c_int(0)
    _check(_L.zcclGetVersion(ctypes.byref(v)))
    return v.value


def library_path() -> str:
    """The libzccl.so this package loaded."""
    return _L._zccl_path


class UniqueId:
    """The 128 bytes every rank of a new communicator must hold: made by one
    rank (UniqueId.new()), passed to the others however the program likes
    (bytes(uid), UniqueId(data))."""

    def __init__(self, data: bytes):
        if len(data) != _lib.UNIQUE_ID_BYTES:
            raise ValueError(f"a unique id is {_lib.UNIQUE_ID_BYTES} bytes, not {len(data)}")
        self._id = _lib._UniqueId()
        ctypes.memmove(ctypes.byref(self._id), data, _lib.UNIQUE_ID_BYTES)

    @classmethod
    def new(cls) -> "UniqueId":
        uid = _lib._UniqueId()
        _check(_L.zcclGetUniqueId(ctypes.byref(uid)))
        return cls(bytes(uid))

    def __bytes__(self) -> bytes:
        return ctypes.string_at(ctypes.byref(self._id), _lib.UNIQUE_ID_BYTES)


@dataclasses.dataclass
class Compression:
    """A communicator's compression (zcclCompression_t). codec: none, auto,
    szp, hz, rle, zfp; mode: abs, rel, target, target-rel; eb the bound;
    fill a value carried exactly (None: none); min_bytes: smaller messages
    go uncompressed. Also as text: "codec=hz,mode=rel,eb=1e-3"."""

    codec: str = "none"
    mode: str = "rel"
    eb: float = 1e-3
    fill: Optional[float] = None
    min_bytes: int = 64 << 10

    def __str__(self) -> str:
        text = f"codec={self.codec},mode={self.mode},eb={self.eb!r},min_bytes={self.min_bytes}"
        return text + (f",fill={self.fill!r}" if self.fill is not None else "")

    @classmethod
    def parse(cls, text: str) -> "Compression":
        """Parsed by zccl itself, so every spelling it takes works here."""
        c = _lib.default_compression()
        _check(_L.zcclCompressionFromString(text.encode(), ctypes.byref(c)))
        return cls._from_c(c)

    def _to_c(self) -> "_lib._Compression":
        c = _lib.default_compression()
        _check(_L.zcclCompressionFromString(str(self).encode(), ctypes.byref(c)))
        return c

    @classmethod
    def _from_c(cls, c: "_lib._Compression") -> "Compression":
        buf = ctypes.create_string_buffer(256)
        _check(_L.zcclCompressionToString(ctypes.byref(c), buf, len(buf)))
        fields = dict(kv.split("=", 1) for kv in buf.value.decode().split(",") if "=" in kv)
        return cls(codec=fields.get("codec", "none"), mode=fields.get("mode", "rel"), eb=c.eb,
                   fill=c.fillValue if c.hasFill else None, min_bytes=int(c.minBytes))


@dataclasses.dataclass(frozen=True)
class CompressionStats:
    """What the communicator's compressed streams carried so far: the raw
    bytes they stand for, their own bytes, and the ratio."""

    raw_bytes: int
    wire_bytes: int

    @property
    def ratio(self) -> float:
        return self.raw_bytes / self.wire_bytes if self.wire_bytes else 1.0


_BY_DTYPE: dict = {}  # dtype object -> zcclDataType_t, filled as dtypes are first seen


class _Buf:
    """A numpy array or CPU torch tensor as zccl sees it: address, element
    count and zcclDataType_t."""

    __slots__ = ("obj", "dtype", "ptr", "count", "itemsize")

    def __init__(self, obj: Any, what: str, writable: bool):
        self.obj = obj
        mod = type(obj).__module__
        if mod.startswith("torch"):
            if obj.device.type != "cpu":
                raise ValueError(f"{what}: a {obj.device.type} tensor; this package takes CPU tensors "
                                 "(device tensors: zccl's C API or its libnccl.so.2)")
            if not obj.is_contiguous():
                raise ValueError(f"{what}: the tensor is not contiguous (use .contiguous())")
            self.dtype = _BY_DTYPE.get(obj.dtype)
            if self.dtype is None:
                name = str(obj.dtype)
                if name not in _TORCH_TYPES:
                    raise TypeError(f"{what}: zccl has no {name} (it has {', '.join(sorted(_TORCH_TYPES))})")
                self.dtype = _BY_DTYPE[obj.dtype] = _TORCH_TYPES[name]
            self.ptr = obj.data_ptr()
            self.count = obj.numel()
            self.itemsize = obj.element_size()
        elif hasattr(obj, "__array_interface__") and hasattr(obj, "flags"):
            if not obj.flags["C_CONTIGUOUS"]:
                raise ValueError(f"{what}: the array is not C-contiguous (use numpy.ascontiguousarray)")
            if writable and not obj.flags["WRITEABLE"]:
                raise ValueError(f"{what}: the array is read-only and results go there")
            self.dtype = _BY_DTYPE.get(obj.dtype)
            if self.dtype is None:
                name = str(obj.dtype)
                if name not in _NP_TYPES:
                    raise TypeError(f"{what}: zccl has no {name} (it has {', '.join(sorted(_NP_TYPES))})")
                self.dtype = _BY_DTYPE[obj.dtype] = _NP_TYPES[name]
            self.ptr = obj.__array_interface__["data"][0]
            self.count = obj.size
            self.itemsize = obj.itemsize
        else:
            raise TypeError(f"{what}: a numpy array or a CPU torch tensor, not {type(obj).__name__}")


def _empty_like(x: Any, count: int, shape: Optional[tuple] = None) -> Any:
    """A new buffer of x's kind and dtype holding count elements."""
    shape = shape if shape is not None else (count,)
    if type(x).__module__.startswith("torch"):
        import torch

        return torch.empty(shape, dtype=x.dtype)
    import numpy

    return numpy.empty(shape, dtype=x.dtype)


def compress_roundtrip(x: Any, compression: Union[Compression, str], out: Any = None) -> Tuple[Any, float]:
    """What compression makes of one rank's contribution
    (zcclCompressRoundtrip): x compressed and decompressed into out (None: a
    new buffer; x itself for in place), and the absolute bound applied.
    out - x is this rank's compression error (error feedback's residual); in
    an hz AllReduce the output's error is the sum of the ranks' errors.
    Modes abs and rel (rel: x's own range)."""
    if isinstance(compression, str):
        compression = Compression.parse(compression)
    c = compression._to_c()
    s = _Buf(x, "compress_roundtrip: x", writable=out is x)
    if out is None:
        out = _empty_like(x, s.count, tuple(x.shape))
    r = _Buf(out, "compress_roundtrip: out", writable=True)
    if r.dtype != s.dtype or r.count != s.count:
        raise ValueError("compress_roundtrip: out must match x's dtype and size")
    eb = ctypes.c_double()
    _check(_L.zcclCompressRoundtrip(ctypes.byref(c), s.ptr, r.ptr, s.count, s.dtype, ctypes.byref(eb)))
    return out, eb.value

def _op(op: str) -> int:
    try:
        return _OPS[op]
    except KeyError:
        raise ValueError(f"op {op!r}: one of {', '.join(_OPS)}") from None


class Comm:
    """A zccl communicator: `nranks` ranks, this one `rank`, made from one
    UniqueId (Comm(nranks, uid, rank)), from an mpi4py communicator
    (Comm.from_mpi) or a torch.distributed store (Comm.from_store). Calls on
    it block until done (host memory)."""

    def __init__(self, nranks: int, uid: Union[UniqueId, bytes], rank: int):
        if not isinstance(uid, UniqueId):
            uid = UniqueId(bytes(uid))
        handle = ctypes.c_void_p()
        _check(_L.zcclCommInitRank(ctypes.byref(handle), int(nranks), uid._id, int(rank)))
        self._h = handle

    @classmethod
    def from_mpi(cls, mpi_comm: Any) -> "Comm":
        """The ranks of an mpi4py communicator, in its order."""
        rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
        data = bytes(UniqueId.new()) if rank == 0 else None
        data = mpi_comm.bcast(data, root=0)
        return cls(size, data, rank)

    @classmethod
    def from_store(cls, store: Any, rank: int, size: int, key: str = "zccl/unique_id") -> "Comm":
        """The ranks of a torch.distributed store (TCPStore, FileStore, the
        default group's): rank 0 puts the id under key, the others wait for it."""
        if rank == 0:
            store.set(key, bytes(UniqueId.new()))
        return cls(size, bytes(store.get(key)), rank)

    # ---- the communicator ----

    @property
    def handle(self) -> int:
        if self._h is None:
            raise ValueError("the communicator was destroyed")
        return self._h.value

    @property
    def rank(self) -> int:
        v = ctypes.c_int()
        _check(_L.zcclCommUserRank(self.handle, ctypes.byref(v)), self._h)
        return v.value

    @property
    def size(self) -> int:
        v = ctypes.c_int()
        _check(_L.zcclCommCount(self.handle, ctypes.byref(v)), self._h)
        return v.value

    def split(self, color: int, key: int) -> Optional["Comm"]:
        """zcclCommSplit: ranks of one color, ordered by key (color < 0: none)."""
        out = ctypes.c_void_p()
        _check(_L.zcclCommSplit(self.handle, color if color >= 0 else -1, key, ctypes.byref(out), None), self._h)
        if not out.value:
            return None
        c = Comm.__new__(Comm)
        c._h = out
        return c

    def destroy(self) -> None:
        """Waits for what is queued, then frees the communicator (also on
        leaving a `with` block)."""
        if self._h is not None:
            h, self._h = self._h, None
            _check(_L.zcclCommDestroy(h))

    def abort(self) -> None:
        if self._h is not None:
            h, self._h = self._h, None
            _check(_L.zcclCommAbort(h))

    def __enter__(self) -> "Comm":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.destroy()

    # ---- compression ----

    def set_compression(self, compression: Union[Compression, str]) -> None:
        if isinstance(compression, str):
            compression = Compression.parse(compression)
        c = compression._to_c()
        _check(_L.zcclCommSetCompression(self.handle, ctypes.byref(c)), self._h)

    @property
    def compression(self) -> Compression:
        c = _lib._Compression()
        _check(_L.zcclCommGetCompression(self.handle, ctypes.byref(c)), self._h)
        return Compression._from_c(c)

    def compression_stats(self) -> CompressionStats:
        raw, wire = ctypes.c_uint64(), ctypes.c_uint64()
        _check(_L.zcclCommCompressionStats(self.handle, ctypes.byref(raw), ctypes.byref(wire)), self._h)
        return CompressionStats(raw.value, wire.value)

    # ---- collectives ----

    @staticmethod
    def _recv(s: _Buf, send: Any, recv: Any, what: str, recv_count: int) -> _Buf:
        """recv as a _Buf matching send's dtype and the call's count (recv
        None: send itself, in place)."""
        if recv is None or recv is send:
            if s.count != recv_count:
                raise ValueError(f"{what}: in place needs {recv_count} elements, the buffer holds {s.count}")
            return s
        r = _Buf(recv, f"{what}: recv", writable=True)
        if r.dtype != s.dtype:
            raise TypeError(f"{what}: send and recv differ in dtype")
        if r.count != recv_count:
            raise ValueError(f"{what}: recv holds {r.count} elements, the call needs {recv_count}")
        return r

    def allreduce(self, send: Any, recv: Any = None, op: str = "sum") -> Any:
        """recv = op over ranks of send, elementwise (recv None: in place)."""
        s = _Buf(send, "allreduce: send", writable=recv is None)
        r = self._recv(s, send, recv, "allreduce", s.count)
        _check(_L.zcclAllReduce(s.ptr, r.ptr, s.count, s.dtype, _op(op), self.handle, None), self._h)
        return r.obj

    def reduce(self, send: Any, recv: Any = None, op: str = "sum", root: int = 0) -> Any:
        """The root's recv = op over ranks of send (recv None: in place;
        other ranks' recv is not written). Returns recv at the root, else None."""
        s = _Buf(send, "reduce: send", writable=recv is None)
        r = self._recv(s, send, recv, "reduce", s.count)
        _check(_L.zcclReduce(s.ptr, r.ptr, s.count, s.dtype, _op(op), root, self.handle, None), self._h)
        return r.obj if self.rank == root else None

    def broadcast(self, buf: Any, root: int = 0) -> Any:
        """The root's buf to every rank's buf."""
        b = _Buf(buf, "broadcast", writable=True)
        _check(_L.zcclBroadcast(b.ptr, b.ptr, b.count, b.dtype, root, self.handle, None), self._h)
        return buf

    def allgather(self, send: Any, recv: Any = None) -> Any:
        """Every rank's send, in rank order (recv None: a new buffer of shape
        (size, *send.shape))."""
        n = self.size
        if recv is None:
            recv = _empty_like(send, 0, (n,) + tuple(send.shape))
        s = _Buf(send, "allgather: send", writable=False)
        r = self._recv(s, None, recv, "allgather", s.count * n)
        _check(_L.zcclAllGather(s.ptr, r.ptr, s.count, s.dtype, self.handle, None), self._h)
        return recv

    def reduce_scatter(self, send: Any, recv: Any = None, op: str = "sum") -> Any:
        """Rank i gets block i of op over ranks of send (send: size blocks;
        recv None: a new 1-D buffer of one block)."""
        n = self.size
        s = _Buf(send, "reduce_scatter: send", writable=False)
        if s.count % n:
            raise ValueError(f"reduce_scatter: send holds {s.count} elements, not a multiple of {n} ranks")
        if recv is None:
            recv = _empty_like(send, s.count // n)
        r = self._recv(s, None, recv, "reduce_scatter", s.count // n)
        _check(_L.zcclReduceScatter(s.ptr, r.ptr, r.count, s.dtype, _op(op), self.handle, None), self._h)
        return recv

    def alltoall(self, send: Any, recv: Any = None) -> Any:
        """Block j of send to rank j, whose block i of recv it becomes
        (recv None: a new buffer like send)."""
        n = self.size
        s = _Buf(send, "alltoall: send", writable=False)
        if s.count % n:
            raise ValueError(f"alltoall: send holds {s.count} elements, not a multiple of {n} ranks")
        if recv is None:
            recv = _empty_like(send, s.count, tuple(send.shape))
        r = self._recv(s, None, recv, "alltoall", s.count)
        if s.ptr == r.ptr and s.count:
            raise ValueError("alltoall: send and recv are the same buffer (zccl's AlltoAll is out of place)")
        _check(_L.zcclAlltoAll(s.ptr, r.ptr, s.count // n, s.dtype, self.handle, None), self._h)
        return recv

    def gather(self, send: Any, recv: Any = None, root: int = 0) -> Any:
        """Every rank's send to the root, in rank order (recv None at the
        root: a new buffer of shape (size, *send.shape)). None off the root."""
        n, me = self.size, self.rank
        s = _Buf(send, "gather: send", writable=False)
        if me == root:
            if recv is None:
                recv = _empty_like(send, 0, (n,) + tuple(send.shape))
            rp = self._recv(s, None, recv, "gather", s.count * n).ptr
        else:
            rp = None
        _check(_L.zcclGather(s.ptr, rp, s.count, s.dtype, root, self.handle, None), self._h)
        return recv if me == root else None

    def scatter(self, send: Any, recv: Any, root: int = 0) -> Any:
        """Block i of the root's send (size blocks) to rank i's recv."""
        n = self.size
        r = _Buf(recv, "scatter: recv", writable=True)
        sp = None
        if self.rank == root:
            s = _Buf(send, "scatter: send", writable=False)
            if s.dtype != r.dtype:
                raise TypeError("scatter: send and recv differ in dtype")
            if s.count != r.count * n:
                raise ValueError(f"scatter: send holds {s.count} elements, {n} blocks of {r.count} expected")
            sp = s.ptr
        _check(_L.zcclScatter(sp, r.ptr, r.count, r.dtype, root, self.handle, None), self._h)
        return recv

    def send(self, buf: Any, peer: int) -> None:
        b = _Buf(buf, "send", writable=False)
        _check(_L.zcclSend(b.ptr, b.count, b.dtype, peer, self.handle, None), self._h)

    def recv(self, buf: Any, peer: int) -> Any:
        b = _Buf(buf, "recv", writable=True)
        _check(_L.zcclRecv(b.ptr, b.count, b.dtype, peer, self.handle, None), self._h)
        return buf

    def __repr__(self) -> str:
        if self._h is None:
            return "<zccl.Comm destroyed>"
        return f"<zccl.Comm rank {self.rank} of {self.size}, compression {self.compression}>"
