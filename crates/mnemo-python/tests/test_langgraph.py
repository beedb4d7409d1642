"""The LangGraph store: BaseStore's operations over Mnemo, and a graph that uses it."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError

import mnemo
from mnemo import Client, Memory, UnsupportedError
from mnemo.langgraph import MnemoStore


@pytest.fixture
def mem(tmp_path):
    with Memory(tmp_path / "d") as m:
        yield m


@pytest.fixture
def store(mem):
    return MnemoStore(mem)


def test_put_get_update_delete(store, mem):
    ns = ("users", "u1")
    assert store.get(ns, "prefs") is None
    store.put(ns, "prefs", {"theme": "dark", "note": "likes  two  spaces | and pipes"})
    first = store.get(ns, "prefs")
    assert first.value == {"theme": "dark", "note": "likes  two  spaces | and pipes"}
    assert first.namespace == ns and first.key == "prefs"
    store.put(ns, "prefs", {"theme": "light"})
    second = store.get(ns, "prefs")
    assert second.value == {"theme": "light"}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    # The old value is history in memory, not gone.
    old = [r for r in mem.list(all=True, namespace="users.u1") if not r.active]
    assert len(old) == 1 and "superseded" in old[0].reason
    store.delete(ns, "prefs")
    assert store.get(ns, "prefs") is None


def test_keys_are_exact(store):
    ns = ("users", "u1")
    store.put(ns, "a", {"n": 1})
    store.put(ns, "b", {"n": 2})
    assert store.get(ns, "a").value == {"n": 1} and store.get(ns, "b").value == {"n": 2}
    with pytest.raises(ValueError, match="case"):
        store.put(ns, "A", {"n": 3})
    with pytest.raises(ValueError):
        store.put(ns, "x|y", {"n": 3})


def test_delete_takes_only_the_exact_key(store):
    ns = ("users", "u1")
    store.put(ns, "pref", {"n": 1})
    store.delete(ns, "PREF")  # another key: memory would match it without case
    assert store.get(ns, "pref").value == {"n": 1}
    store.delete(ns, "pref")
    assert store.get(ns, "pref") is None


def test_search_sees_every_item_not_one_budget(store, mem):
    ns = ("cats",)
    for i in range(60):
        store.put(ns, f"cat-{i}", {"about": f"cats and their habits number {i}", "i": i})
    hits = store.search(ns, query="cats habits", limit=100)
    assert len(hits) == 60 and len({h.key for h in hits}) == 60
    assert all(h.score is not None for h in hits[:10])
    assert [h.key for h in store.search(ns, query="cats habits", limit=5, offset=55)] == [h.key for h in hits[55:]]
    assert [h.value["i"] for h in store.search(ns, filter={"i": {"$gte": 58}}, limit=100)] == [59, 58]
    assert store.search(ns, filter={"i": {"$gt": "a"}}) == []  # unordered across types: no match, no error


def test_nested_filters_match_a_subset(store):
    store.put(("docs",), "a", {"meta": {"lang": "en", "year": 2024}})
    store.put(("docs",), "b", {"meta": {"lang": "fr", "year": 2024}})
    assert [h.key for h in store.search(("docs",), filter={"meta": {"lang": "en"}})] == ["a"]


def test_a_value_memory_did_not_store_as_given_is_an_error(mem):
    class Garbling:
        """A door whose model rewrites values (as a careless live model might)."""

        namespace = mem.namespace

        def __getattr__(self, name):
            return getattr(mem, name)

        def remember(self, text, **kw):
            return mem.remember(text.replace('"dark"', '"light"'), **kw)

    with pytest.raises(mnemo.MnemoError, match="did not store item 'prefs' as given"):
        MnemoStore(Garbling()).put(("users", "u1"), "prefs", {"theme": "dark"})


def test_search_by_query_filter_and_prefix(store):
    store.put(("users", "u1"), "food", {"likes": "ramen noodles", "spicy": True, "n": 3})
    store.put(("users", "u1"), "sport", {"likes": "climbing", "spicy": False, "n": 1})
    store.put(("users", "u2"), "food", {"likes": "sushi", "spicy": False, "n": 2})
    hits = store.search(("users", "u1"), query="ramen")
    assert [h.key for h in hits] == ["food", "sport"] and hits[0].score == 1.0
    below = store.search(("users",))
    assert {(h.namespace, h.key) for h in below} == {(("users", "u1"), "food"), (("users", "u1"), "sport"), (("users", "u2"), "food")}
    assert {h.key for h in store.search(("users",), filter={"spicy": False})} == {"sport", "food"}
    assert [h.value["likes"] for h in store.search(("users",), filter={"n": {"$gte": 3}})] == ["ramen noodles"]
    assert len(store.search(("users",), limit=2)) == 2


def test_list_namespaces(store):
    store.put(("users", "u1"), "k", {"v": 1})
    store.put(("users", "u2"), "k", {"v": 1})
    store.put(("docs", "d1"), "k", {"v": 1})
    assert store.list_namespaces(prefix=("users",)) == [("users", "u1"), ("users", "u2")]
    assert store.list_namespaces(suffix=("d1",)) == [("docs", "d1")]
    assert ("users",) in store.list_namespaces(max_depth=1)


def test_invalid_namespaces(store):
    with pytest.raises(InvalidNamespaceError):
        store.put(("bad label!",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})


def test_async_operations(store):
    async def main():
        await store.aput(("users", "u1"), "k", {"v": 1})
        assert (await store.aget(("users", "u1"), "k")).value == {"v": 1}
        assert [h.key for h in await store.asearch(("users", "u1"))] == ["k"]

    asyncio.run(main())


def test_over_http(server):
    store = MnemoStore(Client(server.url, server.token))
    store.put(("users", "u1"), "prefs", {"theme": "dark"})
    assert store.get(("users", "u1"), "prefs").value == {"theme": "dark"}
    assert [h.key for h in store.search(("users", "u1"), query="theme dark")] == ["prefs"]
    with pytest.raises(UnsupportedError):
        store.list_namespaces()
    with pytest.raises(UnsupportedError):
        store.search(())
    declared = MnemoStore(Client(server.url, server.token), namespaces=["users.u1", "users.u2"])
    declared.put(("users", "u2"), "prefs", {"theme": "light"})
    assert declared.list_namespaces(prefix=("users",)) == [("users", "u1"), ("users", "u2")]
    assert {h.value["theme"] for h in declared.search(("users",))} == {"dark", "light"}


class State(TypedDict):
    user: str
    message: str
    log: Annotated[list[str], operator.add]


def test_a_graph_uses_the_store(store):
    """A two-node LangGraph graph: one node saves what the user prefers, the next reads it back
    through the store LangGraph hands it."""

    def save(state: State, *, store: BaseStore):
        store.put(("users", state["user"]), "preference", {"text": state["message"]})
        return {"log": ["saved"]}

    def answer(state: State, *, store: BaseStore):
        item = store.get(("users", state["user"]), "preference")
        found = store.search(("users", state["user"]), query="window seat")
        return {"log": [f"you prefer: {item.value['text']}", f"found {len(found)}"]}

    g = StateGraph(State)
    g.add_node("save", save)
    g.add_node("answer", answer)
    g.add_edge(START, "save")
    g.add_edge("save", "answer")
    g.add_edge("answer", END)
    app = g.compile(store=store)
    out = app.invoke({"user": "u1", "message": "a window seat on long flights", "log": []})
    assert out["log"] == ["saved", "you prefer: a window seat on long flights", "found 1"]
