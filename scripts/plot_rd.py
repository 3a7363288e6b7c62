#!/usr/bin/env python3
"""Rate-distortion table and plot (PSNR vs bits/value) from zccl-codec stats
JSON lines: python3 scripts/plot_rd.py rd.jsonl out.png"""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
label = {"szp": "zccl szp (error-bounded)", "zfp-acc": "ZFP fixed accuracy", "zfp-rate": "ZFP fixed rate"}
print("| field | codec | REL eb / rate | bits/value | ratio | PSNR dB | max err / eb_abs |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    field = r["source"].split(":")[-1]
    knob = "rate %g" % r["rate"] if r["codec"] == "zfp-rate" else "%g" % r["eb"]
    over = "-" if r["max_err_over_eb"] is None else "%.3f" % r["max_err_over_eb"]
    print("| %s | %s | %s | %.3f | %.2f | %.2f | %s |" % (field, r["codec"], knob, r["bits_per_value"], r["ratio"],
                                                         r["psnr"], over))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not available: no plot (apt-get install python3-matplotlib)")
    sys.exit(0)
fields = sorted({r["source"].split(":")[-1] for r in rows})
fig, axes = plt.subplots(1, len(fields), figsize=(6 * len(fields), 4.5), squeeze=False)
for ax, field in zip(axes[0], fields):
    for codec, style in (("szp", "o-"), ("zfp-acc", "s--"), ("zfp-rate", "^:")):
        pts = sorted((r["bits_per_value"], r["psnr"]) for r in rows
                     if r["codec"] == codec and r["source"].endswith(":" + field))
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label[codec])
    ax.set_title("levitus %s (float32, fill points 0)" % field)
    ax.set_xlabel("bits per value")
    ax.set_ylabel("PSNR (dB)")
    ax.grid(True, alpha=0.3)
    ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print("plot: %s" % sys.argv[2])
