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
"""
from typing import Optional, Union

import torch

from . import Comm, Compression


class AllReduceState:
    """What the hook needs: the communicator and, optionally, the
    compression to set on it (None: leave the communicator's)."""

    def __init__(self, comm: Comm, compression: Optional[Union[Compression, str]] = None):
        self.comm = comm
        if compression is not None:
            comm.set_compression(compression)


# DDP checks the annotations themselves (not strings): hence no
# `from __future__ import annotations` in this module.
def allreduce_hook(state: AllReduceState,
                   bucket: torch.distributed.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: the bucket's gradients averaged over the ranks by
    zccl, in place; the future is complete when it returns."""
    grads = bucket.buffer()
    if not grads.is_contiguous():
        grads = grads.contiguous()
    if grads.dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        state.comm.allreduce(grads, op="avg")
    else:  # integer buckets: sum, then divide as DDP would
        state.comm.allreduce(grads, op="sum")
        grads.div_(state.comm.size)
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    fut.set_result(grads)
    return fut
