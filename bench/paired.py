#!/usr/bin/env python3
"""Paired comparison of two `mnemo bench locomo --per-question` (or `bench longmemeval
--per-question`) files (standard library only).

For each metric: the two means over the questions both runs answered (LoCoMo: categories 1-4,
LongMemEval: every question type but abstention, unless --categories says otherwise), the questions won / lost / tied by the variant, a two-sided exact
sign test over the non-tied questions, and a paired bootstrap 95% interval of the mean
difference (10,000 resamples of the questions, fixed seed).

    bench/paired.py BASELINE.jsonl VARIANT.jsonl [--method hybrid] [--variant-method M]
"""
import argparse
import math
import random
import sys

from bench_jsonl import read  # bench/bench_jsonl.py, beside this file


def load(path, method, cats):
    out = {}
    for r in read(path):
        try:
            if r["method"] == method and wanted(r["category"], cats):
                out[(r["conversation"], r["question"])] = r["figures"]
        except (KeyError, TypeError) as e:
            sys.exit(f"{path}: not a per-question line, it has no {e} ({str(r)[:80]})")
    if not out:
        sys.exit(f"{path}: no question of method {method!r} in categories {sorted(cats) if cats else 'default'}")
    return out


def wanted(category, cats):
    """LoCoMo categories are numbers, LongMemEval's question types names; None: the default."""
    if cats is None:
        return category in (1, 2, 3, 4) if isinstance(category, int) else category != "abstention"
    return str(category) in cats


def sign_test(wins, losses):
    """Two-sided exact binomial p-value of wins vs losses under p = 1/2."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def bootstrap(diffs, rounds=10_000, seed=12):
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("baseline")
    ap.add_argument("variant")
    ap.add_argument("--method", default="hybrid", help="method row of the baseline (default hybrid)")
    ap.add_argument("--variant-method", help="method row of the variant (default: --method)")
    ap.add_argument("--categories", help="comma-separated LoCoMo categories or LongMemEval question types "
                    "(default: LoCoMo 1-4, LongMemEval every type but abstention)")
    ap.add_argument("--metrics", help="comma-separated (default: LoCoMo's ER@256..2048, R@1..20, MRR; "
                    "LongMemEval's S-any@5, S-all@10, R@5, R@10, NDCG@10, ER@2048, ER@4096)")
    a = ap.parse_args()
    cats = None if a.categories is None else set(a.categories.split(","))
    base = load(a.baseline, a.method, cats)
    var = load(a.variant, a.variant_method or a.method, cats)
    if a.metrics is None:
        first = next(iter(base.values()))
        a.metrics = ("ER@256,ER@512,ER@1024,ER@2048,R@1,R@5,R@10,R@20,MRR" if "MRR" in first
                     else "S-any@5,S-all@10,R@5,R@10,NDCG@10,ER@2048,ER@4096")
    keys = sorted(set(base) & set(var))
    if len(keys) != len(base) or len(keys) != len(var):
        print(f"note: {len(base)} baseline and {len(var)} variant questions; comparing the {len(keys)} in both")
    print(f"n = {len(keys)}; variant {a.variant} ({a.variant_method or a.method}) vs baseline {a.baseline} ({a.method})")
    print(f"{'metric':8} {'base':>6} {'var':>6} {'diff':>7} {'won':>4} {'lost':>4} {'tied':>4} {'sign p':>7}  bootstrap 95% of diff")
    for m in a.metrics.split(","):
        # A LongMemEval question without has_answer turns has no turn figures.
        held = [k for k in keys if m in base[k] and m in var[k]]
        if not held:
            sys.exit(f"no question has the metric {m!r}")
        d = [var[k][m] - base[k][m] for k in held]
        wins = sum(1 for x in d if x > 1e-12)
        losses = sum(1 for x in d if x < -1e-12)
        lo, hi = bootstrap(d)
        mb = sum(base[k][m] for k in held) / len(held)
        mv = sum(var[k][m] for k in held) / len(held)
        n = "" if len(held) == len(keys) else f"  (n = {len(held)})"
        print(f"{m:8} {mb:6.3f} {mv:6.3f} {mv - mb:+7.3f} {wins:4d} {losses:4d} {len(held) - wins - losses:4d} "
              f"{sign_test(wins, losses):7.3f}  [{lo:+.3f}, {hi:+.3f}]{n}")


if __name__ == "__main__":
    main()
