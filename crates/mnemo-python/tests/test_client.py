"""The HTTP client: the same quick start with only the constructor changed, the same errors."""

from __future__ import annotations

import pytest

from mnemo import Client, ConnectionFailedError, InvalidInputError, NotFoundError, UnauthorizedError
from quickstart import quickstart


def test_quickstart_against_the_server(server):
    why = quickstart(Client(server.url, token=server.token, namespace="me"))
    assert "TOMBSTONED" in why and "superseded" in why and "Carla" in why


def test_same_answers_as_in_process(server, tmp_path):
    from mnemo import Memory

    c = Client(server.url, token=server.token, namespace="me")
    with Memory(tmp_path / "local", namespace="me") as m:
        for door in (c, m):
            door.remember("[SEM] Northwind Labs | owner | Ben")
            door.remember("[SEM] Northwind Labs | owner | Carla")
        a = c.recall("who owns Northwind Labs", about="Northwind Labs | owner")
        b = m.recall("who owns Northwind Labs", about="Northwind Labs | owner")
        assert (a.decision, [x.value for x in a.act_on], [x.id for x in a.memories]) == (
            b.decision,
            [x.value for x in b.act_on],
            [x.id for x in b.memories],
        )
        assert [(x.id, x.status) for x in c.list(all=True)] == [(x.id, x.status) for x in m.list(all=True)]


def test_forget_dry_run_same_as_in_process(server, tmp_path):
    from mnemo import ForgetPreview, Memory

    c = Client(server.url, token=server.token, namespace="me")
    with Memory(tmp_path / "local", namespace="me") as m:
        answers = []
        for door in (c, m):
            door.remember("[SEM] Northwind Labs | owner | Ben\n[PROC] Order parts at https://northwind.example/orders")
            door.remember("[SEM pin] Ben | role | buyer")
            p = door.forget("Northwind", dry_run=True)
            assert isinstance(p, ForgetPreview)
            q = door.forget("Ben", dry_run=True)
            assert len(door.list()) == 3, "a dry run writes nothing"
            f = door.forget("Ben")
            answers.append(
                (
                    [(x.id, x.why) for x in p.forget],
                    [(x.id, x.why) for x in p.kept],
                    [(x.id, x.pinned) for x in q.kept],
                    str(p),
                    f.turn.id,
                    f.outcomes[0].tombstoned,
                )
            )
        assert answers[0] == answers[1]
        assert answers[0][0] == [("m1", "claim entity matches")]
        assert answers[0][1][0][1].startswith("only mentioned inside a web address")
        assert answers[0][2] == [("m3", True)] and answers[0][4:] == ("t3", ["m1"])


def test_errors_map_to_the_same_kinds(server):
    c = Client(server.url, token=server.token, namespace="me")
    with pytest.raises(NotFoundError):
        c.why("m999")
    with pytest.raises(InvalidInputError, match="mode"):
        c.recall("x", mode="telepathy")
    with pytest.raises(UnauthorizedError):
        Client(server.url, token="wrong", namespace="me").recall("x")
    with pytest.raises(UnauthorizedError):
        Client(server.url, token=server.token, namespace="not-mine").recall("x")
    with pytest.raises(ConnectionFailedError, match="127.0.0.1:9"):
        Client("http://127.0.0.1:9", token="x", timeout=2).recall("x")


def test_messages_and_timestamps(server):
    c = Client(server.url, token=server.token, namespace="me")
    rs = c.remember(
        [
            {"role": "user", "content": "[SEM] Northwind Labs | owner | Ben", "timestamp": "2026-01-05T09:00:00Z"},
            {"role": "user", "content": "[SEM] Northwind Labs | owner | Carla", "timestamp": "2026-01-06"},
        ]
    )
    assert [r.turn.at.isoformat() for r in rs] == ["2026-01-05T09:00:00+00:00", "2026-01-06T00:00:00+00:00"]


def test_messages_refused_before_the_first_post(server):
    c = Client(server.url, token=server.token, namespace="me")
    with pytest.raises(InvalidInputError, match="before message 0"):
        c.remember(
            [
                {"role": "user", "content": "[SEM] a | b | 1", "timestamp": "2026-01-06"},
                {"role": "user", "content": "[SEM] a | b | 2", "timestamp": "2026-01-05"},
            ]
        )
    assert c.list(all=True) == []


