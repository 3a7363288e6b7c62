"""An mpi4py script that knows nothing of zccl, run with libzccl-mpi.so
preloaded: its Allreduce, Reduce, Bcast, Allgather, Reduce_scatter_block,
Gather, Scatter and Alltoall on float32/float64 numpy arrays go to zccl
(counted by the library's zcclMpiCounts), on real data (levitus TEMP, read
with scipy), checked on every element against numpy's own arithmetic on
every rank's data (exact for data movement,
reductions within rounding, or within the bound given as the argument when
ZCCL_COMPRESSION is set); int and small calls stay with MPI.

    mpirun -np 3 -x LD_PRELOAD=.../libzccl-mpi.so python3 test_mpi4py_preload.py [eb]
"""
import ctypes
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
eb = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
failures = 0
try:
    counts_fn = ctypes.CDLL(None).zcclMpiCounts
except AttributeError:
    print("libzccl-mpi.so is not preloaded", file=sys.stderr)
    comm.Abort(1)
counts_fn.argtypes = [ctypes.POINTER(ctypes.c_ulonglong)] * 2


def counts():
    t, p = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    counts_fn(ctypes.byref(t), ctypes.byref(p))
    return t.value, p.value


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"rank {rank}: FAILED: {what}", file=sys.stderr, flush=True)


def _levitus():
    """levitus TEMP (ferret-datasets), fill values as 0, read with scipy."""
    from scipy.io import netcdf_file

    with netcdf_file("/usr/share/ferret-vis/data/levitus_climatology.cdf", "r", mmap=False) as f:
        v = f.variables["TEMP"]
        t = np.asarray(v.data, dtype=np.float64).ravel()
        fill = v._attributes.get("_FillValue")
    return np.where(t == fill, 0.0, t)


FIELD = _levitus()


def data(r, n, dt):
    """Rank r's n values: the field from another place for each rank."""
    start = (r * 104729) % FIELD.size
    return np.resize(np.roll(FIELD, -start), n).astype(dt)


t0, p0 = counts()
taken = 0
for dt in (np.float32, np.float64):
    n = 40000
    allx = [data(r, n * size, dt) for r in range(size)]
    x = allx[rank]
    exact = np.sum(np.stack(allx).astype(np.float64), axis=0)
    tol_red = size * eb * 1.0001 + (1e-4 if dt == np.float32 else 1e-10)
    tol_mv = eb * 1.0001
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=MPI.SUM)
    check(np.max(np.abs(y - exact)) <= tol_red, f"Allreduce {dt.__name__}")
    z = x.copy()
    comm.Allreduce(MPI.IN_PLACE, z, op=MPI.MAX)
    check(np.max(np.abs(z - np.max(np.stack(allx), axis=0))) <= size * eb * 1.0001, f"Allreduce in place max {dt.__name__}")
    r = np.empty_like(x) if rank == 0 else None
    comm.Reduce(x, r, op=MPI.SUM, root=0)
    if rank == 0:
        check(np.max(np.abs(r - exact)) <= tol_red, f"Reduce {dt.__name__}")
    rs = np.empty(n, dt)
    comm.Reduce_scatter_block(x, rs, op=MPI.SUM)
    check(np.max(np.abs(rs - exact[rank * n:(rank + 1) * n])) <= tol_red, f"Reduce_scatter_block {dt.__name__}")
    b = x[:n].copy()
    comm.Bcast(b, root=size - 1)
    check(np.max(np.abs(b - allx[size - 1][:n])) <= (0 if rank == size - 1 else tol_mv), f"Bcast {dt.__name__}")
    g = np.empty((size, n), dt)
    comm.Allgather(x[:n], g)
    check(max(np.max(np.abs(g[q] - allx[q][:n])) for q in range(size)) <= tol_mv, f"Allgather {dt.__name__}")
    ga = np.empty((size, n), dt) if rank == 0 else None
    comm.Gather(x[:n], ga, root=0)
    if rank == 0:
        check(max(np.max(np.abs(ga[q] - allx[q][:n])) for q in range(size)) <= tol_mv, f"Gather {dt.__name__}")
    sc = np.empty(n, dt)
    comm.Scatter(x if rank == 0 else None, sc, root=0)
    check(np.max(np.abs(sc - allx[0][rank * n:(rank + 1) * n])) <= tol_mv, f"Scatter {dt.__name__}")
    a2a = np.empty_like(x)
    comm.Alltoall(x, a2a)
    check(max(np.max(np.abs(a2a[q * n:(q + 1) * n] - allx[q][rank * n:(rank + 1) * n])) for q in range(size)) <= tol_mv,
          f"Alltoall {dt.__name__}")
    taken += 9
# left to MPI: int data, a small call, a pickled object
iv = np.arange(50000, dtype=np.int32)
io = np.empty_like(iv)
comm.Allreduce(iv, io, op=MPI.SUM)
check(io[7] == 7 * size, "int Allreduce")
comm.Allreduce(np.ones(4, np.float32), np.empty(4, np.float32), op=MPI.SUM)
check(comm.allreduce(rank) == size * (size - 1) // 2, "pickled allreduce")
t1, p1 = counts()
check(t1 - t0 == taken, f"{t1 - t0} calls to zccl, expected {taken}")
check(p1 - p0 >= 2, f"{p1 - p0} calls to MPI, expected at least 2 (int, small)")
total = comm.allreduce(failures)
print(f"rank {rank}: {t1 - t0} calls to zccl, {p1 - p0} to MPI, {failures} failed", flush=True)
sys.exit(1 if total else 0)
