"""Drives `mnemo mcp` over stdio with the official MCP Python SDK and measures what an agent
receives (scripts/mcp-check runs it; see there for what is checked).

Every call goes through `ClientSession.call_tool`, which also checks each structured result
against the tool's declared outputSchema. A failed check names what was wrong and exits 1; the
measured figures are printed as JSON on stdout.

Usage: mcp-check.py MNEMO_BIN WORK_DIR RENDER_OVERHEAD_TOKENS MCP_VERSION
"""
import asyncio
import json
import math
import os
import sys
import time

import mcp.types as mcp_types
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

NAMESPACE = "mcp-check"


class CheckFailed(Exception):
    pass


def say(msg):
    print(f"mcp-check: {msg}", file=sys.stderr)


def check(cond, what):
    if not cond:
        raise CheckFailed(what)


def count_tokens(counter, text):
    """`text`'s tokens by the counter a recall names (the engine's configured one)."""
    if counter == "chars/4":
        # mnemo_contract::tokens::CharTokenCounter: Unicode scalar values / 4, rounded up.
        return math.ceil(len(text) / 4)
    raise CheckFailed(f"no Python equivalent of the token counter {counter!r}: add it to count_tokens")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def memories():
    """60 turns, one memory each: facts on suppliers, parts, people and sites, and prose."""
    facts = []
    suppliers = ["S-208", "S-311", "S-402", "S-517", "S-620", "S-733"]
    for i, s in enumerate(suppliers):
        facts.append(f"[SEM] Supplier {s} | contact | {['Ana', 'Ben', 'Chen', 'Dana', 'Eli', 'Femi'][i]}")
        facts.append(f"[SEM] Supplier {s} | city | {['Lyon', 'Porto', 'Leeds', 'Graz', 'Turin', 'Ghent'][i]}")
    parts = ["IC-MC-44", "IC-MC-45", "RES-10K", "CAP-4U7", "LED-RGB", "MOSFET-N3", "XTAL-16M", "USB-C-R"]
    for i, p in enumerate(parts):
        facts.append(f"[SEM] {p} from {suppliers[i % len(suppliers)]} | lead time | {14 + 7 * (i % 4)} days")
        facts.append(f"[SEM] {p} | unit price | {0.05 + 0.37 * i:.2f} EUR")
        facts.append(f"[SEM] {p} | stock on hand | {120 * (i + 1)} units")
    people = ["Priya", "Tomasz", "Aiko", "Kwame", "Lucia", "Omar"]
    for i, who in enumerate(people):
        facts.append(f"[SEM] {who} | role | {['buyer', 'planner', 'QA lead', 'controller', 'CFO', 'intern'][i]}")
        facts.append(f"[SEM] {who} | desk phone | +33 1 55 00 {10 + i:02d} {40 + i:02d}")
    facts += [
        "[PROC] Raise a purchase order above 10,000 EUR only with the controller's approval",
        "[PROC] Ship hazardous parts with the UN 3480 label and a signed declaration",
        "[PROC] Check the ERP lead time before promising a delivery date",
        "[PROC] Send the weekly stock report to Lucia every Friday before noon",
    ]
    prose = [
        "We moved the weekly supplier review from Monday to Thursday afternoon.",
        "Priya mentioned that the Lyon warehouse floods every spring, so keep stock elsewhere.",
        "The auditors asked for every change to a lead time to be logged with its source.",
        "Ben from S-311 prefers to be called in the morning, never after four.",
        "The new packaging line in Porto starts in September if the permits arrive.",
        "Tomasz is on parental leave until the end of the quarter.",
        "Last year the RES-10K shortage delayed three customer orders by two weeks.",
        "Aiko found a batch of LED-RGB parts with the wrong colour temperature in March.",
    ]
    turns = facts + prose
    check(len(turns) == 60, f"{len(turns)} turns, not 60")
    return turns


