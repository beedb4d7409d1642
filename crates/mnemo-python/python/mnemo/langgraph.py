"""Mnemo as a LangGraph store (``langgraph.store.base.BaseStore``).

::

    from langgraph.graph import StateGraph
    from mnemo import Memory
    from mnemo.langgraph import MnemoStore

    store = MnemoStore(Memory("data"))
    graph = builder.compile(store=store)   # nodes get `store` and call put/get/search

How items map onto memory:

- A LangGraph namespace ``("users", "42")`` is the Mnemo namespace ``users.42`` (labels of
  letters, digits, ``_``, ``:`` and ``-``; LangGraph itself forbids ``.`` in a label).
- ``put(ns, key, value)`` remembers the fact ``key | langgraph item | <value as JSON>``: a second
  ``put`` of the same key supersedes the first, which is tombstoned with the reason and the
  time, never deleted — ``Memory.why`` shows an item's whole history. ``delete`` (``put`` of
  ``None``) forgets ``key | langgraph item`` precisely, and only that key.
- A ``put`` reads back what memory stored and raises :class:`mnemo.MnemoError` if it is not the
  value given (a live model extracts the line: it must keep the JSON as written).
- ``get`` reads the active memory of the key. ``search`` filters first (``filter`` matches
  values by equality, a nested dict as a subset, or ``$eq``, ``$ne``, ``$gt``, ``$gte``,
  ``$lt``, ``$lte``), then with a ``query`` ranks every matching item by Mnemo's recall (hybrid
  retrieval; ``score`` is 1 for the first hit down to 1/n for the last, a rank, not a
  similarity), items recall did not rank after them with ``score`` None; without a ``query``,
  newest first. ``offset`` and ``limit`` apply last.
- Keys compare exactly, but memory compares fact names without case or repeated spaces: a
  ``put`` of ``"Pref"`` while ``"pref"`` is stored is refused (ValueError) rather than
  replacing it. A key holds no ``|`` and no line break.
- ``list_namespaces`` and a ``search`` below a prefix need the store's list of namespaces:
  :class:`mnemo.Memory` has it; over HTTP (:class:`mnemo.Client`) there is no such list, so
  give the namespaces the token reaches (``MnemoStore(client, namespaces=["users.u1", …])``);
  without them a search covers exactly the namespace named, and ``list_namespaces`` raises
  :class:`mnemo.UnsupportedError`.
- TTLs are not supported (memory decays by salience instead); ``index`` is ignored (every
  memory is indexed).

``get``, ``put`` and ``search`` read the namespace's memories page by page, the superseded
versions of each item included: fine for the thousands of items (and versions) an agent keeps
per namespace, linear beyond. Putting the value an item already holds reinforces its memory:
``updated_at`` stays the time the value was first stored.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime, timezone
from typing import Any, Iterable, Optional

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ._api import Api
from .errors import MnemoError, UnsupportedError
from .types import MemoryRecord

ATTRIBUTE = "langgraph item"
# A recall asked for every item of a namespace: above the engine's largest budget, which clamps it.
EVERYTHING = 1_000_000
_LABEL = re.compile(r"^[A-Za-z0-9_:\-]+$")


def namespace_of(path: tuple[str, ...]) -> str:
    """The Mnemo namespace of a LangGraph namespace path."""
    if not path:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in path:
        if not isinstance(label, str) or not _LABEL.match(label):
            raise InvalidNamespaceError(
                f"namespace label {label!r} in {path}: a Mnemo namespace label is letters, digits, '_', ':' or '-'"
            )
    ns = ".".join(path)
    if len(ns) > 128:
        raise InvalidNamespaceError(f"namespace {path} is {len(ns)} characters joined; Mnemo takes at most 128")
    return ns


def path_of(ns: str) -> tuple[str, ...]:
    return tuple(ns.split("."))


def encode(value: dict[str, Any]) -> str:
    """A value as one run of JSON with no white space and no ``|`` (escaped as ``\\u0020`` and
    ``\\u007c`` inside strings), so memory's folding of white space cannot change it."""
    if not isinstance(value, dict):
        raise ValueError(f"a LangGraph item value is a dict, got {type(value).__name__}")
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=True, sort_keys=True)
    return text.replace(" ", "\\u0020").replace("|", "\\u007c")


