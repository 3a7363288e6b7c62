"""The Python package under mpirun (2-5 ranks): every collective on numpy
arrays of every dtype zccl and numpy share and on CPU torch tensors,
checked on every element against numpy's own arithmetic; compressed calls
within their bound; bad inputs raise clean exceptions before zccl is
called; zccl's own errors raise ZcclError with zccl's message.

    mpirun -np 3 python3 python/tests/test_collectives.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import zccl  # noqa: E402

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print(f"rank {rank}: FAILED: {what}", file=sys.stderr, flush=True)


def raises(exc, fn, what, needle=None):
    try:
        fn()
    except exc as e:
        check(needle is None or needle in str(e), f"{what}: message {str(e)!r} lacks {needle!r}")
        return
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: raised {type(e).__name__}: {e}, expected {exc.__name__}")
        return
    check(False, f"{what}: no exception, expected {exc.__name__}")


def data(r, n, dtype):
    """Rank r's values: small integers, so sums and products are exact in every dtype."""
    return ((np.arange(n) + 3 * r) % 5 + 1).astype(dtype)


comm = zccl.Comm.from_mpi(world)
check(comm.rank == rank and comm.size == size, "rank and size")

NP_TYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]
n = 1000


def suite(T, N, label, dtypes):
    """Every collective on buffers made by T from numpy arrays (numpy
    itself, or torch tensors), results read back by N."""
    for dt in dtypes:
        name = np.dtype(dt).name
        allx = [data(r, n * size, dt) for r in range(size)]
        x = allx[rank]
        ops = {"sum": lambda a: np.sum(a, axis=0, dtype=dt), "max": lambda a: np.max(a, axis=0),
               "min": lambda a: np.min(a, axis=0)}
        if size <= 3:  # products of up to three values of at most 5 stay in int8
            ops["prod"] = lambda a: np.prod(a, axis=0, dtype=dt)
        for op, ref in ops.items():
            want = ref(np.stack([a[:n] for a in allx]))
            y = N(comm.allreduce(T(x[:n]), T(np.empty(n, dt)), op=op))
            check(np.array_equal(y, want), f"{label} allreduce {name} {op}")
            z = T(x[:n].copy())
            comm.allreduce(z, op=op)
            check(np.array_equal(N(z), want), f"{label} allreduce in place {name} {op}")
            got = comm.reduce(T(x[:n]), T(np.empty(n, dt)), op=op, root=size - 1)
            check((got is None) == (rank != size - 1), f"reduce returns at the root only ({name})")
            if got is not None:
                check(np.array_equal(N(got), want), f"{label} reduce {name} {op}")
            full = ref(np.stack(allx))
            rs = N(comm.reduce_scatter(T(x), op=op))
            check(np.array_equal(rs, full[rank * n:(rank + 1) * n]), f"reduce_scatter {name} {op}")
        if np.dtype(dt).kind == "f":
            avg = N(comm.allreduce(T(x[:n].copy()), op="avg"))
            check(np.allclose(avg, np.mean(np.stack([a[:n] for a in allx]).astype(np.float64), axis=0), rtol=1e-2),
                  f"allreduce avg {name}")
        b = T(x[:n].copy())
        comm.broadcast(b, root=size - 1)
        check(np.array_equal(N(b), allx[size - 1][:n]), f"{label} broadcast {name}")
        g = N(comm.allgather(T(x[:n])))
        check(g.shape == (size, n) and all(np.array_equal(g[r], allx[r][:n]) for r in range(size)), f"allgather {name}")
        a2a = N(comm.alltoall(T(x)))
        check(all(np.array_equal(a2a[r * n:(r + 1) * n], allx[r][rank * n:(rank + 1) * n]) for r in range(size)),
              f"alltoall {name}")
        gat = comm.gather(T(x[:n]), root=0)
        if rank == 0:
            gat = N(gat)
            check(all(np.array_equal(gat[r], allx[r][:n]) for r in range(size)), f"gather {name}")
        else:
            check(gat is None, "gather returns None off the root")
        sc = N(comm.scatter(T(x) if rank == 0 else None, T(np.empty(n, dt)), root=0))
        check(np.array_equal(sc, allx[0][rank * n:(rank + 1) * n]), f"scatter {name}")
        # a ring of send/recv: even ranks send first
        right, left = (rank + 1) % size, (rank - 1) % size
        got = T(np.empty(n, dt))
        if rank % 2 == 0:
            comm.send(T(x[:n]), right)
            comm.recv(got, left)
        else:
            comm.recv(got, left)
            comm.send(T(x[:n]), right)
        check(np.array_equal(N(got), allx[left][:n]), f"{label} send/recv ring {name}")


