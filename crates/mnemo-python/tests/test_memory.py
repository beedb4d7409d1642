"""The embedded engine through the typed API: the quick start, every method, the errors."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import mnemo
from mnemo import ForgetPreview, InvalidInputError, Memory, NotFoundError
from quickstart import quickstart


@pytest.fixture
def m(tmp_path: Path):
    with Memory(tmp_path / "data", namespace="me") as mem:
        yield mem


def test_quickstart_in_process(m):
    why = quickstart(m)
    assert "TOMBSTONED" in why and "superseded" in why and "Carla" in why
    assert re.search(r"\d{4}-\d\d-\d\dT", why), why  # when


def test_readme_quick_start_runs_as_written(tmp_path, monkeypatch):
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    quick = [b for b in blocks if "from mnemo import Memory" in b]
    assert quick, "README.md has no Python quick start using `from mnemo import Memory`"
    monkeypatch.chdir(tmp_path)
    exec(compile(quick[0], "README.md", "exec"), {})


def test_recall_is_typed(m):
    m.remember("[SEM] Northwind Labs | owner | Carla")
    r = m.recall("who owns Northwind Labs", about=("Northwind Labs", "owner"))
    assert r.acts and r.decision == "act"
    assert [a.value for a in r.act_on] == ["Carla"]
    assert r.memories[0].id.startswith("m") and r.memories[0].content == "Northwind Labs | owner | Carla"
    assert 0.0 < r.trust <= 1.0 and r.tokens <= r.budget
    assert str(r) == r.text and r.text.startswith("Mnemo recall:")


def test_nothing_relevant_escalates(m):
    m.remember("[SEM] Northwind Labs | owner | Carla")
    r = m.recall("what is the weather on Mars")
    assert r.decision == "escalate" and r.reasons


def test_raw_recall_has_no_decision(m):
    m.remember("[SEM] Northwind Labs | owner | Carla")
    r = m.recall("Northwind Labs owner", raw=True)
    assert r.decision is None and r.memories


def test_remember_reports_what_changed(m):
    a = m.remember("[SEM] Northwind Labs | owner | Ben")
    b = m.remember("[SEM] Northwind Labs | owner | Carla")
    assert a.status == "extracted" and a.outcomes[0].kind == "inserted"
    assert b.outcomes[0].kind == "superseded" and b.outcomes[0].tombstoned == a.memories
    assert b.turn.id.startswith("t") and b.turn.source == "user"


def test_messages_are_turns_in_order_at_their_times(m):
    t0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
    rs = m.remember(
        [
            {"role": "user", "content": "[SEM] Northwind Labs | owner | Ben", "timestamp": t0},
            {"role": "user", "content": "[SEM] Northwind Labs | owner | Carla", "timestamp": t0 + timedelta(days=1)},
        ]
    )
    assert [r.turn.at for r in rs] == [t0, t0 + timedelta(days=1)]
    assert rs[1].outcomes[0].tombstoned == rs[0].memories


def test_a_naive_timestamp_is_refused(m):
    with pytest.raises(InvalidInputError, match="time zone"):
        m.remember("[SEM] a | b | c", timestamp=datetime(2026, 1, 5))


def test_list_pages_and_all(m):
    # More memories than one page of list() (100), so its page loop runs.
    m.remember("\n".join(f"[SEM] Part P-{i} | bin | B{i}" for i in range(130)))
    m.forget("Part P-3 | bin")
    active = m.list()
    everything = m.list(all=True)
    assert len(active) == 129 and len(everything) == 130
    assert len({x.id for x in everything}) == 130
    assert [x for x in everything if not x.active][0].reason
    page = m.page(limit=10)
    assert len(page.memories) == 10 and page.next_after == page.memories[-1].id
    assert m.list(limit=5, after=page.next_after)[0].id == m.page(after=page.next_after, limit=1).memories[0].id


def test_forget_and_why(m):
    m.remember("[SEM] Ben | phone | 555-0100")
    f = m.forget("Ben | phone")
    assert f.outcomes and f.outcomes[0].kind == "forgotten"
    why = m.why(f.outcomes[0].memory or f.outcomes[0].tombstoned[0])
    assert why.memory.status == "tombstoned" and "forget" in (why.memory.reason or "").lower()


def test_forget_dry_run_previews_and_writes_nothing(m):
    m.remember(
        "[SEM] Northwind Labs | owner | Ben\n[SEM] Northwind Labs | lead time | 21 days\n"
        "[PROC] Order parts at https://northwind.example/orders every Monday\n[SEM pin] Ben | role | buyer"
    )
    p = m.forget("Northwind", dry_run=True)
    assert isinstance(p, ForgetPreview)
    assert [(x.content, x.why) for x in p.forget] == [
        ("Northwind Labs | owner | Ben", "claim entity matches"),
        ("Northwind Labs | lead time | 21 days", "claim entity matches"),
    ]
    assert [x.why for x in p.kept] == ["only mentioned inside a web address: https://northwind.example/orders"]
    assert "nothing written" in str(p)
    p = m.forget("Ben", dry_run=True)
    assert p.ids == ["m1"] and p.kept[0].pinned and p.kept[0].why.startswith("pinned")
    assert len(m.forget("Ben", dry_run=True, include_pinned=True).forget) == 2
    assert len(m.list()) == 4, "a dry run writes nothing"
    f = m.forget("Ben")
    assert f.turn.id == "t2" and f.outcomes[0].tombstoned == ["m1"]
    assert any("pinned" in n for n in f.notes)
    assert "Ben | role | buyer" in [x.content for x in m.list()]


def test_export(m):
    m.remember("[SEM] Northwind Labs | owner | Ben")
    m.remember("[SEM] Northwind Labs | owner | Carla")
    assert len(m.export()) == 1 and len(m.export(all=True)) == 2


def test_errors_have_kinds(m):
    with pytest.raises(NotFoundError):
        m.why("m999")
    with pytest.raises(InvalidInputError, match="mode"):
        m.recall("x", mode="telepathy")
    with pytest.raises(InvalidInputError):
        m.why("t1")  # a turn id where a memory is asked for
    with pytest.raises(InvalidInputError):
        m.recall("x", budget=-1)
    with pytest.raises(ValueError):  # InvalidInputError is a ValueError
        m.remember("")
    assert issubclass(NotFoundError, LookupError) and issubclass(NotFoundError, mnemo.MnemoError)


def test_turn_plans_on_act(m):
    m.remember("[SEM] IC-MC-44 | lead time | 21 days")
    t = m.turn("what is the lead time of IC-MC-44", about="IC-MC-44 | lead time")
    assert t.remembered is not None and t.decision == "act"
    assert t.plan is not None and t.plan.faithful and "21 days" in t.plan.answer
    assert t.text.startswith("Remembered:")


def test_escalations_and_answer(m):
    t = m.turn("what is the lead time of IC-MC-44", about="IC-MC-44 | lead time")
    assert t.decision == "escalate" and t.recall.escalation and t.recall.escalation.id
    open_ = m.escalations()
    assert [e.id for e in open_] == [t.recall.escalation.id] and open_[0].status == "open"
    m.answer(open_[0].id, "21 days")
    assert m.escalations() == [] and m.escalations(all=True)[0].status == "answered"
    again = m.recall("what is the lead time of IC-MC-44", about="IC-MC-44 | lead time")
    assert again.decision == "act" and again.act_on[0].value == "21 days"


def test_namespaces(m):
    m.remember("[SEM] a | b | c")
    m.remember("[SEM] a | b | c", namespace="other")
    assert {"me", "other"} <= set(m.namespaces())
    assert m.list(namespace="other")[0].namespace == "other"


def test_closed_memory_refuses(tmp_path):
    mem = Memory(tmp_path / "d")
    mem.close()
    with pytest.raises(mnemo.MnemoError, match="closed"):
        mem.recall("anything")


def test_messages_are_checked_before_anything_is_written(m):
    bad = [
        {"role": "user", "content": "[SEM] a | b | 1", "timestamp": "2026-01-06"},
        {"role": "user", "content": "[SEM] a | b | 2", "timestamp": "2026-01-05"},
    ]
    with pytest.raises(InvalidInputError, match="before message 0"):
        m.remember(bad)
    with pytest.raises(InvalidInputError, match="role"):
        m.remember([{"role": "two words", "content": "x"}])
    assert m.list(all=True) == []


def test_a_memory_opened_before_fork_is_refused_in_the_child(m):
    import os

    m.remember("[SEM] a | b | c")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's engine must not be used
        try:
            m.recall("a")
            os.write(w, b"used")
        except mnemo.MnemoError as e:
            os.write(w, b"refused" if "os.fork" in str(e) else b"other")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(r, 16) == b"refused"
    assert m.recall("a b").memories  # the parent's engine still works


def test_a_reader_leaves_the_directory_to_a_writer(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_LOCK_TIMEOUT_SECS", "0")
    with Memory(tmp_path / "d", namespace="me") as w:
        w.remember("[SEM] Northwind Labs | owner | Ben")
    reader = Memory(tmp_path / "d", namespace="me", read_only=True)
    with pytest.raises(mnemo.ReadOnlyError):
        reader.remember("[SEM] a | b | c")
    with Memory(tmp_path / "d", namespace="me") as w:  # not refused as busy: the reader holds no lock
        w.remember("[SEM] Northwind Labs | owner | Carla")
    r = reader.recall("who owns Northwind Labs", about="Northwind Labs | owner")
    assert [a.value for a in r.act_on] == ["Carla"]
    reader.close()


def test_a_wrong_id_type_is_invalid_input(m):
    for bad in (1.5, [1], True):
        with pytest.raises(InvalidInputError, match="memory id"):
            m.why(bad)


def test_a_turn_carries_its_texts(m):
    m.remember("[SEM] IC-MC-44 | lead time | 21 days")
    t = m.turn("what is the lead time of IC-MC-44", about="IC-MC-44 | lead time")
    assert t.recall.text.startswith("Mnemo recall:") and t.recall.text.strip() in t.text
    assert t.text.startswith("Remembered: turn t2")