def check_key(key: str) -> None:
    if not isinstance(key, str) or not key.strip():
        raise ValueError("an item key is non-empty text")
    if "|" in key or "\n" in key or "\r" in key:
        raise ValueError(f"item key {key!r} holds '|' or a line break, which a memory's fact name cannot")
    if key != " ".join(key.split()):
        raise ValueError(f"item key {key!r} has leading, trailing or repeated white space, which memory folds")


def _fold(name: str) -> str:
    return " ".join(name.split()).lower()


def decode(rec: MemoryRecord) -> dict:
    """The item value a memory holds; a value that is not the JSON object this store wrote is
    an error naming the memory (never skipped: the item would silently vanish)."""
    assert rec.claim is not None
    try:
        value = json.loads(rec.claim.value)
    except ValueError as e:
        raise MnemoError(f"memory {rec.id} ({rec.claim.entity} | {ATTRIBUTE}) does not hold JSON: {e}") from None
    if not isinstance(value, dict):
        raise MnemoError(f"memory {rec.id} ({rec.claim.entity} | {ATTRIBUTE}) holds {type(value).__name__}, not an object")
    return value


class _Stored:
    """One item as memory holds it."""

    def __init__(self, rec: MemoryRecord, created: datetime) -> None:
        assert rec.claim is not None
        self.key = rec.claim.entity
        self.value = decode(rec)
        self.created_at = created
        self.updated_at = rec.created_at or created
        self.memory = rec.id


def _items(records: list[MemoryRecord]) -> dict[str, _Stored]:
    """The active items of a namespace's memories (tombstoned ones included, to find when an
    item was first put: the start of its chain of supersessions)."""
    by_id = {r.id: r for r in records}
    supersedes: dict[str, MemoryRecord] = {}
    for r in records:
        if r.superseded_by and r.superseded_by in by_id:
            supersedes[r.superseded_by] = r
    out: dict[str, _Stored] = {}
    for r in records:
        c = r.claim
        if not r.active or c is None or _fold(c.attribute) != ATTRIBUTE:
            continue
        first = r
        while first.id in supersedes and supersedes[first.id].claim and supersedes[first.id].claim.entity == c.entity:
            first = supersedes[first.id]
        out[c.entity] = _Stored(r, first.created_at or datetime.now(timezone.utc))
    return out


def _compare(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return have == arg
    if op == "$ne":
        return have != arg
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (have, arg))
    if not (numbers or (isinstance(have, str) and isinstance(arg, str))):
        return False  # unordered across types, as a missing field
    if op == "$gt":
        return have > arg
    if op == "$gte":
        return have >= arg
    if op == "$lt":
        return have < arg
    if op == "$lte":
        return have <= arg
    raise ValueError(f"filter operator {op!r} is not one of $eq, $ne, $gt, $gte, $lt, $lte")


def _matches(value: Any, flt: Optional[dict]) -> bool:
    """``value`` holds what ``flt`` asks: each key equal, a nested dict as a subset, or an
    operator dict (``{"$gte": 3}``)."""
    if not flt:
        return True
    if not isinstance(value, dict):
        return False
    for k, want in flt.items():
        have = value.get(k)
        if isinstance(want, dict) and want and all(str(op).startswith("$") for op in want):
            if not all(_compare(have, op, arg) for op, arg in want.items()):
                return False
        elif isinstance(want, dict):
            if not _matches(have, want):
                return False
        elif have != want:
            return False
    return True