async def call(session, tool, args):
    """A call the server must answer: a JSON-RPC error is a failure, so is a tool error."""
    try:
        r = await session.call_tool(tool, args)
    except MCPError as e:
        raise CheckFailed(f"{tool} {args}: a JSON-RPC error {e.code}: {e.error.message}") from e
    check(not r.is_error, f"{tool} {args}: a tool error: {text_of(r)}")
    check(isinstance(r.structured_content, dict), f"{tool}: no structured content")
    return r


async def tool_error(session, tool, args, says):
    """A mistake a model can fix: a tool error (isError) it reads, not a JSON-RPC error."""
    try:
        r = await session.call_tool(tool, args)
    except MCPError as e:
        raise CheckFailed(f"{tool} {args}: a JSON-RPC error {e.code} ({e.error.message}), not a tool error") from e
    check(r.is_error, f"{tool} {args}: accepted, not refused: {text_of(r)[:300]}")
    check(says in text_of(r), f"{tool} {args}: the error does not say {says!r}: {text_of(r)}")
    return text_of(r)


def measure(result, overhead):
    """What the agent reads of a compact recall, counted as the engine counts."""
    text = text_of(result)
    view = result.structured_content
    counter = view["token_counter"]
    tokens = count_tokens(counter, text)
    return {
        "budget": view["budget"],
        "token_counter": counter,
        "text_chars": len(text),
        "text_tokens": tokens,
        "limit_tokens": view["budget"] + overhead,
        "memory_line_tokens": view["tokens"],
        "memories_shown": len(view["memories"]),
        "left_out": len(view["left_out"]),
        "structured_content_bytes": len(json.dumps(view)),
        "decision": (view.get("decision") or {}).get("decision"),
    }


