#!/usr/bin/env python3
"""How well can the gate's relevance evidence tell answerable questions from unanswerable ones?

Reads a `mnemo bench answerability --per-question` file (each packed memory's evidence:
[lexical, dense_z, entity, sources, text]) and prints, per dataset:

- the area under the ROC curve of per-question features (answerable questions with their
  evidence packed against questions asked in another haystack and `_abs` questions): the
  chance that an answerable question scores above an unanswerable one. A gate built on a
  feature meets over-abstention ≤ .15 and unsafe acceptance ≤ .05 only if it is near 1.
- a replay of the relevance floor under other ways of combining a memory's two signals. For the
  configured rule (`max`) it reproduced the bench's gate decisions on every file measured so
  far; it does not model which memories are load-bearing (the gate also asks that of a relevant
  memory), so another rule's figures are an approximation.
- with `--ceiling`, the best any rule of a family could do: every threshold pair (lexical
  coverage ≥ a, and/or dense z ≥ b, over all packed memories or only those not said by the
  assistant) is tried, and the lowest unsafe acceptance (other haystack) among the rules with
  over-abstention ≤ .15 is printed per dataset. The rule is chosen on the very questions it is
  scored on, so the figure is optimistic: if even it misses ≤ .05, no threshold on this
  evidence meets the target.

    bench/gate-replay.py answerability.pq.jsonl [--floors 0.4,0.5,0.6] [--ceiling]
"""
import argparse
import itertools

from bench_jsonl import read  # bench/bench_jsonl.py, beside this file

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
    p.add_argument("--ceiling", action="store_true", help="search the rule family for its best (under a second)")
    a = p.parse_args()
    rows = read(a.file)
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
    if a.ceiling:
        print()
        ceiling(rows, datasets)


def ceiling(rows, datasets):
    """The lowest other-haystack acceptance any rule of the family reaches at over-abstention ≤ .15."""
    print("| dataset | lowest unsafe: other haystack | its over-abstention | rule |")
    print("|---|---|---|---|")
    rules = list(itertools.product((i / 20 for i in range(21)), (0, 1, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 7),
                                   (False, True), ("and", "or")))
    for ds in datasets:
        sel = [r for r in rows if r["dataset"] == ds and r["set"] in ("answerable", "cross")]
        pos = sum(r["set"] == "answerable" for r in sel)
        neg = len(sel) - pos
        if not pos or not neg:
            print(f"| {ds} | – | – | needs answerable and other-haystack questions |")
            continue
        # A question the gate escalates for another reason stays escalated under every rule.
        open_ = [r for r in sel if not blocked_otherwise(r)]
        best = None
        for a_, b, said_only, mode in rules:
            def hit(e):
                lex, z = e[0] >= a_, (e[1] or 0) >= b
                said = not said_only or any(s != "assistant" for s in e[3])
                return said and (lex and z if mode == "and" else lex or z)
            acts = {"answerable": 0, "cross": 0}
            for r in open_:
                acts[r["set"]] += any(hit(e) for e in r["packed_evidence"])
            over, cross = 1 - acts["answerable"] / pos, acts["cross"] / neg
            if over <= 0.15 and (best is None or cross < best[0]):
                who = "user-said memories" if said_only else "all memories"
                best = (cross, over, f"lexical ≥ {a_:.2f} {mode} dense z ≥ {b}, {who}")
        if best:
            print(f"| {ds} | {best[0]:.3f} (of {neg}) | {best[1]:.3f} (of {pos}) | {best[2]} |")
        else:
            print(f"| {ds} | – | – | no rule keeps over-abstention ≤ .15 |")


if __name__ == "__main__":
    main()
