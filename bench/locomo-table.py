#!/usr/bin/env python3
"""`mnemo bench locomo` result files as one Markdown table, a row per file and method
(categories 1-4): the tables bench/RESULTS.md shows, generated from the files (never typed by
hand).

    bench/locomo-table.py FILE[=LABEL] ... [--methods hybrid,dense] [--speed]

Columns: embedder (as the file's provenance names it), method, n, ER@256/1024/2048, R@1/5/10,
MRR; with --speed also the embedding throughput at ingest and the query embedding p50/p99.
"""
import argparse
import json


def figures(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = {}
    for r in data["rows"]:
        if r.get("category") not in ("1-4", "all", None):
            continue
        key = (r.get("method"), r["metric"], r.get("budget") or r.get("k"))
        out[key] = r
    return data["provenance"], out


def cell(rows, method, metric, at=None):
    r = rows.get((method, metric, at))
    return "–" if r is None else f"{r['value']:.3f}".lstrip("0") if r["value"] < 1 else f"{r['value']:.3f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+")
    p.add_argument("--methods", default="hybrid,dense")
    p.add_argument("--speed", action="store_true")
    a = p.parse_args()
    head = ["run", "embedder", "method", "n", "ER@256", "ER@1024", "ER@2048", "R@1", "R@5", "R@10", "MRR"]
    if a.speed:
        head += ["ingest texts/s", "query embed p50 / p99 ms"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for spec in a.files:
        path, _, label = spec.partition("=")
        prov, rows = figures(path)
        label = label or path.rsplit("/", 1)[-1]
        for m in a.methods.split(","):
            n = rows.get((m, "recall_at_k", 10), {}).get("n", "–")
            line = [label, prov.get("embedder", "–"), m, str(n)]
            line += [cell(rows, m, "evidence_recall", b) for b in (256, 1024, 2048)]
            line += [cell(rows, m, "recall_at_k", k) for k in (1, 5, 10)]
            line += [cell(rows, m, "mrr")]
            if a.speed:
                tp = rows.get(("embedder", "embed_throughput_texts_per_s", None))
                p50 = rows.get(("embedder", "query_embed_ms_p50", None))
                p99 = rows.get(("embedder", "query_embed_ms_p99", None))
                line += [
                    "–" if tp is None else f"{tp['value']:,.0f}",
                    "–" if p50 is None else f"{p50['value']:.3f} / {p99['value']:.3f}",
                ]
            print("| " + " | ".join(line) + " |")


if __name__ == "__main__":
    main()
