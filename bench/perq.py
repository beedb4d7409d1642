"""Reading a `mnemo bench answerability --per-question` file (one JSON object a line), shared by
bench/gate-replay.py and bench/read-check.py."""
import json
import sys


def load(path):
    """Every line of `path` as an object; a line that is not JSON stops the program, naming it."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON ({e})")
    return rows
