"""The native module `mnemo._native` on its own: the engine in-process, its JSON, its errors
and its threads. Run against a `maturin develop` build:

    python -m venv .venv && . .venv/bin/activate
    pip install 'maturin==1.16.*' pytest
    maturin develop -m crates/mnemo-python/Cargo.toml
    pytest crates/mnemo-python/tests/test_native.py
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from mnemo import _native as n

OWNER = "Northwind Labs | owner"


@pytest.fixture
def engine(tmp_path):
    e = n.Engine(str(tmp_path / "data"))
    yield e
    e.close()


def test_a_newer_value_supersedes_and_recall_acts_on_it(engine):
    assert "fake" in engine.model and engine.namespace == "default"
    first = json.loads(engine.remember("[SEM] Northwind Labs | owner | Ben"))
    assert first["status"] == "extracted" and first["outcomes"][0]["kind"] == "inserted"
    ben = first["outcomes"][0]["memory"]
    second = json.loads(engine.remember("[SEM] Northwind Labs | owner | Carla"))
    assert second["outcomes"][0]["kind"] == "superseded" and second["outcomes"][0]["tombstoned"] == [ben]

    r = json.loads(engine.recall("who owns Northwind Labs", about=OWNER))
    assert r["decision"]["decision"] == "act", r
    assert any("Carla" in m["content"] for m in r["memories"]), r
    assert not any("Ben" in m["content"] for m in r["memories"]), r

    page = json.loads(engine.list(include_tombstoned=True))
    assert page["next_after"] is None
    by_id = {m["id"]: m for m in page["memories"]}
    assert by_id[ben]["status"] == "tombstoned", by_id[ben]
    assert [m["id"] for m in json.loads(engine.list())["memories"]] == [second["outcomes"][0]["memory"]]

    why = json.loads(engine.why(ben))["why"]
    assert "superseded" in json.dumps(why["events"]), why
    assert why["superseded_by"]["content"] == "Northwind Labs | owner | Carla"
    # The same memory by its number, and the full answer of a recall.
    assert json.loads(engine.why(int(ben[1:])))["why"]["memory"]["id"] == ben
    full = json.loads(engine.recall("who owns Northwind Labs", about=OWNER, detail="full"))
    assert set(full) == {"pack", "assessment", "verdict", "action"} and full["action"].startswith("ACT")
    lines = engine.export(include_tombstoned=True).splitlines()
    assert len(lines) == 2 and all(json.loads(line)["id"] for line in lines)


def test_messages_are_turns_in_order_each_at_its_time(engine):
    messages = [
        {"role": "user", "content": "[SEM] Acme | city | Oslo", "timestamp": "2026-05-01T09:00:00Z"},
        {"role": "assistant", "content": "[EPI] Noted that Acme is in Oslo", "timestamp": "2026-05-01T09:00:05Z"},
    ]
    reports = json.loads(engine.remember_messages(messages, idempotency_key="conv-1"))
    assert [r["status"] for r in reports] == ["extracted", "extracted"]
    at = [r["turn"]["at"] for r in reports]
    assert at[1] - at[0] == 5000, at
    assert reports[1]["turn"]["source"] == "user" and any("not declared" in x for x in reports[1]["notes"])
    again = json.loads(engine.remember_messages(messages, idempotency_key="conv-1"))
    assert [r["status"] for r in again] == ["already_recorded", "already_recorded"]
    # A stated time for one turn; more than the configured skew (5 minutes) ahead of the clock is refused.
    r = json.loads(engine.remember("[SEM] Acme | city | Bergen", at="2026-05-02"))
    assert r["turn"]["at"] - at[0] == 15 * 3600 * 1000
    with pytest.raises(n.InvalidInputError, match="ahead of the clock"):
        engine.remember("[SEM] Acme | city | Paris", at="2999-01-01")
    with pytest.raises(n.InvalidInputError, match="message 1: content must not be empty"):
        engine.remember_messages([messages[0], {"role": "user", "content": " "}])
    with pytest.raises(n.InvalidInputError, match="message 0 has no role"):
        engine.remember_messages([{"content": "x"}])


def test_each_error_kind_is_its_exception(engine, tmp_path, monkeypatch):
    with pytest.raises(n.InvalidInputError, match='mode "bad"') as bad:
        engine.recall("x", mode="bad")
    assert isinstance(bad.value, ValueError) and isinstance(bad.value, n.MnemoError)
    for call in (
        lambda: engine.recall("x", about="no bar here"),
        lambda: engine.recall("x", budget=-1),
        lambda: engine.recall("x", detail="everything"),
        lambda: engine.why("not-an-id"),
        lambda: engine.why("t1"),
        lambda: engine.list(limit=0),
        lambda: engine.remember("   "),
        lambda: engine.forget("two\nlines"),
        lambda: engine.answer("x9", "Carla"),
    ):
        with pytest.raises(n.InvalidInputError):
            call()
    with pytest.raises(n.NotFoundError, match="m999") as missing:
        engine.why("m999")
    assert isinstance(missing.value, LookupError)

    engine.remember("[SEM] Acme | owner | Ben", idempotency_key="k1")
    with pytest.raises(n.ConflictError, match="idempotency key"):
        engine.remember("[SEM] Acme | owner | Dana", idempotency_key="k1")

    # Nothing asserts who approves: the recall escalates, a human answers once.
    r = json.loads(engine.recall("who approves orders for Acme", about="Acme | approver"))
    assert r["decision"]["decision"] == "escalate", r
    (esc,) = json.loads(engine.escalations())["escalations"]
    done = json.loads(engine.answer(esc["id"], "Dana"))
    assert done["escalation"]["status"] == "answered"
    assert json.loads(engine.escalations())["escalations"] == []
    with pytest.raises(n.ConflictError):
        engine.dismiss(esc["id"])

    # A second writer on the same directory: busy at once with no wait allowed.
    monkeypatch.setenv("MNEMO_LOCK_TIMEOUT_SECS", "0")
    started = time.monotonic()
    with pytest.raises(n.BusyError, match="lock"):
        n.Engine(engine.data_dir)
    assert time.monotonic() - started < 5
    # A reader beside it reads, and refuses to write.
    reader = n.Engine(engine.data_dir, read_only=True)
    assert json.loads(reader.list())["memories"]
    with pytest.raises(n.ReadOnlyError):
        reader.remember("[SEM] Acme | owner | Eve")
    reader.close()

    with pytest.raises(n.ConfigError):
        n.Engine(str(tmp_path / "other"), config=[str(tmp_path / "missing.toml")])

    engine.close()
    assert engine.closed
    with pytest.raises(n.MnemoError, match="closed"):
        engine.recall("x")
    engine.close()  # closing again does nothing
    # The lock is released: the directory opens again.
    n.Engine(engine.data_dir).close()


def test_calls_release_the_gil(engine):
    for i in range(20):
        engine.remember(f"[SEM] Part {i} | bin | B-{i}")

    # Two threads, 50 recalls each, on one Engine.
    errors: list[BaseException] = []

    def recalls() -> None:
        try:
            for i in range(50):
                json.loads(engine.recall(f"which bin holds Part {i % 20}"))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=recalls) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and not any(t.is_alive() for t in threads), errors

    # A pure-Python thread counts while one long native call runs.
    count = 0
    stop = threading.Event()

    def counter() -> None:
        nonlocal count
        while not stop.is_set():
            count += 1

    c = threading.Thread(target=counter)
    c.start()
    time.sleep(0.05)
    before = count
    times = engine._time_recall("which bin holds Part 3", 100)
    during = count - before
    stop.set()
    c.join()
    assert len(times) == 100 and all(t > 0 for t in times)
    assert during > 10_000, f"the counter advanced {during} times during {sum(times):.3f} s of native work"


def test_erase_removes_a_value_for_good_and_why_says_erased(engine):
    engine.remember("[SEM] Ben | phone | +1 555 0100\n[SEM] Ann | drink | tea")
    preview = json.loads(engine.erase("Ben | phone", reason="GDPR request 7", dry_run=True))
    assert preview["report"]["memories"][0]["content"] == "Ben | phone | +1 555 0100", preview
    done = json.loads(engine.erase("Ben | phone", reason="GDPR request 7"))
    assert done["report"]["erasure"]["reason"] == "GDPR request 7" and "555 0100" not in json.dumps(done), done
    why = json.loads(engine.why("m1"))
    assert "ERASED at" in why["text"] and "555 0100" not in json.dumps(why), why
    with pytest.raises(Exception, match="m9"):
        engine.erase("m9", reason="x")
