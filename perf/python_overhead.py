"""The Python package's cost per call beside the C call it makes, on one
rank (zcclAllReduce of one rank copies, so what is timed is the call
itself): the package's comm.allreduce on a numpy array and on a torch
tensor, the bare ctypes call with its arguments prepared once, and, from
C, zccl-perf's own loop when its path is given. Prints a table (median of
rounds, microseconds per call).

    PYTHONPATH=python python3 perf/python_overhead.py [--zccl-perf build/perf/zccl-perf]
"""
import argparse
import ctypes
import statistics
import subprocess
import time

import numpy as np

import zccl
from zccl import _lib


def per_call(fn, iters=20000, rounds=7):
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        out.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zccl-perf", help="zccl-perf binary for the C row")
    args = ap.parse_args()
    comm = zccl.Comm(1, zccl.UniqueId.new(), 0)
    rows = []
    for n in (2, 1 << 14):
        x = np.ones(n, np.float32)
        rows.append((f"comm.allreduce(numpy), {4 * n} B", per_call(lambda: comm.allreduce(x))))
        try:
            import torch

            t = torch.ones(n, dtype=torch.float32)
            rows.append((f"comm.allreduce(torch), {4 * n} B", per_call(lambda: comm.allreduce(t))))
        except ImportError:
            pass
        fn, ptr, h = _lib.load().zcclAllReduce, x.__array_interface__["data"][0], comm.handle
        rows.append((f"ctypes zcclAllReduce, {4 * n} B", per_call(lambda: fn(ptr, ptr, n, 7, 0, h, None))))
    comm.destroy()
    print(f"{'call':40s} {'us/call':>9s}")
    for name, us in rows:
        print(f"{name:40s} {us:9.2f}")
    if args.zccl_perf:
        res = subprocess.run([args.zccl_perf, "allreduce", "-b", "8", "-e", "64K", "-f", "8192", "-n", "20000"],
                             capture_output=True, text=True)
        print("\nzccl-perf (C), one rank:\n" + res.stdout[-1500:])


if __name__ == "__main__":
    main()