def test_turn_escalation_answer(server):
    c = Client(server.url, token=server.token, namespace="me")
    t = c.turn("what is the lead time of IC-MC-44", about="IC-MC-44 | lead time")
    assert t.decision == "escalate"
    e = c.escalations()[0]
    c.answer(e.id, "21 days")
    assert c.recall("lead time of IC-MC-44", about="IC-MC-44 | lead time").act_on[0].value == "21 days"
    assert c.health()["status"]


def test_as_of_and_history_same_as_in_process(server, tmp_path):
    from mnemo import History, Memory

    c = Client(server.url, token=server.token, namespace="other")
    with Memory(tmp_path / "local", namespace="other") as m:
        answers = []
        for door in (c, m):
            door.remember("[SEM] Acme | lead time | 21 days", timestamp="2026-01-01")
            door.remember("[SEM] Acme | lead time | 35 days", timestamp="2026-01-21")
            then = door.recall("Acme lead time", as_of="2026-01-11")
            h = door.history("Acme | lead time")
            assert isinstance(h, History)
            answers.append(
                (
                    [x.content for x in then.memories],
                    [(v.value, v.recorded_at, v.ended_at, v.superseded_by) for v in h.values],
                    str(h),
                )
            )
        assert answers[0] == answers[1]
        assert answers[0][0] == ["Acme | lead time | 21 days"]
        assert answers[0][1] == [
            ("21 days", "2026-01-01T00:00:00Z", "2026-01-21T00:00:00Z", "m2"),
            ("35 days", "2026-01-21T00:00:00Z", None, None),
        ]
        with pytest.raises(InvalidInputError, match="as_of"):
            c.recall("Acme", as_of="soon")
        with pytest.raises(InvalidInputError, match="as_of"):
            m.recall("Acme", as_of="soon")
        for door in (c, m):
            door.remember("[EPI] Shipped 5 crates to Acme", timestamp="2026-01-22")
            inside = door.recall("Acme crates shipped", raw=True, since="2026-01-22", until="2026-01-23")
            outside = door.recall("Acme crates shipped", raw=True, until="2026-01-22")
            assert "Shipped 5 crates to Acme" in [x.content for x in inside.memories]
            assert "Shipped 5 crates to Acme" not in [x.content for x in outside.memories]
            with pytest.raises(InvalidInputError, match="until"):
                door.recall("Acme", since="2026-01-22", until="2026-01-01")
        # World time: what was true in 2020 is the Lisbon of 2019 to 2021, replaced since.
        worlds = []
        for door in (c, m):
            door.remember("[SEM from=2019 to=2021] Ben | city | Lisbon", timestamp="2026-01-23")
            door.remember("[SEM from=2022] Ben | city | Porto", timestamp="2026-01-24")
            worlds.append(
                (
                    [x.content for x in door.recall("Ben city", raw=True, valid_at="2020-06-01").memories],
                    [x.content for x in door.recall("Ben city", raw=True, valid_at="2023-06-01").memories],
                    [(v.value, v.valid_from, v.valid_to) for v in door.history("Ben | city").values],
                )
            )
            with pytest.raises(InvalidInputError, match="valid_at"):
                door.recall("Ben", valid_at="later")
        assert worlds[0] == worlds[1]
        assert worlds[0][0] == ["Ben | city | Lisbon"] and worlds[0][1] == ["Ben | city | Porto"]
        assert worlds[0][2] == [("Lisbon", "2019-01-01", "2022-01-01"), ("Porto", "2022-01-01", None)]


def test_erase_same_as_in_process_and_needs_the_scope_over_http(server, tmp_path):
    from mnemo import Memory

    agent = Client(server.url, token=server.token, namespace="other")
    admin = Client(server.url, token=server.admin, namespace="other")
    with Memory(tmp_path / "local", namespace="other") as m:
        texts = []
        for door in (admin, m):
            door.remember("[SEM] Gus | phone | +1 555 0142")
            preview = door.erase("Gus | phone", reason="asked", dry_run=True)
            assert "555 0142" in preview["text"]
            done = door.erase("Gus | phone", reason="asked")
            assert "555 0142" not in done["text"]
            assert "555 0142" not in str(door.export(all=True))
            texts.append(done["text"].splitlines()[0])
        assert texts[0] == texts[1]
        with pytest.raises(InvalidInputError, match="reason"):
            m.erase("Gus | phone", reason=" ")
    with pytest.raises(UnauthorizedError, match="erase"):
        agent.erase("m1", reason="asked")