async def run(binary, work, overhead, version):
    figures = {"mcp_sdk": f"mcp=={version}", "render_overhead_tokens": overhead}
    started = time.monotonic()
    params = StdioServerParameters(
        command=binary,
        args=["--data-dir", os.path.join(work, "data"), "--namespace", NAMESPACE, "mcp"],
        env={"RUST_LOG": "warn"},
    )
    with open(os.path.join(work, "server.log"), "w") as log:
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                figures["server"] = f"{init.server_info.name} {init.server_info.version}"
                figures["protocol_version"] = init.protocol_version

                tools = {t.name: t for t in (await session.list_tools()).tools}
                want = {"remember", "recall", "forget", "why", "list", "turn", "escalations", "answer", "dismiss"}
                check(want <= set(tools), f"tools: {sorted(tools)}")
                for name in ["recall", "why", "list", "escalations"]:
                    a = tools[name].annotations
                    check(a is not None and a.read_only_hint is True, f"{name} is not annotated read-only: {a}")
                for name in ["recall", "list", "turn", "escalations", "answer", "dismiss"]:
                    check(tools[name].output_schema is not None, f"{name} declares no outputSchema")
                figures["tools"] = sorted(tools)

                # 60 memories, one turn each.
                t0 = time.monotonic()
                for text in memories():
                    r = await call(session, "remember", {"text": text})
                    s = r.structured_content
                    check(s["status"] == "extracted" and len(s["outcomes"]) == 1, f"remember {text!r}: {s}")
                    check(s["outcomes"][0]["kind"] == "inserted", f"remember {text!r}: {s['outcomes']}")
                figures["remember_60_seconds"] = round(time.monotonic() - t0, 2)

                # The must-show: budget 256 → at most 256 + overhead tokens of text.
                query = "what is the lead time of IC-MC-44 from supplier S-208?"
                r = await call(session, "recall", {"query": query, "budget": 256})
                m = measure(r, overhead)
                check(m["budget"] == 256, f"the recall's budget is {m['budget']}")
                check(m["text_tokens"] <= m["limit_tokens"],
                      f"recall budget 256: the text holds {m['text_tokens']} tokens > {m['limit_tokens']}:\n{text_of(r)}")
                check(m["memory_line_tokens"] <= 256, f"memory lines {m['memory_line_tokens']} > 256")
                check("IC-MC-44 from S-208 | lead time | 14 days" in text_of(r), f"the answer is recalled:\n{text_of(r)}")
                figures["recall_budget_256"] = m
                figures["recall_budget_256_text"] = text_of(r)
                r = await call(session, "recall", {"query": query, "budget": 1024})
                m = measure(r, overhead)
                check(m["text_tokens"] <= m["limit_tokens"], f"recall budget 1024: {m}")
                figures["recall_budget_1024"] = m
                r = await call(session, "recall", {"query": query, "budget": 256, "detail": "full"})
                full = r.structured_content
                check("pack" in full and "trace" in full["pack"], "detail full keeps the trace")
                figures["recall_budget_256_detail_full"] = {
                    "text_chars": len(text_of(r)),
                    "structured_content_bytes": len(json.dumps(full)),
                    "trace_candidates": len(full["pack"]["trace"]),
                }

                # Offline prose is kept, and a paraphrase finds it.
                sentence = "The user said their favourite colour is teal."
                r = await call(session, "remember", {"text": sentence})
                s = r.structured_content
                check(s["status"] == "extracted" and len(s["outcomes"]) == 1, f"remember {sentence!r}: {s}")
                question = "what colour does the user like?"
                r = await call(session, "recall", {"query": question})
                lines = [x for x in r.structured_content["memories"] if "teal" in x["content"]]
                check(lines and "teal" in text_of(r), f"{question!r} does not find the sentence:\n{text_of(r)}")
                figures["prose"] = {
                    "remembered": sentence,
                    "status": s["status"],
                    "kind": lines[0]["kind"],
                    "question": question,
                    "rank": [x["content"] for x in r.structured_content["memories"]].index(lines[0]["content"]) + 1,
                    "memories_shown": len(r.structured_content["memories"]),
                }

                # list: pages of 20 through all 61, ids as list shows them.
                seen, after, pages = [], None, 0
                while True:
                    args = {"limit": 20} if after is None else {"limit": 20, "after": after}
                    r = await call(session, "list", args)
                    page = r.structured_content
                    pages += 1
                    check(len(text_of(r).splitlines()) == 1 + len(page["memories"]), f"list text:\n{text_of(r)}")
                    seen += [x["id"] for x in page["memories"]]
                    after = page["next_after"]
                    if after is None:
                        break
                check(len(seen) == 61 and len(set(seen)) == 61, f"list saw {len(seen)} memories: {seen}")
                first_page = text_of(await call(session, "list", {"limit": 20}))
                figures["list"] = {"memories": len(seen), "pages_of_20": pages, "first_ids": seen[:3],
                                   "first_page_text_chars": len(first_page)}

                # turn: remember and answer in one call.
                r = await call(session, "turn", {"text": "[SEM] Acme | owner | Ben", "about": "Acme | owner",
                                                 "budget": 256})
                t = r.structured_content
                check(t["remembered"]["status"] == "extracted", f"turn: {t['remembered']}")
                decision = t["recall"]["decision"]
                check(decision["decision"] == "act" and decision["act_on"][0]["value"] == "Ben", f"turn: {decision}")
                text = text_of(r)
                check(text.startswith("Remembered: ") and "Decision: " in text, f"turn text:\n{text}")
                plan = t["recall"].get("plan") or {}
                check(plan.get("faithful") is True, f"turn: no checked plan on ACT: {t['recall']}")
                figures["turn"] = {
                    "status": t["remembered"]["status"],
                    "decision": decision["decision"],
                    "act_on": decision["act_on"][0]["value"],
                    "plan": plan.get("answer"),
                    "text_chars": len(text),
                    "text_tokens": count_tokens(t["recall"]["token_counter"], text),
                    "first_line": text.splitlines()[0],
                }

                # A turn that escalates (memory holds no approver), the human's answer recorded
                # through `answer` (the value alone), and the same turn then acting on it.
                ask = {"text": "Who signs off purchase orders at Northwind Labs?",
                       "about": "Northwind Labs | approver", "budget": 256}
                r = await call(session, "turn", ask)
                t = r.structured_content
                check(t["recall"]["decision"]["decision"] == "escalate", f"the approver turn: {t['recall']}")
                esc = (t["recall"].get("escalation") or {}).get("id")
                check(isinstance(esc, str) and esc.startswith("e"), f"no escalation id: {t['recall']}")
                check(esc in text_of(r), f"the turn's text does not name {esc}:\n{text_of(r)}")
                escalated_text = text_of(r)
                r = await call(session, "escalations", {})
                listed = r.structured_content["escalations"]
                check([e["id"] for e in listed] == [esc] and listed[0]["status"] == "open", f"escalations: {listed}")
                await tool_error(session, "answer", {"id": "e99", "text": "Carla"}, "no escalation e99")
                r = await call(session, "answer", {"id": esc, "text": "Carla"})
                a = r.structured_content
                check(a["escalation"]["status"] == "answered" and a["escalation"]["answer"]["by"] == "human:user",
                      f"answer: {a}")
                check(a["escalation"]["answer"]["form"] == "value", f"the value alone is the claim: {a}")
                answered_text = text_of(r)
                r = await call(session, "turn", ask)
                t = r.structured_content
                decision = t["recall"]["decision"]
                check(decision["decision"] == "act" and decision["act_on"][0]["value"] == "Carla",
                      f"the same turn after the answer: {t['recall']}")
                plan = t["recall"].get("plan") or {}
                check(plan.get("faithful") is True, f"no checked plan: {t['recall']}")
                w = (await call(session, "why", {"id": decision["act_on"][0]["memory"]})).structured_content
                check(w["memory"]["sources"] == ["human:user"], f"why: {w['memory']}")
                r = await call(session, "escalations", {"open_only": False})
                check([e["status"] for e in r.structured_content["escalations"]] == ["answered"],
                      f"escalations: {r.structured_content}")
                figures["escalation"] = {
                    "id": esc,
                    "escalated_text_tokens": count_tokens(t["recall"]["token_counter"], escalated_text),
                    "escalated_text": escalated_text,
                    "answer": "Carla",
                    "answered_text": answered_text,
                    "recorded": a["escalation"]["answer"]["recorded"],
                    "then": decision["decision"],
                    "act_on": decision["act_on"][0]["value"],
                    "plan": plan.get("answer"),
                    "source": w["memory"]["sources"][0],
                }

                # Mistakes a model can fix are tool errors it reads.
                figures["tool_errors"] = {
                    "recall detail huge": await tool_error(session, "recall", {"query": "x", "detail": "huge"},
                                                           "compact"),
                    "list limit 0": await tool_error(session, "list", {"limit": 0}, "limit must be 1 to 100"),
                    "why m9999": await tool_error(session, "why", {"id": "m9999"}, "m9999"),
                    "answer m1": await tool_error(session, "answer", {"id": "m1", "text": "x"},
                                                  "not an escalation id"),
                }
        figures["elicitation"] = await asked_in_the_client(binary, work, log)
    figures["seconds"] = round(time.monotonic() - started, 2)
    return figures


