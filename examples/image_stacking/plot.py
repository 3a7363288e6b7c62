#!/usr/bin/env python3
"""Pictures of an image_stacking run (examples/image_stacking/README.md).

    plot.py DIR [--row NAME] [--level K] [--origin lower|upper]

Reads DIR/meta.json, DIR/exact_sum.f32, DIR/mask.u8 and DIR/<row>.f32 (as
written by `image_stacking --out DIR`) and writes
    DIR/exact.png         the exact mean composite
    DIR/<row>.png         one compressed row's composite (default hz_abs_sum)
    DIR/<row>_diff.png    composite - exact, colours symmetric at +-bound
    DIR/stack_panel.png   the three side by side
Masked pixels (fill in some frame) are grey. A frame with more than two
axes is drawn at index K of its first axis (--level, default 0: for the
ocean atlas the surface) and index 0 of any other leading axis. Rows are
drawn with the first image row at the bottom (--origin lower), as NetCDF
climate grids store south first.

Needs numpy and matplotlib (Debian's /usr/bin/python3 has them); without
them it says so and exits 0 having written nothing.
"""
import argparse
import json
import os
import sys


def parse_args():
    p = argparse.ArgumentParser(description="plots of an image_stacking --out DIR")
    p.add_argument("dir", help="the --out directory of image_stacking")
    p.add_argument("--row", default=None, help="compressed row to draw (default hz_abs_sum, else the first)")
    p.add_argument("--level", type=int, default=0, help="index on the first axis of a 3D frame (default 0)")
    p.add_argument("--origin", choices=("lower", "upper"), default="lower")
    return p.parse_args()


def pick_row(meta, name):
    rows = [r for r in meta["rows"] if r.get("file")]
    if not rows:
        sys.exit("plot.py: no compressed rows in meta.json")
    if name is None:
        name = "hz_abs_sum" if any(r["name"] == "hz_abs_sum" for r in rows) else rows[0]["name"]
    for r in rows:
        if r["name"] == name:
            return r
    sys.exit(f"plot.py: no row {name}; rows with pictures: {', '.join(r['name'] for r in rows)}")


def load(np, d, name, dtype, shape):
    a = np.fromfile(os.path.join(d, name), dtype=dtype)
    if a.size != int(np.prod(shape)):
        sys.exit(f"plot.py: {name} has {a.size} values, meta.json says {shape}")
    return a.reshape(shape)


def plane(a, level):
    """The 2D picture of a frame: level on the first axis of a 3D+ frame."""
    if a.ndim < 2:
        return a.reshape(1, -1)
    while a.ndim > 2:
        if not 0 <= level < a.shape[0]:
            sys.exit(f"plot.py: --level {level} outside 0..{a.shape[0] - 1}")
        a, level = a[level], 0
    return a


def fmt(v):
    return "-" if v is None else f"{v:.3g}"


def draw(plt, ax, img, cmap, vmin, vmax, title, label, origin, extend="neither"):
    cm = plt.get_cmap(cmap).copy()
    cm.set_bad("0.6")  # masked pixels
    im = ax.imshow(img, cmap=cm, vmin=vmin, vmax=vmax, origin=origin, interpolation="nearest", aspect="auto")
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    cb = plt.colorbar(im, ax=ax, fraction=0.046, pad=0.03, extend=extend)
    cb.set_label(label, fontsize=8)
    cb.ax.tick_params(labelsize=7)


def panels(meta, row, units, level_text):
    """(title, colour-bar label) of the three pictures."""
    f, n = meta["frames"], meta["ranks"]
    mode = f"{row['mode'].upper()} {row['eb']:g}"
    return [
        (f"exact mean of {f} frames ({n} ranks){level_text}", units),
        (f"zccl {row['codec']} {mode} {row['op'].upper()}: PSNR {fmt(row['psnr'])} dB, "
         f"NRMSE {fmt(row['nrmse'])}, max err {fmt(row['max_abs_err'])}", units),
        (f"{row['name']} - exact: max |err| {fmt(row['max_abs_err'])}, bound {fmt(row['bound'])}",
         f"error ({units}); colours at +-bound {row['bound']:.3g}"),
    ]


def main():
    args = parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError as e:
        print(f"plot.py: no pictures: {e} (use a python3 with numpy and matplotlib, e.g. /usr/bin/python3)")
        return 0
    d = args.dir
    with open(os.path.join(d, "meta.json")) as fh:
        meta = json.load(fh)
    row = pick_row(meta, args.row)
    shape = meta["frame_shape"]
    mask = plane(load(np, d, meta["mask"], np.uint8, shape), args.level) != 0
    exact = np.ma.masked_array(plane(load(np, d, meta["exact"], np.float32, shape), args.level), mask)
    got = np.ma.masked_array(plane(load(np, d, row["file"], np.float32, shape), args.level), mask)
    diff = got.astype(np.float64) - exact.astype(np.float64)
    units = meta.get("units") or "data units"
    level_text = f", {meta['frame_dims'][0]} index {args.level}" if len(shape) > 2 else ""
    lo, hi = float(exact.min()), float(exact.max())
    b = row["bound"]
    ext = "both" if float(np.abs(diff).max()) > b else "neither"
    specs = [(exact, "viridis", lo, hi, "neither"), (got, "viridis", lo, hi, "neither"), (diff, "RdBu_r", -b, b, ext)]
    texts = panels(meta, row, units, level_text)
    names = ["exact.png", f"{row['name']}.png", f"{row['name']}_diff.png"]
    for (img, cmap, vmin, vmax, e), (title, label), name in zip(specs, texts, names):
        fig, ax = plt.subplots(figsize=(7.5, 4.0))
        draw(plt, ax, img, cmap, vmin, vmax, title, label, args.origin, e)
        fig.tight_layout()
        fig.savefig(os.path.join(d, name), dpi=100)
        plt.close(fig)
    fig, axes = plt.subplots(1, 3, figsize=(19, 4.4))
    for ax, (img, cmap, vmin, vmax, e), (title, label) in zip(axes, specs, texts):
        draw(plt, ax, img, cmap, vmin, vmax, title, label, args.origin, e)
    where = meta.get("where") or "this machine"
    fig.suptitle(f"{meta['variable']} of {os.path.basename(meta['data'])}: {meta['frames']} frames stacked by "
                 f"AllReduce on {meta['ranks']} ranks ({where})", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "stack_panel.png"), dpi=90)
    plt.close(fig)
    for name in names + ["stack_panel.png"]:
        print(os.path.join(d, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
