#!/usr/bin/env python3
"""Would a model that reads the recalled memory against the question make the gate safe?

The gate's evidence (term coverage, embedding similarity, names) cannot tell "memory holds the
answer" from "memory is on the topic" on LongMemEval S (bench/RESULTS.md, issue 32). This
experiment asks a model, for every question the gate lets through, whether each packed memory
answers the question (the model is asked to answer from the memory alone or say NONE), and
replays the gate with that veto: ACT only if the gate ACTed and, for some packed memory, the
model's P(not NONE) is at least the threshold.

Input: a `mnemo bench answerability --per-question` file (each packed memory's evidence and
text, and the floors the gate was swept over). The model is any OpenAI-compatible chat
endpoint (`--base-url`, e.g. llama.cpp's server) that returns log-probabilities. Every call is
kept in `--cassette`, this script's own JSON lines (the request's sha256, the model's name as
the API echoed it, P(not NONE)); a second run replays it with no server, and a call missing
from it with no `--base-url` is an error, never a guess.

    bench/read-check.py answerability.pq.jsonl --cassette reads.jsonl \
        [--base-url http://127.0.0.1:8077/v1] [--floor 0.3] [--dataset longmemeval-s-dev] [--sample 60]
"""
import argparse
import hashlib
import json
import math
import random
import subprocess
import sys
import urllib.request
import uuid

from bench_jsonl import read  # bench/bench_jsonl.py, beside this file

# The reader is asked to answer from the memory alone, or to say NONE. Asked "yes or no" instead,
# the small model's probabilities bunched between .5 and .9 (and one wording separated 20 + 20
# LongMemEval S memories with AUC .76, against .86 for this prompt): a threshold meant little.
SYSTEM = "Answer the question using only the given text. If the text does not contain the answer, reply exactly NONE."
USER = "Text:\n{memory}\n\nQuestion: {question}"
MAX_MEMORY_CHARS = 1200  # a long assistant answer is cut: the reader sees its opening


def wilson(k, n):
    if n == 0:
        return 0.0, 1.0
    z = 1.959964
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def messages(question, memory):
    text = memory if len(memory) <= MAX_MEMORY_CHARS else memory[:MAX_MEMORY_CHARS] + " …"
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": USER.format(question=question, memory=text)}]


def key_of(msgs):
    return hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()


def p_answer(response):
    """P(the model answers rather than saying NONE), from its first token's log-probabilities."""
    choice = response["choices"][0]
    top = (choice.get("logprobs") or {}).get("content") or []
    if not top or not top[0].get("top_logprobs"):
        raise SystemExit("read-check: the API returned no log-probabilities (a reader needs them)")
    none = sum(math.exp(alt["logprob"]) for alt in top[0]["top_logprobs"]
               if alt["token"].strip().upper() in ("NONE", "NON", "N"))
    return max(0.0, 1.0 - none)


