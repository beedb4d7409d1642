"""The README's Python quick start, as a function of the constructor: run against the
embedded engine and against `mnemo serve`, with only the constructor changed."""


def quickstart(m) -> str:
    m.remember("[SEM] Northwind Labs | owner | Ben")
    m.remember("[SEM] Northwind Labs | owner | Carla")
    r = m.recall("who owns Northwind Labs", about="Northwind Labs | owner")
    assert r.decision == "act" and "Carla" in r.text and "Ben" not in r.text
    old = [x for x in m.list(all=True) if "Ben" in x.content][0]
    return str(m.why(old.id))
