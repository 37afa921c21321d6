#!/usr/bin/env python3
"""Draws machine CPU µs per request by vehicle and size from benches/sendfile
JSON files (all runs given are pooled; the bar is the median, the whisker the
min–max). Usage: chart.py OUT.svg RUN.json [RUN.json ...]"""

import json
import statistics
import sys
from html import escape

SIZES = {4096: "4 KiB", 65536: "64 KiB", 1048576: "1 MiB"}
OURS = {"auto", "mapped_kept_validated"}


def load(paths):
    cells = {}
    for p in paths:
        for s in json.load(open(p))["samples"]:
            if s["size"] not in SIZES or not s.get("per_request"):
                continue
            family = "named" if s["family"] == "ours" else s["family"]
            key = (family, s["size"], s["vehicle"])
            cells.setdefault(key, []).append(s["per_request"]["machine_us"])
    return cells


def panel(x, y, w, title, rows):
    """Horizontal bars: rows = [(vehicle, median, lo, hi)]."""
    out = [f'<text x="{x}" y="{y + 14}" class="t">{escape(title)}</text>']
    top = max(hi for _, _, _, hi in rows) * 1.08
    label_w, bar_h, gap = 150, 16, 6
    for i, (name, med, lo, hi) in enumerate(rows):
        by = y + 26 + i * (bar_h + gap)
        scale = (w - label_w - 60) / top
        cls = "ours" if name in OURS else "bar"
        out.append(f'<text x="{x + label_w - 6}" y="{by + 12}" class="l">{escape(name)}</text>')
        out.append(f'<rect x="{x + label_w}" y="{by}" width="{med * scale:.1f}" height="{bar_h}" class="{cls}"/>')
        out.append(f'<line x1="{x + label_w + lo * scale:.1f}" x2="{x + label_w + hi * scale:.1f}" '
                   f'y1="{by + bar_h / 2}" y2="{by + bar_h / 2}" class="w"/>')
        out.append(f'<text x="{x + label_w + hi * scale + 4:.1f}" y="{by + 12}" class="v">{med:.1f}</text>')
    return out, 26 + len(rows) * (bar_h + gap)


def main():
    out_path, paths = sys.argv[1], sys.argv[2:]
    cells = load(paths)
    families = ["startup", "named"]
    fam_titles = {"startup": "named at startup", "named": "named by the request"}
    present = [f for f in families if any(k[0] == f for k in cells)]
    others = sorted({k[0] for k in cells} - set(present))
    present += others
    col_w, x0, y0 = 420, 10, 60
    parts, y = [], y0
    for fam in present:
        heights = []
        for ci, size in enumerate(SIZES):
            rows = []
            for (f, s, v), xs in sorted(cells.items(), key=lambda kv: statistics.median(kv[1])):
                if f == fam and s == size:
                    rows.append((v, statistics.median(xs), min(xs), max(xs)))
            if rows:
                p, h = panel(x0 + ci * col_w, y, col_w - 20,
                             f"{fam_titles.get(fam, fam)} — {SIZES[size]}", rows)
                parts += p
                heights.append(h)
        y += max(heights, default=0) + 24
    width, height = x0 + 3 * col_w, y + 20
    runs = len(paths)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           "<style>.t{font-size:13px;font-weight:bold}.l{font-size:11px;text-anchor:end}"
           ".v{font-size:10px}.bar{fill:#7a9cc6}.ours{fill:#d9822b}.w{stroke:#333;stroke-width:1.2}"
           ".h{font-size:15px;font-weight:bold}.s{font-size:11px;fill:#444}</style>",
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{x0}" y="22" class="h">Machine CPU µs per request, by vehicle and size (lower is better)</text>',
           f'<text x="{x0}" y="40" class="s">benches/sendfile, {runs} run(s) pooled: bar = median, whisker = min–max. '
           f'Orange: nikaia_std’s own (auto, the validated kept table). One loopback connection.</text>']
    svg += parts
    svg.append("</svg>")
    with open(out_path, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