suite(lambda a: a, lambda a: a, "numpy", NP_TYPES)

# torch tensors, zero copy
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    # the whole suite on torch tensors (torch has no uint32/uint64)
    suite(lambda a: torch.from_numpy(np.ascontiguousarray(a)).clone(), lambda t: t.numpy(), "torch",
          [np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64])
    for tdt in (torch.float32, torch.float64, torch.int32, torch.int64, torch.bfloat16):
        t = torch.arange(64, dtype=torch.float32).to(tdt) + rank  # sums stay exact in bfloat16 (< 256)
        ptr = t.data_ptr()
        comm.allreduce(t)
        want = torch.arange(64, dtype=torch.float64) * size + size * (size - 1) / 2
        check(t.data_ptr() == ptr and torch.equal(t.to(torch.float64), want.to(tdt).to(torch.float64)),
              f"torch allreduce in place {tdt}")
        g = comm.allgather(t[:8].contiguous())
        check(tuple(g.shape) == (size, 8) and g.dtype == tdt, f"torch allgather {tdt}")
    raises(ValueError, lambda: comm.allreduce(torch.zeros(8, 8).t()), "non-contiguous tensor", "contiguous")
    raises(TypeError, lambda: comm.allreduce(torch.zeros(8, dtype=torch.complex64)), "complex tensor", "zccl has no")

# compressed: every element within the bound
eb = 1e-3
comm.set_compression(f"codec=hz,mode=abs,eb={eb},min_bytes=0")
check(comm.compression.codec == "hz" and comm.compression.eb == eb, "compression read back")
f = (np.sin(np.arange(1 << 18) * 1e-3 + rank) * 20).astype(np.float32)
allf = [(np.sin(np.arange(1 << 18) * 1e-3 + r) * 20).astype(np.float32) for r in range(size)]
before = comm.compression_stats()
s = comm.allreduce(f, np.empty_like(f))
after = comm.compression_stats()
exact = np.sum(np.stack(allf).astype(np.float64), axis=0)
check(np.max(np.abs(s - exact)) <= size * eb * 1.0001 + 1e-4, "compressed allreduce within size x eb")
check(after.raw_bytes > before.raw_bytes and after.wire_bytes - before.wire_bytes < after.raw_bytes - before.raw_bytes,
      "compressed bytes counted and fewer")
g = comm.allgather(f)
check(max(float(np.max(np.abs(g[r] - allf[r]))) for r in range(size)) <= eb * 1.0001, "compressed allgather within eb")
comm.set_compression(zccl.Compression())  # off again
check(comm.compression.codec == "none", "compression off")

# bad input: clean exceptions, nothing sent
raises(ValueError, lambda: comm.allreduce(np.zeros((8, 8), np.float32)[:, ::2]), "non-contiguous", "contiguous")
raises(TypeError, lambda: comm.allreduce(np.zeros(8, np.complex64)), "complex dtype", "zccl has no complex64")
raises(TypeError, lambda: comm.allreduce([1.0, 2.0]), "a list", "numpy array")
raises(ValueError, lambda: comm.allreduce(np.zeros(8, np.float32), np.zeros(9, np.float32)), "sizes", "9")
raises(TypeError, lambda: comm.allreduce(np.zeros(8, np.float32), np.zeros(8, np.float64)), "dtypes", "dtype")
ro = np.zeros(8, np.float32)
ro.flags.writeable = False
raises(ValueError, lambda: comm.allreduce(ro), "read-only", "read-only")
raises(ValueError, lambda: comm.allreduce(np.zeros(8, np.float32), op="xor"), "unknown op", "xor")
raises(ValueError, lambda: comm.reduce_scatter(np.zeros(size * 3 + 1, np.float32)), "indivisible", "multiple")
# zccl's own refusal: a root that does not exist
raises(zccl.ZcclError, lambda: comm.broadcast(np.zeros(8, np.float32), root=size + 2), "bad root", "root")
raises(ValueError, lambda: zccl.UniqueId(b"short"), "short unique id", "128")
raises(zccl.ZcclError, lambda: zccl.Compression.parse("codec=bogus"), "bad compression text", "bogus")

half = comm.split(rank % 2, rank)
check(half is not None and half.size == (size + 1 - rank % 2) // 2, "split")
half.destroy()
comm.destroy()
raises(ValueError, lambda: comm.allreduce(np.zeros(8, np.float32)), "destroyed communicator", "destroyed")

total = world.allreduce(failures)
print(f"rank {rank}: {checks} checks, {failures} failed", flush=True)
sys.exit(1 if total else 0)
