"""Tables and curves of examples/ddp_training runs (train.py --out DIR).

    python3 examples/ddp_training/plot.py DIR [DIR...]

For each DIR: a table (printed, and DIR/summary.md) of final test accuracy
and its difference from Gloo's, final training loss, time per epoch (median
after the first, which warms up) and its speedup over Gloo, median
compression ratio per step and bytes each rank's link sent per step; for a
run of more than two epochs, DIR/curves.png (training loss and test accuracy
per epoch per method, compression ratio per step).
"""
import json
import sys
from pathlib import Path
from statistics import median


def load(d: Path) -> list:
    recs = [json.loads(f.read_text()) for f in sorted(d.glob("*.json"))]
    order = {"gloo": 0, "zccl": 1}
    return sorted(recs, key=lambda r: (order.get(r["method"], 2),
                                       float(r["method"].split(":")[2]) if r["method"].count(":") >= 2 else 0,
                                       r["method"].endswith(":ef")))


def figures(r: dict) -> tuple:
    """A run's seconds per epoch and link MB per step (medians over the
    epochs after the first, which warms up), and median compression ratio
    per step (None when nothing was compressed)."""
    ep = r["epochs"]
    timed = ep[1:] if len(ep) > 1 else ep
    ratios = [x for x in r["step_ratio"] if x]
    return (median(e["seconds"] for e in timed),
            median(e["tx_bytes_per_rank"] for e in timed) / r["steps_per_epoch"] / 1e6,
            median(ratios) if ratios else None)


def table(recs: list, where: str) -> str:
    base = next((r for r in recs if r["method"] == "gloo"), None)
    lines = [f"{where}: {recs[0]['ranks']} ranks, {recs[0]['parameters'] / 1e6:.2f}M parameters, "
             f"{recs[0]['steps_per_epoch']} steps per epoch, {len(recs[0]['epochs'])} epochs", "",
             "| method | test accuracy % | vs Gloo (points) | train loss | s/epoch | x Gloo | ratio | MB/step per rank |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in recs:
        last = r["epochs"][-1]
        acc = 100 * last["test_accuracy"]
        dacc = f"{acc - 100 * base['epochs'][-1]['test_accuracy']:+.2f}" if base else "-"
        sec, mb, ratio = figures(r)
        speed = f"{figures(base)[0] / sec:.2f}" if base else "-"
        ratio = f"{ratio:.1f}" if ratio else "-"
        name = r["method"] + (" (error feedback)" if r["error_feedback"] else "")
        lines.append(f"| {name} | {acc:.2f} | {dacc} | {last['train_loss']:.4f} | {sec:.2f} | {speed} | {ratio} | "
                     f"{f'{mb:.2f}' if mb else '-'} |")
    return "\n".join(lines)


def curves(recs: list, d: Path, where: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(17, 4.6))
    for i, r in enumerate(recs):
        ep = [e["epoch"] for e in r["epochs"]]
        look = {"linestyle": "--" if r["error_feedback"] else "-", "color": f"C{i}", "label": r["method"]}
        ax[0].plot(ep, [e["train_loss"] for e in r["epochs"]], marker="o", ms=3, **look)
        ax[1].plot(ep, [100 * e["test_accuracy"] for e in r["epochs"]], marker="o", ms=3, **look)
        ratios = r["step_ratio"]
        if any(ratios):
            ax[2].plot(range(1, len(ratios) + 1), [x or float("nan") for x in ratios], lw=1, **look)
    ax[0].set(xlabel="epoch", ylabel="training loss (mean over the epoch)", yscale="log", title="loss")
    ax[1].set(xlabel="epoch", ylabel="test accuracy (%)", title="held-out accuracy")
    ax[2].set(xlabel="step", ylabel="compression ratio (raw / wire bytes)", yscale="log",
              title="compression ratio per step")
    for a in ax:
        a.grid(alpha=0.3)
    ax[1].legend(fontsize=8)
    fig.suptitle(f"DDP on digits, {recs[0]['parameters'] / 1e6:.2f}M parameters: {where}")
    fig.tight_layout()
    fig.savefig(d / "curves.png", dpi=90)
    plt.close(fig)


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    for arg in sys.argv[1:]:
        d = Path(arg)
        recs = load(d)
        if not recs:
            print(f"plot.py: no runs in {d}")
            continue
        where = recs[0].get("where") or str(d)
        text = table(recs, where)
        print(text + "\n")
        (d / "summary.md").write_text(text + "\n")
        if len(recs[0]["epochs"]) > 2:
            try:
                curves(recs, d, where)
                print(f"picture: {d / 'curves.png'}")
            except ImportError:
                print("plot.py: no matplotlib; tables only (scripts/install-deps.sh installs it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
