#!/usr/bin/env python3
"""How well can the gate's relevance evidence tell answerable questions from unanswerable ones?

Reads a `mnemo bench answerability --per-question` file (each packed memory's evidence:
[lexical, dense_z, entity, sources]) and prints, per dataset:

- the area under the ROC curve of per-question features (answerable questions with their
  evidence packed against questions asked in another haystack and `_abs` questions): the
  chance that an answerable question scores above an unanswerable one. A gate built on a
  feature meets over-abstention ≤ .15 and unsafe acceptance ≤ .05 only if it is near 1.
- a replay of the relevance floor under other ways of combining a memory's two signals. For the
  configured rule (`max`) it reproduced the bench's gate decisions on every file measured so
  far; it does not model which memories are load-bearing (the gate also asks that of a relevant
  memory), so another rule's figures are an approximation.

    bench/gate-replay.py answerability.pq.jsonl [--floors 0.4,0.5,0.6]
"""
import argparse
import json
import sys

Z_NONE, Z_FULL, ENTITY_BONUS = 2.0, 7.0, 0.25  # mnemo_contract::relevance


def dense(z):
    return 0.0 if z is None else min(1.0, max(0.0, (z - Z_NONE) / (Z_FULL - Z_NONE)))


RULES = {
    "max": lambda l, d: max(l, d),  # the configured rule
    "noisy-or": lambda l, d: 1 - (1 - l) * (1 - d),
    "mean": lambda l, d: (l + d) / 2,
    "lexical": lambda l, d: l,
}


def absolute(e, rule):
    b = RULES[rule](e[0], dense(e[1]))
    return b + ENTITY_BONUS * (1 - b) if e[2] else b


def auc(pos, neg):
    s = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return s / (len(pos) * len(neg))


def blocked_otherwise(r):
    """The gate escalates for a reason besides the floor even at the lowest floor swept."""
    return not r["gate_act"][0] and not all("absolute relevance below" in x for x in r["gate_reasons"][0])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--floors", default="0.4,0.5,0.6")
    a = p.parse_args()
    rows = []
    with open(a.file) as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{a.file}:{n}: not JSON ({e})")
    datasets = sorted({r["dataset"] for r in rows})
    features = {
        "best absolute": lambda ev: max([absolute(e, "max") for e in ev] or [0]),
        "best lexical": lambda ev: max([e[0] for e in ev] or [0]),
        "best dense z": lambda ev: max([e[1] or 0 for e in ev] or [0]),
        "mean of top 3": lambda ev: sum(sorted([absolute(e, "max") for e in ev], reverse=True)[:3]) / 3,
    }
    print("| dataset | answerable | unanswerable | " + " | ".join(f"AUC {k}" for k in features) + " |")
    print("|---|---|---|" + "---|" * len(features))
    for ds in datasets:
        pos = [r for r in rows if r["dataset"] == ds and r["set"] == "answerable"]
        neg = [r for r in rows if r["dataset"] == ds and r["set"] in ("cross", "abstention")]
        cells = [f"{auc([f(r['packed_evidence']) for r in pos], [f(r['packed_evidence']) for r in neg]):.3f}"
                 for f in features.values()]
        print(f"| {ds} | {len(pos)} | {len(neg)} | " + " | ".join(cells) + " |")
    print()
    print("| rule | floor | dataset | over-abstention | unsafe: other haystack | unsafe: _abs |")
    print("|---|---|---|---|---|---|")
    for rule in RULES:
        for floor in (float(x) for x in a.floors.split(",")):
            for ds in datasets:
                counts = {}
                for r in rows:
                    if r["dataset"] != ds:
                        continue
                    best = max([absolute(e, rule) for e in r["packed_evidence"]] or [0])
                    act = not blocked_otherwise(r) and best >= floor
                    k = counts.setdefault(r["set"], [0, 0])
                    k[0] += act
                    k[1] += 1
                cell = lambda s, bad: (f"{(c[0] if bad else c[1] - c[0]) / c[1]:.3f} ({c[0] if bad else c[1] - c[0]}/{c[1]})"
                                       if (c := counts.get(s)) else "–")
                print(f"| {rule} | {floor:.2f} | {ds} | {cell('answerable', False)} | {cell('cross', True)} | {cell('abstention', True)} |")


if __name__ == "__main__":
    main()
