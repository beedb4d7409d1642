#!/usr/bin/env python3
"""Whether two report files (`mnemo eval --json`, `eval-assessor --json`, any `{provenance, rows}`)
hold the same rows, provenance aside; names the first row that differs. Exit 1 when they differ.

    bench/same-rows.py bench/results/eval-house-base.json bench/results/eval-house-new.json
"""
import json
import sys


def rows(path):
    with open(path) as fh:
        doc = json.load(fh)
    return doc["provenance"].get("git_commit", "?")[:7], [json.dumps(r, sort_keys=True) for r in doc["rows"]]


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: same-rows.py A.json B.json")
    (ca, a), (cb, b) = rows(argv[0]), rows(argv[1])
    if a == b:
        print(f"identical: {len(a)} rows ({ca} and {cb})")
        return 0
    print(f"different: {len(a)} rows ({ca}) against {len(b)} ({cb})")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            print(f"first difference, row {i}:\n  {x}\n  {y}")
            break
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