async def asked_in_the_client(binary, work, log):
    """A client that supports elicitation (an `elicitation_callback`): a turn that escalates
    asks the user in the client; a decline leaves the escalation open, an answer is recorded
    from human:user and the same turn acts on it. A fresh server and data directory."""
    replies = ["decline", "Ines"]
    questions = []

    async def human(context, params):
        check(getattr(params, "mode", "form") == "form", f"a form, not {params}")
        questions.append({"message": params.message,
                          "requested_schema": dict(params.requested_schema)})
        reply = replies.pop(0)
        if reply == "decline":
            return mcp_types.ElicitResult(action="decline")
        return mcp_types.ElicitResult(action="accept", content={"answer": reply})

    params = StdioServerParameters(
        command=binary,
        args=["--data-dir", os.path.join(work, "data-elicitation"), "--namespace", NAMESPACE, "mcp"],
        env={"RUST_LOG": "warn"},
    )
    async with stdio_client(params, errlog=log) as (read, write):
        async with ClientSession(read, write, elicitation_callback=human) as session:
            await session.initialize()
            await call(session, "remember", {"text": "[SEM] Contoso | owner | Ben"})
            ask = {"text": "Who signs off purchase orders at Contoso?", "about": "Contoso | approver", "budget": 256}

            # Declined: the escalating result, the escalation still open.
            r = await call(session, "turn", ask)
            t = r.structured_content
            check(len(questions) == 1, f"the escalating turn asked {len(questions)} questions")
            asked = t.get("elicitation") or {}
            check(asked.get("outcome") == "declined" and t["recall"]["decision"]["decision"] == "escalate",
                  f"declined: {asked} {t['recall']['decision']}")
            esc = asked["escalation"]
            check(t["recall"]["escalation"]["id"] == esc and "declined" in text_of(r), f"declined:\n{text_of(r)}")
            declined_line = text_of(r).splitlines()[1]
            listed = (await call(session, "escalations", {})).structured_content["escalations"]
            check([e["id"] for e in listed] == [esc], f"open after a decline: {listed}")

            # Answered in the client: recorded from human:user, the same turn acts on it.
            r = await call(session, "turn", ask)
            t = r.structured_content
            check(len(questions) == 2, f"{len(questions)} questions")
            message, schema = questions[1]["message"], questions[1]["requested_schema"]
            for says in [esc, ask["text"], "Contoso | approver", "Why: "]:
                check(says in message, f"the question does not say {says!r}:\n{message}")
            check(schema.get("required") == ["answer"] and list(schema["properties"]) == ["answer"],
                  f"the form: {schema}")
            asked = t.get("elicitation") or {}
            check(asked.get("outcome") == "answered" and asked.get("by") == "human:user" and asked["escalation"] == esc,
                  f"answered: {asked}")
            decision = t["recall"]["decision"]
            check(decision["decision"] == "act" and decision["act_on"][0]["value"] == "Ines",
                  f"the turn after the answer in the client: {t['recall']}")
            plan = t["recall"].get("plan") or {}
            check(plan.get("faithful") is True, f"no checked plan: {t['recall']}")
            text = text_of(r)
            check(f"answered escalation {esc}" in text.splitlines()[1], f"the text does not say so:\n{text}")
            w = (await call(session, "why", {"id": decision["act_on"][0]["memory"]})).structured_content
            check(w["memory"]["sources"] == ["human:user"], f"why: {w['memory']}")
            listed = (await call(session, "escalations", {"open_only": False})).structured_content["escalations"]
            check([(e["id"], e["status"]) for e in listed] == [(esc, "answered")], f"escalations: {listed}")
            return {
                "client_capability": "elicitation (form), through ClientSession(elicitation_callback=...)",
                "id": esc,
                "question": message,
                "requested_schema": schema,
                "declined": "escalate, still open",
                "declined_line": declined_line,
                "answer": "Ines",
                "answered_text": text,
                "recorded_turn": asked.get("turn"),
                "then": decision["decision"],
                "act_on": decision["act_on"][0]["value"],
                "plan": plan.get("answer"),
                "source": w["memory"]["sources"][0],
                "text_tokens": count_tokens(t["recall"]["token_counter"], text),
            }


def first_leaf(e):
    """The first exception inside nested exception groups."""
    while isinstance(e, BaseExceptionGroup):
        e = e.exceptions[0]
    return e


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    binary, work, overhead, version = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    try:
        try:
            figures = asyncio.run(run(binary, work, overhead, version))
        except BaseExceptionGroup as group:
            # anyio's task groups (the stdio transport) wrap what a check raised.
            raise first_leaf(group) from group
    except (CheckFailed, MCPError, RuntimeError, KeyError, TypeError, ValueError, OSError) as e:
        say(f"FAILED: {type(e).__name__}: {e}")
        log = os.path.join(work, "server.log")
        if os.path.exists(log) and os.path.getsize(log):
            with open(log) as f:
                say("the server's log:\n" + f.read()[-4000:])
        sys.exit(1)
    r = figures["recall_budget_256"]
    say(f"recall budget 256 over 60 memories: the text holds {r['text_tokens']} tokens ({r['token_counter']}, "
        f"{r['text_chars']} chars) <= {r['limit_tokens']} = 256 + {figures['render_overhead_tokens']}")
    print(json.dumps(figures, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
