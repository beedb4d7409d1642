"""Reading the JSON-lines files the benches write (`--per-question`, `--dump-candidates`), shared
by the scripts in bench/."""
import json
import sys


def read(path):
    """Every non-blank line of `path` as an object; a line that is not JSON stops the program,
    naming it."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON ({e})")
    return rows
