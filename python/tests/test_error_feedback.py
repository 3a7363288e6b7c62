"""zccl.torch's error feedback, on the hook itself (a bucket fed the same
gradients step after step, as DDP would hand it) and inside a DDP run:
  - zccl.compress_roundtrip: within the bound it reports on every element;
  - without feedback the sum of T averaged outputs drifts from T times the
    exact average (the same rounding every step); with feedback it stays
    within one bound of it on every element (hz: the residuals telescope),
    for ABS and REL bounds;
  - a DDP model with feedback trains as Gloo's does, and its ranks agree.

    mpirun -np 3 python3 python/tests/test_error_feedback.py
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from mpi4py import MPI  # noqa: E402

import zccl  # noqa: E402
import zccl.torch  # noqa: E402

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
failures = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)
        print(f"rank {rank}: FAILED: {what}", flush=True)


class Bucket:
    """What the hook reads of DDP's GradBucket."""

    def __init__(self, buf: torch.Tensor, index: int = 0):
        self._buf, self._index = buf, index

    def buffer(self) -> torch.Tensor:
        return self._buf

    def index(self) -> int:
        return self._index


def roundtrip_bound() -> None:
    x = torch.randn(50000, generator=torch.Generator().manual_seed(7)) * 3
    for text in ("codec=hz,mode=abs,eb=1e-3", "codec=szp,mode=rel,eb=1e-4"):
        y, eb = zccl.compress_roundtrip(x, text)
        err = float((y - x).abs().max())
        check(0 < err <= eb, f"roundtrip {text}: max error {err:g} within {eb:g}")
    z = x.clone()
    zccl.compress_roundtrip(z, "codec=hz,mode=abs,eb=1e-3", out=z)
    check(torch.equal(z, zccl.compress_roundtrip(x, "codec=hz,mode=abs,eb=1e-3")[0]), "roundtrip in place")


def drift(comm: zccl.Comm, text: str, feedback: bool, steps: int) -> tuple:
    """Max over elements of |sum of outputs - steps x exact average|, and
    the bound of one compression."""
    state = zccl.torch.AllReduceState(comm, text, error_feedback=feedback)
    n = 40000
    g = torch.randn(n, generator=torch.Generator().manual_seed(100 + rank)).double().float() * 0.01
    exact = torch.from_numpy(world.allreduce(g.double().numpy())) / size
    total = torch.zeros(n, dtype=torch.float64)
    for _ in range(steps):
        buf = g.clone()
        zccl.torch.allreduce_hook(state, Bucket(buf)).wait()
        total += buf.double()
    eb = comm.compression.eb
    if "rel" in text:  # the bound's absolute value: eb x the range of every rank's gradient
        lo, hi = world.allreduce(float(g.min()), op=MPI.MIN), world.allreduce(float(g.max()), op=MPI.MAX)
        eb *= hi - lo
    return float((total - steps * exact).abs().max()), eb


def feedback_bounds(comm: zccl.Comm) -> None:
    steps = 25
    for text in ("codec=hz,mode=abs,eb=1e-4,min_bytes=0", "codec=hz,mode=rel,eb=1e-3,min_bytes=0"):
        without, eb = drift(comm, text, False, steps)
        with_fb, _ = drift(comm, text, True, steps)
        # float32 outputs, summed in float64: a rounding per step on top
        slack = steps * 0.05 * 2 * 1.2e-7
        if rank == 0:
            print(f"{text}: after {steps} steps the summed output is off by {without:.3g} without feedback, "
                  f"{with_fb:.3g} with it (one bound {eb:.3g})", flush=True)
        check(with_fb <= eb * 1.0001 + slack, f"{text}: with feedback {with_fb:g} within one bound {eb:g}")
        check(without > 3 * eb, f"{text}: without feedback the error piles up ({without:g} vs {eb:g})")
    comm.set_compression("codec=hz,mode=abs,eb=1e-4,min_bytes=0")
    try:
        zccl.torch.AllReduceState(comm, "codec=auto", error_feedback=True)
        check(False, "codec=auto with feedback refused")
    except ValueError:
        pass


def ddp_trains(comm: zccl.Comm) -> None:
    port = world.bcast(29500 + os.getpid() % 1000 if rank == 0 else None, root=0)
    store = dist.TCPStore("127.0.0.1", port, size, rank == 0)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=size)
    def train(hooked: bool) -> tuple:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
        model = torch.nn.parallel.DistributedDataParallel(net)
        state = None
        if hooked:
            state = zccl.torch.AllReduceState(comm, "codec=hz,mode=rel,eb=1e-2,min_bytes=0", error_feedback=True)
            model.register_comm_hook(state, zccl.torch.allreduce_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(1 + rank)
        w = torch.randn(64, 10, generator=torch.Generator().manual_seed(3))
        losses = []
        for _ in range(30):
            x = torch.randn(64, 64, generator=gen)
            y = (x @ w).argmax(1)
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(float(loss))
        params = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
        return losses, params, state

    ref, _, _ = train(False)
    losses, params, state = train(True)
    same = world.allreduce(float(abs(params - world.bcast(params, root=0)).max()), op=MPI.MAX)
    check(len(state.residuals) > 0, "DDP with feedback keeps residuals")
    check(losses[-1] < 0.9 * losses[0] and losses[-1] <= 1.05 * ref[-1],
          f"DDP with feedback trains as Gloo's does (loss {losses[0]:.3f} -> {losses[-1]:.3f}, Gloo {ref[-1]:.3f})")
    check(same == 0.0, f"DDP ranks' parameters identical (max difference {same:g})")
    if rank == 0:
        print(f"DDP with feedback: loss {losses[0]:.3f} -> {losses[-1]:.3f} in 30 steps (Gloo: {ref[-1]:.3f})",
              flush=True)
    dist.destroy_process_group()


comm = zccl.Comm.from_mpi(world)
roundtrip_bound()
feedback_bounds(comm)
ddp_trains(comm)
comm.destroy()
bad = world.allreduce(len(failures))
if rank == 0:
    print("ok" if bad == 0 else f"{bad} checks failed", flush=True)
sys.exit(0 if bad == 0 else 1)
