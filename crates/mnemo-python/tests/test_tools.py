"""remember / recall / forget as function-calling tools: the OpenAI tool format, the OpenAI
Agents SDK's FunctionTool, and the example agent."""

from __future__ import annotations

import asyncio
import json
import runpy
from pathlib import Path

import pytest

from mnemo import Memory
from mnemo.tools import MemoryTools


@pytest.fixture
def tools(tmp_path):
    with Memory(tmp_path / "d", namespace="me") as m:
        yield MemoryTools(m)


def test_definitions_are_openai_tools(tools):
    defs = tools.definitions()
    assert [d["function"]["name"] for d in defs] == ["remember", "recall", "forget"]
    for d in defs:
        assert d["type"] == "function"
        p = d["function"]["parameters"]
        assert p["type"] == "object" and set(p["required"]) <= set(p["properties"])


def test_a_tool_loop(tools):
    assert tools.call("remember", {"text": "[SEM] Northwind Labs | owner | Ben"}).startswith("remembered: m1 inserted")
    out = tools.call("remember", json.dumps({"text": "[SEM] Northwind Labs | owner | Carla"}))
    assert "replacing m1" in out
    r = tools.call("recall", {"query": "who owns Northwind Labs", "about": "Northwind Labs | owner"})
    assert "ACT" in r and "Carla" in r and "Ben" not in r
    assert "ESCALATE" in tools.call("recall", {"query": "what is the weather on Mars"})
    assert tools.call("forget", {"command": "Northwind Labs | owner"}).startswith("forgotten: ")


def test_bad_calls_come_back_as_text(tools):
    assert tools.call("teleport", {}).startswith("error: no tool")
    assert tools.call("recall", "{not json").startswith("error: the arguments are not a JSON object")
    assert tools.call("recall", {}).startswith("error: recall needs the argument 'query'")
    assert tools.call("remember", {"text": None}) == "error: text must be text, got NoneType"
    assert tools.call("recall", "[1, 2]").startswith("error: the arguments must be a JSON object")
    assert tools.call("recall", [1, 2]).startswith("error: the arguments are not a JSON object")
    assert "mode" not in tools.call("recall", {"query": "x", "budget": -5}) and tools.call(
        "recall", {"query": "x", "budget": -5}
    ).startswith("error:")


def test_openai_agents_function_tools(tools):
    from agents import FunctionTool

    fts = tools.for_openai_agents()
    assert all(isinstance(t, FunctionTool) for t in fts)
    by = {t.name: t for t in fts}
    assert by["recall"].params_json_schema["required"] == ["query"]

    async def main():
        await by["remember"].on_invoke_tool(None, json.dumps({"text": "[SEM] Northwind Labs | owner | Carla"}))
        return await by["recall"].on_invoke_tool(
            None, json.dumps({"query": "who owns Northwind Labs", "about": "Northwind Labs | owner"})
        )

    assert "Carla" in asyncio.run(main())


def test_the_example_agent_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    example = Path(__file__).resolve().parents[1] / "examples" / "agent.py"
    runpy.run_path(str(example), run_name="__main__")
    out = capsys.readouterr().out
    assert "ACT" in out and "Carla" in out and "escalat" in out.lower()


def test_an_openai_agents_run_calls_the_tools(tools):
    """A real `Runner.run` of the OpenAI Agents SDK with Mnemo's tools. Offline, so the model is
    a scripted `agents.models.interface.Model`: it asks for `remember` twice, then `recall`,
    then answers with what recall returned; the SDK runs the tools between the turns."""
    from agents import Agent, Runner, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)
    script = [
        ("remember", {"text": "[SEM] Northwind Labs | owner | Ben"}),
        ("remember", {"text": "[SEM] Northwind Labs | owner | Carla"}),
        ("recall", {"query": "who owns Northwind Labs", "about": "Northwind Labs | owner"}),
    ]

    class Scripted(Model):
        def __init__(self) -> None:
            self.outputs: list[str] = []

        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                               tracing, **kwargs):
            items = input if isinstance(input, list) else []
            self.outputs = [str(i.get("output")) for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
            step = len(self.outputs)
            if step < len(script):
                name, args = script[step]
                out = [ResponseFunctionToolCall(type="function_call", call_id=f"call_{step}", name=name,
                                                arguments=json.dumps(args), id=f"fc_{step}", status="completed")]
            else:
                text = ResponseOutputText(type="output_text", text=self.outputs[-1], annotations=[])
                out = [ResponseOutputMessage(type="message", id="msg", role="assistant", status="completed", content=[text])]
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the scripted model does not stream")

    model = Scripted()
    agent = Agent(name="assistant", instructions="Use memory.", tools=tools.for_openai_agents(), model=model)
    result = asyncio.run(Runner.run(agent, "Who owns Northwind Labs?"))
    assert len(model.outputs) == 3 and "replacing m1" in model.outputs[1]
    assert "ACT" in result.final_output and "Carla" in result.final_output and "Ben" not in result.final_output
