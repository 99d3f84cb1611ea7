"""The README's integration examples run, each in its framework's own loop, offline.

The examples take ``model`` (and ``tools``, or the Agents SDK's ``agent``) as given; here
they are the frameworks' own fake models, so nothing is sent anywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _examples() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Integrations", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```py\n(.*?)```", section, flags=re.S)
    return {b.splitlines()[0].lstrip("# ").strip(): b for b in blocks}


EXAMPLES = _examples()


def test_the_readme_shows_one_example_per_framework():
    assert set(EXAMPLES) == {"LangChain v1", "OpenAI Agents SDK", "pydantic-ai"}


def _langchain_names() -> dict:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from lc_fakes import ScriptedChat

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "def test_x():\n    assert add(1, 1) == 2\n"

    call = AIMessage(
        content="", tool_calls=[{"id": "c1", "name": "read_file", "args": {"path": "t.py"}}]
    )
    model = ScriptedChat(messages=iter([call, AIMessage(content="Fixed.")]))
    return {"model": model, "tools": [read_file]}


def _agents_names() -> dict:
    from agents import Agent, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "def test_x():\n    assert add(1, 1) == 2\n"

    model = ScriptedModel(
        [
            [function_call("read_file", {"path": "t.py"}, call_id="c1")],
            [assistant_message("Fixed.")],
        ]
    )
    return {"agent": Agent(name="coder", instructions="Fix bugs.", model=model, tools=[read_file])}


def _pydantic_ai_names() -> dict:
    from pydantic_ai.models.test import TestModel

    return {"model": TestModel(custom_output_text="Fixed.")}


NAMES = {
    "LangChain v1": _langchain_names,
    "OpenAI Agents SDK": _agents_names,
    "pydantic-ai": _pydantic_ai_names,
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_readme_example_runs(name):
    namespace = NAMES[name]()
    exec(compile(EXAMPLES[name], f"README.md ({name})", "exec"), namespace)
    if name == "LangChain v1":
        assert namespace["model"].received  # the agent loop called the model through the hook
        assert namespace["agent"].invoke is not None
    elif name == "OpenAI Agents SDK":
        assert namespace["result"].final_output == "Fixed."
    else:
        assert namespace["result"].output == "Fixed."
