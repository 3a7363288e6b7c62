#!/usr/bin/env python3
"""Plot of zccl-scale --json: the cost model's predicted speedup at scale.

  perf/scale_plot.py [-o OUT.png] [--bytes SIZE] SCALE.json

One column of panels per collective; the top row is zccl compressed over
zccl uncompressed, the bottom row over the best of OpenMPI's algorithms
(both modelled); x the rank count, one line per link speed, solid for the
CPU codec rates measured by zccl-scale, dashed for the assumed GPU ones.
With several sizes in the file, --bytes picks one (default the largest).
Prints the path written. Exit 0 when written, 1 when the file holds no
rows for the size, 2 on bad arguments or an unreadable file, 3 when
matplotlib is missing (apt-get install python3-matplotlib).
"""
import argparse
import json
import os
import sys

ORDER = ("allreduce", "broadcast", "allgather", "reducescatter", "reduce", "gather", "scatter", "alltoall")
STYLE = {"cpu": "-", "gpu (assumed)": "--"}


def size_text(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n:
            return "%g %s" % (b / n, unit)
    return "%d B" % b


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", dest="out", default="zccl-scale.png", help="the PNG to write")
    p.add_argument("--bytes", type=float, default=None, help="the size to plot (default the largest)")
    p.add_argument("json", help="zccl-scale --json output")
    a = p.parse_args()
    try:
        with open(a.json) as f:
            data = json.load(f)
        rows = data["rows"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("scale_plot: %s: %s" % (a.json, e), file=sys.stderr)
        return 2
    sizes = sorted({r["bytes"] for r in rows})
    size = a.bytes if a.bytes is not None else (sizes[-1] if sizes else 0)
    rows = [r for r in rows if r["bytes"] == size]
    if not rows:
        print("scale_plot: %s: no rows of %g bytes (sizes: %s)" % (a.json, size, sizes), file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # A python3 first on PATH (pyenv, a venv) may lack it where Debian's has it.
        deb = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(deb) and os.access(deb, os.X_OK) \
                and not os.environ.get("ZCCL_PLOT_REEXEC"):
            os.environ["ZCCL_PLOT_REEXEC"] = "1"
            os.execv(deb, [deb, os.path.abspath(__file__)] + sys.argv[1:])
        print("scale_plot: matplotlib not available (apt-get install python3-matplotlib)", file=sys.stderr)
        return 3
    colls = [c for c in ORDER if any(r["collective"] == c for r in rows)]
    links = sorted({r["gbps"] for r in rows})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(2, len(colls), figsize=(3.6 * len(colls), 6.4), squeeze=False, sharex=True)
    for j, coll in enumerate(colls):
        for i, (key, what) in enumerate((("speedup_uncompressed", "over zccl uncompressed"),
                                         ("speedup_mpi", "over OpenMPI's best"))):
            ax = axes[i][j]
            for li, gbps in enumerate(links):
                for kind, style in STYLE.items():
                    pts = sorted((r["nranks"], r[key]) for r in rows if r["collective"] == coll
                                 and r["gbps"] == gbps and r["speeds"] == kind and r[key] is not None)
                    if pts:
                        ax.plot([x for x, _ in pts], [y for _, y in pts], style, marker="o", markersize=3,
                                color=colors[li % len(colors)], label="%g Gbit/s, %s" % (gbps, kind))
            ax.axhline(1, color="gray", linewidth=0.8)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            if i == 0:
                ax.set_title(coll)
            else:
                ax.set_xlabel("ranks")
            if j == 0:
                ax.set_ylabel("predicted speedup\n" + what)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, max(1, len(labels))), fontsize="small")
    fig.suptitle("zccl-scale: %s, codec %s REL %g, ratio %s (model, not measured)"
                 % (size_text(size), data.get("codec", "?"), data.get("eb_rel", 0),
                    ", ".join("%.1f" % s["ratio"] for s in data.get("speeds", [])[:1])))
    fig.tight_layout(rect=(0, 0.08 + 0.03 * ((len(labels) - 1) // 4), 1, 0.95))
    fig.savefig(a.out, dpi=110)
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
