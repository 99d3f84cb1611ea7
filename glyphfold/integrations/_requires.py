"""Each adapter's framework, at a version the adapter works with, or one clear error.

The floors here are the extras' lower bounds in pyproject.toml (tests/integrations/
test_floors.py checks they agree, and CI installs them: .ci/floors). An adapter calls
:func:`require` before importing its framework: a missing or too old framework raises
``ImportError`` naming the installed version, the one needed and the real cause.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re

__all__ = ["FLOORS", "require"]

# extra -> (distribution, lowest version the adapter is tested with), found by installing
# older releases (.ci/floors): below these the adapter or the framework's own offline test
# model is missing something (pydantic-ai 1.x: no NativeToolReturnPart, CachePoint or
# capabilities; openai-agents < 0.21: no agents.testing; llama-index-core < 0.14.12: no
# MockFunctionCallingLLM(response_generator=); smolagents < 1.19: no
# ChatMessageToolCallFunction; langgraph < 1.1.5: the langgraph-prebuilt pip picks for it
# imports ExecutionInfo/ServerInfo it lacks; langchain < 1.2.11 caps langgraph below 1.1)
FLOORS: dict[str, tuple[str, str]] = {
    "langchain": ("langchain", "1.2.11"),
    "langgraph": ("langgraph", "1.1.5"),
    "openai-agents": ("openai-agents", "0.21.0"),
    "pydantic-ai": ("pydantic-ai-slim", "2.2.0"),
    "smolagents": ("smolagents", "1.19.0"),
    "llamaindex": ("llama-index-core", "0.14.12"),
}


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v.split("+")[0])[:3])


def installed_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def require(extra: str, module: str, where: str, *also: str) -> None:
    """Import ``module`` (and ``also``) of the ``extra``'s framework or raise ImportError.

    The message says what is installed, what ``where`` needs and why the import failed.
    """
    dist, floor = FLOORS[extra]
    have = installed_version(dist)
    fix = f"pip install -U 'glyphfold[{extra}]'"
    if have is not None and _version_tuple(have) < _version_tuple(floor):
        msg = f"{where} needs {dist}>={floor}, but {dist} {have} is installed: {fix}"
        raise ImportError(msg)
    for name in (module, *also):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            state = f"{dist} {have} is installed" if have else f"{dist} is not installed"
            msg = f"{where} needs {dist}>={floor} ({state}; importing {name} failed: {exc}): {fix}"
            raise ImportError(msg) from exc