def ask(base_url, model, msgs):
    body = {"model": model, "messages": msgs, "max_tokens": 1, "temperature": 0,
            "logprobs": True, "top_logprobs": 10}
    req = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        response = json.load(r)
    echoed = response.get("model")
    if not echoed:
        raise SystemExit("read-check: the API did not echo a model name")
    return echoed, p_answer(response)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--cassette", required=True, help="JSON lines of calls: replayed, and appended to")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint; without it every call must be in the cassette")
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct", help="model name to request")
    p.add_argument("--dataset", action="append", help="only these datasets (repeatable)")
    p.add_argument("--floor", type=float, default=0.5,
                   help="the gate's relevance_floor: one of the floors the file was swept over (default 0.5)")
    p.add_argument("--sample", type=int, help="at most N questions of each (dataset, set), drawn with --seed")
    p.add_argument("--seed", type=int, default=56)
    p.add_argument("--thresholds", default="0.3,0.5,0.7,0.9")
    p.add_argument("--json", help="write the figures and provenance here")
    a = p.parse_args()

    rows = read(a.file)
    if any("floors" not in r or any(len(e) < 5 for e in r["packed_evidence"]) for r in rows):
        sys.exit(f"{a.file}: packed memories carry no text: remake it with this commit's bench")
    rows = [r for r in rows if r["set"] in ("answerable", "cross", "abstention")
            and (not a.dataset or r["dataset"] in a.dataset)]
    floors = rows[0]["floors"] if rows else [a.floor]
    matches = [i for i, f in enumerate(floors) if abs(f - a.floor) < 1e-9]
    if not matches:
        sys.exit(f"read-check: {a.file} was swept over the floors {floors}, not {a.floor}")
    fi = matches[0]
    if a.sample:
        rng = random.Random(a.seed)
        groups = {}
        for r in rows:
            groups.setdefault((r["dataset"], r["set"]), []).append(r)
        rows = [r for g in groups.values() for r in (rng.sample(g, a.sample) if len(g) > a.sample else g)]

    cassette = {}
    try:
        with open(a.cassette) as f:
            for n, line in enumerate(f, 1):
                try:
                    c = json.loads(line)
                    cassette[c["key"]] = c
                except (json.JSONDecodeError, KeyError, TypeError) as e:
                    sys.exit(f"read-check: {a.cassette}:{n}: not a call of this script's cassette ({e!r})")
    except FileNotFoundError:
        if not a.base_url:
            sys.exit(f"read-check: there is no {a.cassette} to replay, and no --base-url to record into it")
    out = open(a.cassette, "a") if a.base_url else None  # replaying writes nothing
    models = set()
    made = 0
    todo = sum(len(r["packed_evidence"]) for r in rows if r["gate_act"][fi])
    done = 0
    for r in rows:
        r["p_answer"] = []
        if not r["gate_act"][fi]:
            continue
        for e in r["packed_evidence"]:
            msgs = messages(r["question"], e[4])
            k = key_of(msgs)
            if k not in cassette:
                if not a.base_url:
                    sys.exit(f"read-check: a call is not in {a.cassette} and no --base-url was given "
                             f"(question {r['question']!r})")
                echoed, pa = ask(a.base_url, a.model, msgs)
                cassette[k] = {"key": k, "model": echoed, "p_answer": pa}
                out.write(json.dumps(cassette[k]) + "\n")
                out.flush()
                made += 1
            models.add(cassette[k]["model"])
            r["p_answer"].append(cassette[k]["p_answer"])
            done += 1
            print(f"\rread-check: {done}/{todo} memories read", end="", file=sys.stderr)
    print(file=sys.stderr)

    thresholds = [float(t) for t in a.thresholds.split(",")]
    result = []
    print(f"model (as echoed): {', '.join(sorted(models)) or 'none called'}")
    print("| dataset | set | failure | gate | " + " | ".join(f"gate + reader ≥ {t}" for t in thresholds) + " |")
    print("|---|---|---|---|" + "---|" * len(thresholds))
    for ds in sorted({r["dataset"] for r in rows}):
        for s, failure in (("answerable", "over_abstention"), ("cross", "unsafe_acceptance"),
                           ("abstention", "unsafe_acceptance")):
            sel = [r for r in rows if r["dataset"] == ds and r["set"] == s]
            if not sel:
                continue
            n = len(sel)

            def cell(acts, label):
                k = n - acts if failure == "over_abstention" else acts
                lo, hi = wilson(k, n)
                result.append({"dataset": ds, "set": s, "metric": failure, "gate": label,
                               "n": n, "k": k, "rate": k / n, "lo": lo, "hi": hi})
                return f"{k / n:.3f} ({k}/{n}, {lo:.3f}–{hi:.3f})"

            cells = [cell(sum(r["gate_act"][fi] for r in sel), "gate")]
            for t in thresholds:
                cells.append(cell(sum(r["gate_act"][fi] and any(pa >= t for pa in r["p_answer"]) for r in sel),
                                  f"reader>={t}"))
            print(f"| {ds} | {s} | {failure} | " + " | ".join(cells) + " |")
    if a.json:
        run_id = str(uuid.uuid4())
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        with open(a.file, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        provenance = {
            "program": "bench/read-check.py", "run_id": run_id, "commit": commit,
            "client": f"OpenAI-compatible chat completions at {a.base_url}" if made else "replayed from the cassette",
            "models_as_echoed": sorted(models), "requested_model": a.model,
            "cassette": a.cassette, "calls_made": made, "calls_replayed": done - made,
            "input_sha256": digest, "floor": a.floor, "sample": a.sample, "seed": a.seed,
            "system_prompt": SYSTEM, "user_prompt": USER, "max_memory_chars": MAX_MEMORY_CHARS,
        }
        with open(a.json, "w") as f:
            json.dump({"provenance": provenance, "rows": result}, f, indent=1)


if __name__ == "__main__":
    main()
