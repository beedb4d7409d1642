"""A small agent on Mnemo, offline: a function-calling loop and the agent turn.

Run it from anywhere (it writes ./agent-data):

    python crates/mnemo-python/examples/agent.py

Offline there is no chat model to choose tool calls, so `scripted_model` stands in for one: it
answers the OpenAI chat-completions shape (a list of tool calls) from a fixed script. Swap it
for `openai.OpenAI().chat.completions.create(model=…, messages=…, tools=tools.definitions())`
and the loop is unchanged. Memory itself runs on Mnemo's offline fake model, which extracts
the tagged lines ([SEM] entity | attribute | value) and plans the agent turn.
"""

from __future__ import annotations

import json
import shutil

from mnemo import Memory
from mnemo.tools import MemoryTools

SCRIPT = [
    ("user", "Northwind Labs is owned by Ben.", [("remember", {"text": "[SEM] Northwind Labs | owner | Ben"})]),
    ("user", "Update: Carla owns Northwind Labs now.", [("remember", {"text": "[SEM] Northwind Labs | owner | Carla"})]),
    ("user", "Who should I email about the Northwind contract?",
     [("recall", {"query": "who owns Northwind Labs", "about": "Northwind Labs | owner"})]),
]


def scripted_model(step: int) -> list[dict]:
    """The tool calls a chat model would make at `step`, in the OpenAI shape."""
    return [
        {"id": f"call_{step}_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(SCRIPT[step][2])
    ]


def main() -> None:
    shutil.rmtree("agent-data", ignore_errors=True)
    with Memory("agent-data", namespace="me") as m:
        print(f"memory: {m.model}")
        tools = MemoryTools(m)
        for step, (role, said, _) in enumerate(SCRIPT):
            print(f"\n{role}: {said}")
            for call in scripted_model(step):
                name, args = call["function"]["name"], call["function"]["arguments"]
                result = tools.call(name, args)
                print(f"  tool {name}({args}) ->\n    " + result.replace("\n", "\n    "))

        # The agent turn: remember, recall, assess, then act on a checked plan or escalate.
        print("\nuser: What is the lead time of IC-MC-44?")
        t = m.turn("What is the lead time of IC-MC-44?", about="IC-MC-44 | lead time")
        print(f"  turn -> {t.decision.upper()}: {t.recall.reasons[0] if t.recall.reasons else ''}")
        if t.decision == "escalate" and t.recall.escalation and t.recall.escalation.id:
            e = t.recall.escalation.id
            print(f"  escalation {e} goes to a human, who answers: 21 days")
            m.answer(e, "21 days")
            t = m.turn("What is the lead time of IC-MC-44?", about="IC-MC-44 | lead time")
            print(f"  turn again -> {t.decision.upper()}: {t.plan.answer if t.plan else ''}")


if __name__ == "__main__":
    main()
