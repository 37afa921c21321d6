#!/usr/bin/env python3
"""Puts several benches/sendfile runs side by side, as the record does: one
table per family and size, machine µs per request (each run's median), and
the thread column of the first run for the instrument comparison.
Usage: tables.py RUN.json [RUN.json ...]"""

import json
import statistics
import sys

SIZES = {4096: "4 KiB", 65536: "64 KiB", 1048576: "1 MiB"}
ORDER = {
    "startup": ["read_each", "cached", "mapped", "sendfile", "splice"],
    "named": ["read_named", "mapped_named", "sendfile_named", "mapped_kept",
              "mapped_kept_validated", "auto"],
}
FAMILY = {"mapped_kept_validated": "ours", "auto": "ours"}


def med(run, fam, size, vehicle, col):
    xs = [s["per_request"][col] for s in run["samples"]
          if s["family"] == fam and s["size"] == size and s["vehicle"] == vehicle
          and s.get("per_request")]
    return statistics.median(xs) if xs else None


def fmt(x):
    return "–" if x is None else (f"{x:.0f}" if x >= 100 else f"{x:.1f}")


def main():
    runs = [json.load(open(p)) for p in sys.argv[1:]]
    heads = " | ".join(f"run {i + 1}" for i in range(len(runs)))
    for fam, title in (("startup", "Named at startup"), ("named", "Named by the request (64 files)")):
        print(f"\n#### {title}\n")
        for size, label in SIZES.items():
            print(f"| {label} | {heads} | thread, run 1 |")
            print("|---|" + "---|" * (len(runs) + 1))
            for v in ORDER[fam]:
                f = FAMILY.get(v, fam)
                cells = [fmt(med(r, f, size, v, "machine_us")) for r in runs]
                print(f"| `{v}` | " + " | ".join(cells) + f" | {fmt(med(runs[0], f, size, v, 'thread_us'))} |")
            print()
    print("#### Extras (µs per call or request, machine column, median of each run)\n")
    rows = sorted({(e["experiment"], e["row"]) for e in runs[0]["extras"]})
    print(f"| experiment | row | {heads} |")
    print("|---|---|" + "---|" * len(runs))
    for exp, row in rows:
        cells = []
        for r in runs:
            xs = [e["per_call"]["machine_us"] for e in r["extras"] if (e["experiment"], e["row"]) == (exp, row)]
            cells.append(f"{statistics.median(xs):.2f}" if xs else "–")
        print(f"| {exp} | `{row}` | " + " | ".join(cells) + " |")
    print("\nLoad average (1 min) before → after each run: "
          + "; ".join(f"{r['load_start'][0]:.2f} → {r['load_end'][0]:.2f}" if isinstance(r['load_start'], list)
                      else f"{r['load_start']} → {r['load_end']}" for r in runs))


if __name__ == "__main__":
    main()
