"""zccl.torch.allreduce_hook in a real DDP run (2 ranks, Gloo, CPU): two
copies of one small model train on the same batches, one with DDP's own
allreduce, one with zccl's compressed hook (ABS eb); after every step each
gradient of the hooked model is within eb of Gloo's (the hook averages:
AVG's bound is eb), and the parameters stay close.

    mpirun -np 2 python3 python/tests/test_ddp.py
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
port = world.bcast(29500 + os.getpid() % 1000 if rank == 0 else None, root=0)
store = dist.TCPStore("127.0.0.1", port, size, rank == 0)
dist.init_process_group("gloo", store=store, rank=rank, world_size=size)

EB = 1e-4
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
ref = torch.nn.parallel.DistributedDataParallel(net)
hooked_net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
hooked_net.load_state_dict(net.state_dict())
hooked = torch.nn.parallel.DistributedDataParallel(hooked_net)
comm = zccl.Comm.from_store(store, rank, size)
state = zccl.torch.AllReduceState(comm, f"codec=hz,mode=abs,eb={EB},min_bytes=0")
hooked.register_comm_hook(state, zccl.torch.allreduce_hook)

opt_a = torch.optim.SGD(ref.parameters(), lr=0.05)
opt_b = torch.optim.SGD(hooked.parameters(), lr=0.05)
gen = torch.Generator().manual_seed(1 + rank)
worst = 0.0
for step in range(5):
    x = torch.randn(32, 64, generator=gen)
    y = torch.randint(0, 10, (32,), generator=gen)
    for model, opt in ((ref, opt_a), (hooked, opt_b)):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
    for pa, pb in zip(ref.parameters(), hooked.parameters()):
        worst = max(worst, float((pa.grad - pb.grad).abs().max()))
    opt_a.step()
    opt_b.step()
drift = max(float((pa - pb).abs().max()) for pa, pb in zip(ref.parameters(), hooked.parameters()))
stats = comm.compression_stats()
ok = worst <= EB * 1.0001 + 1e-6 and stats.raw_bytes > 0 and stats.wire_bytes < stats.raw_bytes
print(f"rank {rank}: largest gradient difference from Gloo's {worst:.3g} (bound {EB}), parameters {drift:.3g} "
      f"apart after 5 steps, compression ratio {stats.ratio:.1f}: {'ok' if ok else 'FAILED'}", flush=True)
comm.destroy()
dist.destroy_process_group()
sys.exit(0 if world.allreduce(0 if ok else 1) == 0 else 1)
