#!/usr/bin/env python3
"""Two `mnemo bench longmemeval` result files side by side, per question type: the Markdown
table bench/RESULTS.md shows, generated from the files (never typed by hand).

    bench/compare-longmemeval.py BEFORE.json AFTER.json [--method hybrid] [--labels before,after]

Columns: n, the questions with sessions dated after their question, then S-any@5, R@10 and
ER@2048 / ER@4096 as "before / after". A row's n is the AFTER file's; a metric missing from
either file is shown as "–".
"""
import argparse
import json
import sys

TYPES = [
    "all",
    "knowledge-update",
    "temporal-reasoning",
    "multi-session",
    "single-session-assistant",
    "single-session-preference",
    "single-session-user",
    "abstention",
]


def rows(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = {}
    for r in data["rows"]:
        out[(r["method"], r["metric"], r.get("k"), r.get("budget"), r["question_type"])] = r
    return data.get("provenance", {}), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--method", default="hybrid", help="bm25 | dense | hybrid (default) | hybrid_recall")
    ap.add_argument("--labels", default="before,after", help="the two column labels, comma-separated")
    a = ap.parse_args()
    labels = a.labels.split(",")
    if len(labels) != 2:
        sys.exit(f"--labels needs two labels separated by a comma, got {a.labels!r}")
    (pb, before), (pa, after) = rows(a.before), rows(a.after)

    def value(table, metric, qt, k=None, budget=None):
        r = table.get((a.method, metric, k, budget, qt))
        return None if r is None else r["value"]

    def count(table, metric, qt):
        r = table.get(("all", metric, None, None, qt))
        return None if r is None else int(r["value"])

    def pair(metric, qt, k=None, budget=None):
        b, f = value(before, metric, qt, k, budget), value(after, metric, qt, k, budget)
        show = lambda v: "–" if v is None else f"{v:.3f}"
        return f"{show(b)} / {show(f)}"

    first, second = labels
    print(
        f"| question type | n | with sessions after the question | S-any@5 {first} / {second} | "
        f"R@10 {first} / {second} | ER@2048 {first} / {second} | ER@4096 {first} / {second} |"
    )
    print("|---|---|---|---|---|---|---|")
    for qt in TYPES:
        n = count(after, "questions", qt)
        if n is None:
            continue
        later = count(after, "questions_with_sessions_after_question_date", qt)
        print(
            f"| {qt} | {n} | {'–' if later is None else later} | {pair('session_recall_any_at_k', qt, k=5)} | "
            f"{pair('turn_recall_at_k', qt, k=10)} | {pair('evidence_recall', qt, budget=2048)} | "
            f"{pair('evidence_recall', qt, budget=4096)} |"
        )
    print()
    for label, p, path in ((first, pb, a.before), (second, pa, a.after)):
        print(f"- {label}: `{path}`, commit {p.get('git_commit', '?')[:7]}, run {p.get('run_id', '?')}, "
              f"embedder {p.get('embedder', '?')}, command `{p.get('command', '?')}`")


if __name__ == "__main__":
    main()
