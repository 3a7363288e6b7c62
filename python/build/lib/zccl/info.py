"""python -m zccl.info: what zccl-info prints (the build, its dependencies,
the machine, the codecs), and where this package found libzccl.so."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import zccl


def _zccl_info() -> str | None:
    """zccl-info beside the library (a build tree's tools/, an install's bin/) or on PATH."""
    lib = Path(zccl.library_path()).resolve().parent
    for cand in (lib / "tools" / "zccl-info", lib.parent / "bin" / "zccl-info"):
        if cand.exists() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("zccl-info")


def main(argv: list[str]) -> int:
    print(f"python:    zccl package {Path(zccl.__file__).parent}, libzccl.so {zccl.library_path()}")
    tool = _zccl_info()
    if tool is None:
        v = zccl.version()
        print(f"zccl {v // 10000}.{v // 100 % 100}.{v % 100} (version code {v}); zccl-info not found for the rest")
        return 0
    return subprocess.call([tool] + argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