class MnemoStore(BaseStore):
    """A LangGraph ``BaseStore`` over Mnemo (a :class:`mnemo.Memory` or :class:`mnemo.Client`).
    See the module documentation for how items map onto memories. ``namespaces``: over HTTP,
    the Mnemo namespaces the token reaches (for prefix searches and ``list_namespaces``)."""

    supports_ttl = False

    def __init__(self, memory: Api, *, namespaces: Optional[Iterable[str]] = None) -> None:
        self.memory = memory
        self._declared = None if namespaces is None else sorted(set(namespaces))

    # -- LangGraph's one entry point --------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return await asyncio.to_thread(self.batch, ops)

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown store operation {type(op).__name__}")

    # -- operations -----------------------------------------------------------------------
    def _items_of(self, ns: str) -> dict[str, _Stored]:
        return _items(self.memory.list(all=True, namespace=ns))

    def _get(self, op: GetOp) -> Optional[Item]:
        ns = namespace_of(op.namespace)
        s = self._items_of(ns).get(op.key)
        if s is None:
            return None
        return Item(value=s.value, key=s.key, namespace=op.namespace, created_at=s.created_at, updated_at=s.updated_at)

    def _put(self, op: PutOp) -> None:
        ns = namespace_of(op.namespace)
        check_key(op.key)
        items = self._items_of(ns)
        if op.value is None:
            # Memory's forget names facts without case: only the exact key is forgotten.
            if op.key in items:
                self.memory.forget(f"{op.key} | {ATTRIBUTE}", namespace=ns)
            return None
        text = encode(op.value)
        others = [k for k in items if k != op.key and _fold(k) == _fold(op.key)]
        if others:
            raise ValueError(
                f"item key {op.key!r} differs from the stored key {others[0]!r} only in case or spaces, and memory "
                "names facts without either: delete the stored one first or use the same key"
            )
        r = self.memory.remember(f"[SEM] {op.key} | {ATTRIBUTE} | {text}", namespace=ns)
        kept = [o.memory for o in r.outcomes if o.memory and o.kind in ("inserted", "superseded", "reinforced")]
        stored = self.memory.why(kept[0], namespace=ns).memory if len(kept) == 1 else None
        if (
            stored is None
            or stored.claim is None
            or stored.claim.entity != op.key
            or _fold(stored.claim.attribute) != ATTRIBUTE
            or decode(stored) != json.loads(text)
        ):
            what = "; ".join(f"{o.kind} {o.memory or ''} {o.detail}".strip() for o in r.outcomes) or r.status
            raise MnemoError(
                f"memory did not store item {op.key!r} as given (extraction by {r.model.get('model', '?')}: {what}); "
                "the store needs a model that keeps tagged lines as written"
            )
        return None

    def _all_namespaces(self) -> Optional[list[str]]:
        if self._declared is not None:
            return self._declared
        lister = getattr(self.memory, "namespaces", None)
        return None if lister is None else sorted(lister())

    def _namespaces_below(self, prefix: tuple[str, ...]) -> list[str]:
        every = self._all_namespaces()
        if not prefix:
            if every is None:
                raise UnsupportedError(
                    "a search of every namespace needs their list: MnemoStore(client, namespaces=[…]) over HTTP"
                )
            return every
        want = namespace_of(prefix)
        if every is None:
            return [want]
        return [n for n in every if n == want or n.startswith(want + ".")]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        ranked: list[tuple[str, _Stored, float]] = []
        unranked: list[tuple[str, _Stored]] = []
        for ns in self._namespaces_below(op.namespace_prefix):
            items = [s for s in self._items_of(ns).values() if _matches(s.value, op.filter)]
            if not items:
                continue
            if not op.query:
                unranked.extend((ns, s) for s in items)
                continue
            recall = self.memory.recall(op.query, raw=True, budget=EVERYTHING, namespace=ns)
            order = [line.id for line in recall.memories] + list(recall.left_out)
            by_memory = {s.memory: s for s in items}
            hits = [by_memory[i] for i in order if i in by_memory]
            ranked.extend((ns, s, 1.0 - i / len(hits)) for i, s in enumerate(hits))
            seen = {s.memory for s in hits}
            unranked.extend((ns, s) for s in items if s.memory not in seen)
        ranked.sort(key=lambda f: -f[2])
        unranked.sort(key=lambda f: f[1].updated_at, reverse=True)
        found = [(ns, s, score) for ns, s, score in ranked] + [(ns, s, None) for ns, s in unranked]
        page = found[op.offset : op.offset + op.limit]
        return [
            SearchItem(
                namespace=path_of(ns),
                key=s.key,
                value=s.value,
                created_at=s.created_at,
                updated_at=s.updated_at,
                score=score,
            )
            for ns, s, score in page
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        every = self._all_namespaces()
        if every is None:
            raise UnsupportedError(
                "list_namespaces needs the namespaces' list: MnemoStore(client, namespaces=[…]) over HTTP, or Memory"
            )
        paths = [path_of(n) for n in every]
        for cond in op.match_conditions or ():
            pat = tuple(cond.path)
            if cond.match_type == "prefix":
                paths = [p for p in paths if len(p) >= len(pat) and all(a in ("*", b) for a, b in zip(pat, p))]
            else:
                paths = [
                    p for p in paths if len(p) >= len(pat) and all(a in ("*", b) for a, b in zip(pat, p[len(p) - len(pat):]))
                ]
        if op.max_depth is not None:
            paths = sorted({p[: op.max_depth] for p in paths})
        else:
            paths = sorted(set(paths))
        return paths[op.offset : op.offset + op.limit]
