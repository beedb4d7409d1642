#!/usr/bin/env python3
"""Sweep hybrid fusion offline over `--dump-candidates` files (bench locomo / bench longmemeval).

Each question's lexical and dense candidate lists are fused again by weighted reciprocal rank,
as the index does (mnemo_contract::fusion::rrf; the entity boost is not replayed), under each
setting of the grid, and scored by turn recall@k (the share of evidence turns in the top k),
with the question-by-question difference against the first setting (won / lost, and a
bootstrap 95% interval of the mean difference). A dense vote can be withheld from texts over
`dense_max_tokens` tokens (the dump's token counts): the rule this sweep was written to test.

    bench/fusion-sweep.py --locomo locomo.cands.jsonl --longmemeval lme-s.cands.jsonl \
        --grid 'k=10,wd=1' 'k=10,wd=1,max=256' 'k=5,wd=0.7,max=256'

The figures are a replay, not a measurement of the engine: a setting worth keeping is built and
then measured with the benches. The dump holds each list to the depth fusion takes, so a text the
engine would rank just past it (once long texts leave the dense list) is missing from the replay.
"""
import argparse
import sys
from collections import defaultdict

from bench_jsonl import read  # bench/bench_jsonl.py, beside this file
from paired import bootstrap  # the paired comparison's interval (bench/paired.py, beside this file)


def load(path, kind):
    """Questions with evidence: (lexical, dense, evidence turns, turn tokens, group)."""
    tokens, out = {}, []
    for r in read(path):
        if kind == "locomo":
            if "lexical" not in r:
                tokens[r["conversation"]] = r["turn_tokens"]
                continue
            evidence = [e for e in r["evidence"] if e is not None]
            if r["category"] > 4 or not evidence:
                continue
            out.append((r["lexical"], r["dense"], evidence, tokens[r["conversation"]], str(r["category"])))
        else:
            if r["abstention"] or not r["evidence"]:
                continue
            out.append((r["lexical"], r["dense"], r["evidence"], r["turn_tokens"], r["type"]))
    return out


def fuse(q, k, wl, wd, max_tokens):
    lexical, dense, _, tokens, _ = q
    fused = defaultdict(float)
    for i, (t, _) in enumerate(lexical):
        fused[t] += wl / (k + i + 1)
    # As the index: a vector at or below 0 cosine does not vote, and a text filed without its
    # vector is not in the dense list at all (the texts after it move up a rank).
    voters = [t for t, score in dense if score > 0 and (max_tokens is None or tokens[t] <= max_tokens)]
    for i, t in enumerate(voters):
        fused[t] += wd / (k + i + 1)
    # Ties as mnemo_contract::fusion::sort_hits: the higher id (the later turn) first.
    return [t for t, _ in sorted(fused.items(), key=lambda x: (-x[1], -x[0]))]


def recall_at(order, evidence, k):
    top = set(order[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


def setting(text):
    s = {"k": 10.0, "wl": 1.0, "wd": 1.0, "max": None}
    for part in filter(None, text.split(",")):
        key, value = part.split("=")
        if key not in s:
            sys.exit(f"unknown setting {key!r} in {text!r} (k, wl, wd, max)")
        s[key] = float(value) if key != "max" else int(value)
    return s


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--locomo", help="a `bench locomo --dump-candidates` file")
    p.add_argument("--longmemeval", help="a `bench longmemeval --dump-candidates` file")
    p.add_argument("--grid", nargs="+", default=["k=10,wd=1", "k=10,wd=1,max=256"],
                   help="settings, the first the baseline: k (RRF k), wl / wd (weights), max (dense_max_tokens)")
    p.add_argument("--ks", default="5,10", help="recall@k cut-offs")
    a = p.parse_args()
    sets = [(name, load(path, name)) for name, path in (("locomo", a.locomo), ("longmemeval", a.longmemeval)) if path]
    if not sets:
        sys.exit("give --locomo and/or --longmemeval")
    ks = [int(k) for k in a.ks.split(",")]
    grid = [(g, setting(g)) for g in a.grid]
    print("| dataset | n | setting | " + " | ".join(f"R@{k}" for k in ks) + " | R@10 vs first: won–lost, 95% of diff |")
    print("|---|---|---|" + "---|" * len(ks) + "---|")
    for name, qs in sets:
        base = None
        for text, s in grid:
            orders = [fuse(q, s["k"], s["wl"], s["wd"], s["max"]) for q in qs]
            per_k = {k: [recall_at(o, q[2], k) for o, q in zip(orders, qs)] for k in ks}
            r10 = [recall_at(o, q[2], 10) for o, q in zip(orders, qs)]
            if base is None:
                base, versus = r10, "–"
            else:
                d = [x - y for x, y in zip(r10, base)]
                lo, hi = bootstrap(d)
                versus = f"{sum(x > 0 for x in d)}–{sum(x < 0 for x in d)}, [{lo:+.3f}, {hi:+.3f}]"
            cells = " | ".join(f"{sum(v) / len(v):.3f}" for v in per_k.values())
            print(f"| {name} | {len(qs)} | {text} | {cells} | {versus} |")


if __name__ == "__main__":
    main()
