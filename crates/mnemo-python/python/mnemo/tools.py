"""Mnemo as tools for function-calling agents.

:class:`MemoryTools` offers ``remember``, ``recall`` and ``forget`` as JSON-schema tools, in
the form any OpenAI-compatible tool loop takes (``tools=`` of a chat completion) and as
OpenAI Agents SDK ``FunctionTool`` objects::

    from mnemo import Memory
    from mnemo.tools import MemoryTools

    tools = MemoryTools(Memory("data", namespace="me"))
    client.chat.completions.create(model=…, messages=…, tools=tools.definitions())
    # for each tool call the model makes:
    text = tools.call(call.function.name, call.function.arguments)

    from agents import Agent
    agent = Agent(name="assistant", tools=tools.for_openai_agents())

What a tool returns to the model is text: for ``recall``, the prompt-ready lines within the
token budget and the decision (ACT with the value, or ESCALATE with why — the model should
then ask a human rather than act); for ``remember`` and ``forget``, one line of what changed.
A bad argument comes back as a line starting ``error:`` that says what to fix, so the model
can correct itself; it is never raised into the loop.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Union

from ._api import Api
from .errors import MnemoError
from .types import RememberResult

REMEMBER = {
    "name": "remember",
    "description": (
        "Store what the user said in long-term memory. Facts as 'entity | attribute | value' lines "
        "(prefixed [SEM]), procedures ([PROC]) or events ([EPI]) for the offline model, or plain prose for a "
        "live model. A newer value of a fact supersedes the old one (kept as history, never deleted)."
    ),
    "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "What to remember."}},
        "required": ["text"],
        "additionalProperties": False,
    },
}

RECALL = {
    "name": "recall",
    "description": (
        "Recall what memory holds for a question, within a token budget, with a decision: ACT (memory supports "
        "the task: use the value given) or ESCALATE (it does not: ask the user instead of guessing)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The question or task."},
            "about": {
                "type": ["string", "null"],
                "description": "The fact the task depends on, as 'entity | attribute' (optional).",
            },
            "budget": {"type": ["integer", "null"], "description": "Token budget for the memories (optional)."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}

FORGET = {
    "name": "forget",
    "description": (
        "Forget exactly what the user asked to forget: 'entity | attribute' for a fact, or free text. The memory "
        "is tombstoned with the request as the reason."
    ),
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "What to forget."}},
        "required": ["command"],
        "additionalProperties": False,
    },
}

SPECS = [REMEMBER, RECALL, FORGET]


def _remembered(r: RememberResult, verb: str) -> str:
    if not r.outcomes:
        note = f" ({r.notes[0]})" if r.notes else ""
        return f"{verb}: nothing changed{note}"
    parts = []
    for o in r.outcomes:
        gone = f", replacing {', '.join(o.tombstoned)}" if o.tombstoned else ""
        parts.append(f"{o.memory or ''} {o.kind}{gone}".strip())
    return f"{verb}: " + "; ".join(parts)


def _text(args: dict, name: str) -> str:
    """The text argument `name` (a KeyError when missing: the caller says which)."""
    v = args[name]
    if not isinstance(v, str):
        raise ValueError(f"{name} must be text, got {type(v).__name__}")
    return v


class MemoryTools:
    """``remember``, ``recall`` and ``forget`` over one memory (embedded or HTTP)."""

    def __init__(self, memory: Api, *, namespace: Union[str, None] = None) -> None:
        self.memory = memory
        self.namespace = namespace
        self._run: dict[str, Callable[[dict], str]] = {
            "remember": self._remember,
            "recall": self._recall,
            "forget": self._forget,
        }

    def definitions(self) -> list[dict]:
        """The tools as a chat completion's ``tools`` takes them."""
        return [{"type": "function", "function": dict(spec)} for spec in SPECS]

    def call(self, name: str, arguments: Union[str, dict, None]) -> str:
        """Run the tool ``name`` with the model's ``arguments`` (JSON text or a dict); the text to
        send back as the tool's result."""
        run = self._run.get(name)
        if run is None:
            return f"error: no tool {name!r}; the tools are remember, recall and forget"
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
        except (TypeError, ValueError) as e:
            return f"error: the arguments are not a JSON object ({e}); send one such as {{\"query\": \"…\"}}"
        if not isinstance(args, dict):
            return "error: the arguments must be a JSON object"
        try:
            return run(args)
        except KeyError as e:
            return f"error: {name} needs the argument {e.args[0]!r}"
        except (MnemoError, ValueError) as e:
            return f"error: {e}"

    def _remember(self, a: dict) -> str:
        return _remembered(self.memory.remember(_text(a, "text"), namespace=self.namespace), "remembered")

    def _recall(self, a: dict) -> str:
        about = a.get("about")
        if about is not None and not isinstance(about, str):
            raise ValueError("about must be text such as 'Northwind Labs | owner'")
        r = self.memory.recall(_text(a, "query"), about=about, budget=a.get("budget"), namespace=self.namespace)
        return r.text

    def _forget(self, a: dict) -> str:
        return _remembered(self.memory.forget(_text(a, "command"), namespace=self.namespace), "forgotten")

    def for_openai_agents(self) -> list[Any]:
        """The tools as OpenAI Agents SDK ``FunctionTool`` objects (needs ``openai-agents``)."""
        import asyncio

        from agents import FunctionTool

        def tool(spec: dict) -> Any:
            async def invoke(_ctx: Any, args: str, name: str = spec["name"]) -> str:
                return await asyncio.to_thread(self.call, name, args)

            return FunctionTool(
                name=spec["name"],
                description=spec["description"],
                params_json_schema=spec["parameters"],
                on_invoke_tool=invoke,
                strict_json_schema=False,
            )

        return [tool(s) for s in SPECS]
