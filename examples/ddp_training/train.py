"""Data-parallel training with PyTorch DDP, gradients averaged by Gloo or by
zccl's hook (uncompressed, compressed, with or without error feedback), on
scikit-learn's bundled handwritten digits (examples/ddp_training/README.md).

    mpirun -np 4 python3 examples/ddp_training/train.py --out out/ddp
    python3 examples/ddp_training/train.py --help

Every method trains the same model from the same initial weights on the same
batches, one after the other in one launch, so only the gradient averaging
differs. Rank 0 prints a table and, with --out, writes METHOD.json per method
(per-epoch loss, test accuracy and time; per-step compression ratio; bytes
through the rank's network interface when --ifname names it).
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from mpi4py import MPI  # noqa: E402

import zccl  # noqa: E402
import zccl.torch  # noqa: E402

import plot  # noqa: E402  (this folder's plot.py: one place for the table's figures)

DEFAULT_METHODS = "gloo,zccl,hz:rel:1e-3,hz:rel:1e-2,hz:rel:1e-2:ef,hz:rel:5e-2:ef"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default=DEFAULT_METHODS,
                   help="comma-separated: gloo (DDP's own allreduce), zccl (zccl's hook, uncompressed), "
                        "CODEC:MODE:EB[:ef] (zccl's hook compressed, e.g. hz:rel:1e-3; ef: error feedback)")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--hidden", type=int, default=2048, help="width of the two hidden layers")
    p.add_argument("--batch", type=int, default=16, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="directory for METHOD.json")
    p.add_argument("--master-addr", default="127.0.0.1", help="address of rank 0 for the process group's store")
    p.add_argument("--ifname", help="the ranks' network interface: Gloo uses it, and its bytes are counted")
    p.add_argument("--min-accuracy", type=float, default=0.0,
                   help="exit 1 unless every uncompressed method reaches this final test accuracy (tests); "
                        "it also exits 1 when replicas differ or a compressed method never compressed")
    return p.parse_args()


class Method:
    """One way to average the gradients."""

    def __init__(self, spec: str):
        self.spec = spec
        parts = spec.split(":")
        self.hook = parts[0] != "gloo"
        self.feedback = parts[-1] == "ef"
        if parts[0] in ("gloo", "zccl"):
            if len(parts) != 1:
                raise ValueError(f"method {spec!r}: gloo and zccl take no bound")
            self.compression = "codec=none"
        else:
            if len(parts) not in (3, 4) or (len(parts) == 4 and not self.feedback):
                raise ValueError(f"method {spec!r}: expected CODEC:MODE:EB or CODEC:MODE:EB:ef")
            self.compression = f"codec={parts[0]},mode={parts[1]},eb={float(parts[2])!r},min_bytes=64K"
        self.name = spec.replace(":", "-")


def load_digits(seed: int) -> tuple:
    """scikit-learn's bundled 8x8 digits (1,797 images, no download):
    80% for training, 20% held out, the same split on every rank."""
    from sklearn.datasets import load_digits as sk_digits

    d = sk_digits()
    x = torch.tensor(d.data / 16.0, dtype=torch.float32)
    y = torch.tensor(d.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    cut = int(0.8 * len(y))
    return x[perm[:cut]], y[perm[:cut]], x[perm[cut:]], y[perm[cut:]]


def make_model(hidden: int, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                               torch.nn.ReLU(), torch.nn.Linear(hidden, 10))


def tx_bytes(ifname: str) -> int:
    try:
        return int(Path(f"/sys/class/net/{ifname}/statistics/tx_bytes").read_text())
    except (OSError, ValueError):
        return 0


def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def train(m: Method, a: argparse.Namespace, comm: zccl.Comm, data: tuple) -> dict:
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    xtr, ytr, xte, yte = data
    model = torch.nn.parallel.DistributedDataParallel(make_model(a.hidden, a.seed))
    state = None
    if m.hook:
        state = zccl.torch.AllReduceState(comm, m.compression, error_feedback=m.feedback)
        model.register_comm_hook(state, zccl.torch.allreduce_hook)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    steps = len(ytr) // (a.batch * size)  # every rank takes the same number of steps
    rec = {"method": m.spec, "compression": m.compression if m.hook else "gloo", "error_feedback": m.feedback,
           "ranks": size, "parameters": sum(p.numel() for p in model.parameters()), "steps_per_epoch": steps,
           "batch_per_rank": a.batch, "epochs": [], "step_ratio": []}
    for epoch in range(a.epochs):
        order = torch.randperm(len(ytr), generator=torch.Generator().manual_seed(1000 * a.seed + epoch))
        mine = order[rank * steps * a.batch:(rank + 1) * steps * a.batch]
        losses = []
        world.Barrier()
        tx0, t0 = tx_bytes(a.ifname) if a.ifname else 0, time.perf_counter()
        for s in range(steps):
            idx = mine[s * a.batch:(s + 1) * a.batch]
            before = comm.compression_stats()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            losses.append(float(loss))
            after = comm.compression_stats()
            wire = after.wire_bytes - before.wire_bytes
            rec["step_ratio"].append((after.raw_bytes - before.raw_bytes) / wire if wire else None)
        seconds = world.allreduce(time.perf_counter() - t0, op=MPI.MAX)
        sent = world.allreduce(tx_bytes(a.ifname) - tx0 if a.ifname else 0, op=MPI.SUM) / size
        mean_loss = world.allreduce(float(np.mean(losses)), op=MPI.SUM) / size
        rec["epochs"].append({"epoch": epoch + 1, "seconds": seconds, "train_loss": mean_loss,
                              "test_accuracy": accuracy(model, xte, yte), "tx_bytes_per_rank": sent})
    params = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
    rec["replicas_differ_by"] = world.allreduce(float(np.abs(params - world.bcast(params, root=0)).max()),
                                                op=MPI.MAX)
    if state is not None:
        comm.set_compression("codec=none")
    return rec


def summary_row(rec: dict) -> str:
    sec, mb, ratio = plot.figures(rec)
    last = rec["epochs"][-1]
    return (f"{rec['method']:>16} {last['test_accuracy'] * 100:8.2f} {last['train_loss']:9.4f} {sec:9.3f} "
            f"{f'{ratio:.1f}' if ratio else '-':>6} {mb if mb else float('nan'):10.2f}")


def main() -> int:
    a = parse_args()
    if a.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = a.ifname
    torch.set_num_threads(1)
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    methods = [Method(s.strip()) for s in a.methods.split(",") if s.strip()]
    port = world.bcast(29500 + os.getpid() % 2000 if rank == 0 else None, root=0)
    store = dist.TCPStore(a.master_addr, port, size, rank == 0)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=size)
    comm = zccl.Comm.from_mpi(world)
    data = load_digits(a.seed)
    if rank == 0:
        n = sum(p.numel() for p in make_model(a.hidden, a.seed).parameters())
        print(f"digits: {len(data[1])} training and {len(data[3])} test images; MLP 64-{a.hidden}-{a.hidden}-10, "
              f"{n / 1e6:.2f}M parameters ({n * 4 / 2**20:.1f} MiB of float32 gradients per step); {size} ranks, "
              f"{a.batch} samples per rank per step, {a.epochs} epochs", flush=True)
        print(f"{'method':>16} {'test acc%':>8} {'loss':>9} {'s/epoch':>9} {'ratio':>6} {'MB/step':>10}",
              flush=True)
    if a.out and rank == 0:
        Path(a.out).mkdir(parents=True, exist_ok=True)
    records = []
    for m in methods:
        rec = train(m, a, comm, data)
        records.append(rec)
        if rank == 0:
            rec["where"] = os.environ.get("ZCCL_EXAMPLE_WHERE", "")
            print(summary_row(rec), flush=True)
            if a.out:
                (Path(a.out) / f"{m.name}.json").write_text(json.dumps(rec, indent=1))
    comm.destroy()
    dist.destroy_process_group()
    bad = [r["method"] for r in records if r["replicas_differ_by"] != 0.0]
    low = [r["method"] for r in records
           if r["compression"] in ("gloo", "codec=none") and r["epochs"][-1]["test_accuracy"] < a.min_accuracy]
    flat = [r["method"] for r in records
            if r["compression"] not in ("gloo", "codec=none") and not any(r["step_ratio"])]
    if rank == 0 and (bad or low or flat):
        print(f"FAILED: replicas differ in {bad}; below {a.min_accuracy:.2%} test accuracy: {low}; "
              f"compressed methods that never compressed: {flat}", flush=True)
    return 1 if bad or low or flat else 0


if __name__ == "__main__":
    sys.exit(main())
