#!/usr/bin/env python3
"""Alternated runs of `mnemo bench scale`, two builds side by side: per metric, the median of each
side with its min-max, and new/base. A markdown table on stdout.

    bench/alternated.py bench/results/scale-100k-house-base-*.json -- bench/results/scale-100k-house-new-*.json
"""
import json
import statistics
import sys

METRICS = [
    "recall_p50", "recall_p99", "search_lexical_p50", "search_dense_p50", "search_hybrid_p50",
    "ingest_batched", "ingest_one_at_a_time", "single_apply_us", "decay_sweep_k_due_ms",
    "peak_rss", "disk_bytes_per_memory", "dense_recall_at_10_vs_exact",
]


def side(files):
    values, units, commits = {}, {}, set()
    for f in files:
        with open(f) as fh:
            doc = json.load(fh)
        commits.add(doc["provenance"]["git_commit"][:7])
        for row in doc["rows"]:
            if row["metric"] in METRICS:
                values.setdefault((row["n"], row["metric"]), []).append(row["value"])
                units[row["metric"]] = row["unit"]
    return values, units, commits


def main(argv):
    if "--" not in argv or argv.index("--") in (0, len(argv) - 1):
        sys.exit("usage: alternated.py BASE.json ... -- NEW.json ...")
    cut = argv.index("--")
    base, units, bc = side(argv[:cut])
    new, _, nc = side(argv[cut + 1:])
    print(f"base {', '.join(sorted(bc))} ({len(argv[:cut])} runs), new {', '.join(sorted(nc))} ({len(argv[cut + 1:])} runs)\n")
    print("| n | metric | unit | base median [min–max] | new median [min–max] | new/base |")
    print("|---|---|---|---|---|---|")
    for key in sorted(base, key=lambda k: (k[0], METRICS.index(k[1]))):
        b, n = base[key], new.get(key)
        if not n:
            continue
        mb, mn = statistics.median(b), statistics.median(n)
        ratio = f"{mn / mb:.3f}" if mb else "–"
        print(f"| {key[0]} | {key[1]} | {units[key[1]]} | {mb:.4g} [{min(b):.4g}–{max(b):.4g}] "
              f"| {mn:.4g} [{min(n):.4g}–{max(n):.4g}] | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1:])
