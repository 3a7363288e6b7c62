"""A PyTorch DDP communication hook on zccl (docs/python.md):

    import torch.distributed as dist, zccl, zccl.torch
    dist.init_process_group("gloo", ...)
    comm = zccl.Comm.from_store(store, rank, world_size)   # or from_mpi
    state = zccl.torch.AllReduceState(comm, "codec=hz,mode=abs,eb=1e-4")
    model = torch.nn.parallel.DistributedDataParallel(net)
    model.register_comm_hook(state, zccl.torch.allreduce_hook)

Each gradient bucket is averaged over the ranks by zccl's AllReduce (AVG),
compressed as the state says, as PyTorch's own fp16 and PowerSGD hooks
replace the bucket's allreduce.

With error_feedback=True, what compression took from a bucket at one step
(this rank's residual: its gradient minus what the peers decompress, from
zccl.compress_roundtrip) is added to the same bucket's gradient at the next
step, so errors do not pile up over steps: the sum of the averaged
gradients over any number of steps stays within one bound of the exact sum.
That is exact for codec=hz, whose AllReduce adds the ranks' quantized values
without further loss; szp and zfp recompress partial sums on the way, and
feedback covers only each rank's first compression. It costs one extra
compress and decompress of each bucket on each rank.
"""
from typing import Dict, Optional, Union

import torch

from . import Comm, Compression, compress_roundtrip

_FLOATS = (torch.float32, torch.float64)


class AllReduceState:
    """What the hook needs: the communicator, optionally the compression to
    set on it (None: leave the communicator's), and whether to feed each
    step's compression error back into the next (error_feedback; not with
    codec=auto, which decides per call whether it compresses)."""

    def __init__(self, comm: Comm, compression: Optional[Union[Compression, str]] = None,
                 error_feedback: bool = False):
        self.comm = comm
        if compression is not None:
            comm.set_compression(compression)
        self.error_feedback = error_feedback
        if error_feedback and comm.compression.codec == "auto":
            raise ValueError("error_feedback needs a named codec (hz, szp, zfp), not codec=auto")
        self.residuals: Dict[int, torch.Tensor] = {}
        self._scratch: Dict[int, torch.Tensor] = {}  # what the peers get, per bucket


def _compressed(c: Compression, grads: torch.Tensor) -> bool:
    """Whether zccl compresses this bucket (a lossy codec, float32/64, at
    least min_bytes)."""
    return (c.codec in ("hz", "szp", "zfp") and grads.dtype in _FLOATS
            and grads.numel() * grads.element_size() >= c.min_bytes)


def _contribution_bound(state: AllReduceState, c: Compression, grads: torch.Tensor) -> float:
    """The absolute bound the AVG AllReduce applies to this rank's input:
    eb, or eb times the range of every rank's input (one 16-byte exchange,
    below any compression threshold, so exact); the target modes do not
    divide for AVG."""
    if c.mode in ("abs", "target"):
        return c.eb
    lo, hi = (float(v) for v in torch.aminmax(grads))
    if not (abs(lo) < float("inf") and abs(hi) < float("inf")):  # NaN or Inf: the finite values' range
        finite = grads[torch.isfinite(grads)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.numel() else (float("inf"), float("-inf"))
    ext = torch.tensor([hi, -lo], dtype=torch.float64)
    state.comm.allreduce(ext, op="max")
    hi, lo = float(ext[0]), -float(ext[1])
    span = hi - lo
    if not span > 0 or span == float("inf"):
        span = abs(hi) if hi not in (0.0, float("inf"), float("-inf")) else 1.0
    return c.eb * span


def _allreduce_with_feedback(state: AllReduceState, c: Compression, index: int, grads: torch.Tensor) -> None:
    residual = state.residuals.get(index)
    if residual is not None and residual.shape == grads.shape and residual.dtype == grads.dtype:
        grads.add_(residual)
    else:
        residual = state.residuals[index] = torch.empty_like(grads)
    fixed = Compression(codec=c.codec, mode="abs", eb=_contribution_bound(state, c, grads), fill=c.fill,
                        min_bytes=c.min_bytes)
    sent = state._scratch.get(index)
    if sent is None or sent.shape != grads.shape or sent.dtype != grads.dtype:
        sent = state._scratch[index] = torch.empty_like(grads)
    compress_roundtrip(grads, fixed, out=sent)
    torch.sub(grads, sent, out=residual)
    state.comm.set_compression(fixed)  # the same quantization as the roundtrip's
    try:
        state.comm.allreduce(grads, op="avg")
    finally:
        state.comm.set_compression(c)


# DDP checks the annotations themselves (not strings): hence no
# `from __future__ import annotations` in this module.
def allreduce_hook(state: AllReduceState,
                   bucket: torch.distributed.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: the bucket's gradients averaged over the ranks by
    zccl, in place; the future is complete when it returns."""
    grads = bucket.buffer()
    if not grads.is_contiguous():
        grads = grads.contiguous()
    c = state.comm.compression if state.error_feedback else None
    if c is not None and _compressed(c, grads):
        _allreduce_with_feedback(state, c, bucket.index(), grads)
    elif grads.dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        state.comm.allreduce(grads, op="avg")
    else:  # integer buckets: sum, then divide as DDP would
        state.comm.allreduce(grads, op="sum")
        grads.div_(state.comm.size)
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    fut.set_result(grads)
    return fut
