"""The issue-19 loop through each framework's own agent loop, next to the plain Compactor loop.

Run: ``python benchmarks/bench_loop_adapters.py`` (options: ``--steps``, ``--window``,
``--apis``, ``--frameworks``, ``--low``). The scripted model and the loopback fake
upstream are :mod:`loop_upstream`'s (its own process); the loop, its 2-8k-token tool
results, its system prompt and task are :mod:`bench_loop`'s. Per API (OpenAI Chat
Completions; Anthropic Messages where the framework has an Anthropic client):

- ``self`` and ``library``: :func:`bench_loop.run_loop`: the harness compacting by
  itself (a summary call past 80% of the window), and the plain Python loop with a
  ``glyphfold.Compactor``;
- one row per framework, its own agent loop driven through its own OpenAI / Anthropic
  client against the fake upstream, with glyphfold's adapter for it: LangChain
  ``create_agent`` + ``GlyphfoldMiddleware``; the Agents SDK ``Runner`` +
  ``GlyphfoldInputFilter``; a pydantic-ai ``Agent`` + ``GlyphfoldHistory.capability()``;
  smolagents ``ToolCallingAgent`` + ``GlyphfoldModel``; LlamaIndex ``FunctionAgent`` +
  ``GlyphfoldLLM``.

Every glyphfold run gets the same budget, window, reply reserve, low watermark and
profile as the plain loop (the adapters price the framework's tool schemas themselves;
the plain loop subtracts its schemas' size from the budget, as bench_loop does). The
client's HTTP hook tells the fake upstream which step it is at (``x-bench-step``: the
number of model calls so far), so every framework sees the same script: one ``bash``
call per step, a final text after ``--steps`` steps. Per run: steps finished,
compactions, the repeated share (median of the last 10 requests: what a prompt cache
serves), the cost under Anthropic's cache prices relative to ``self`` of the same API.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import httpx  # noqa: E402
from bench_loop import (  # noqa: E402
    MAX_TOKENS,
    MODEL,
    SYSTEM,
    TASK,
    TOOL,
    Result,
    _port,
    _wait,
    run_loop,
    tool_output,
)

FRAMEWORKS = ("langchain", "openai-agents", "pydantic-ai", "smolagents", "llamaindex")
# which framework has a client for which API here: the Agents SDK and smolagents reach
# Anthropic only through LiteLLM. LlamaIndex's OpenAI client (llama-index-llms-openai)
# caps openai < 3, so it is not in the shared environment beside openai 3.x: install it
# apart (pip install --no-deps --target DIR llama-index-llms-openai; PYTHONPATH=DIR).
# Its Anthropic client (llama-index-llms-anthropic 0.12.3) fails on the anthropic 2.x
# SDK's MessageParam ("Cannot instantiate typing.Union"), for any message.
CLIENTS = {
    "chat": ("langchain", "openai-agents", "pydantic-ai", "smolagents", "llamaindex"),
    "responses": ("langchain", "openai-agents", "pydantic-ai"),
    "messages": ("langchain", "pydantic-ai", "llamaindex"),
}
TOOL_DOC = TOOL["description"]


def bash_result(cmd: str) -> str:
    """The tool's result for the scripted ``cat src/module_k.py``: bench_loop's output k."""
    m = re.search(r"module_(\d+)", cmd)
    return tool_output(int(m.group(1))) if m else f"unknown command: {cmd}"


_IDS = iter(range(1, 1 << 62))


def _unique_ids(response: httpx.Response, body: bytes) -> httpx.Response:
    """loop_upstream answers every Responses call with the id ``resp_bench``; LangGraph's
    message reducer takes a second AIMessage with the same id for an edit of the first and
    replaces it (a real API's ids differ per response). Each response gets its own."""
    n = next(_IDS)
    body = body.replace(b'"resp_bench"', b'"resp_bench_%d"' % n)
    body = body.replace(b'"msg_bench"', b'"msg_bench_%d"' % n)
    headers = [(k, v) for k, v in response.headers.items() if k.lower() != "content-length"]
    return httpx.Response(response.status_code, headers=headers, content=body)


class _UniqueIds(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if not request.url.path.endswith("/responses"):
            return response
        return _unique_ids(response, response.read())


class _AsyncUniqueIds(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if not request.url.path.endswith("/responses"):
            return response
        return _unique_ids(response, await response.aread())


@dataclass
class Drive:
    """One framework run: its id at the fake upstream and the HTTP hooks that tag steps."""

    name: str
    api: str
    base: str
    steps: int
    calls: int = 0
    tool_calls: int = 0
    compactions: int = 0
    finished: bool = False

    def __post_init__(self) -> None:
        self.run = f"{self.api}-{self.name}-{time.monotonic_ns()}"

    def _tag(self, request: httpx.Request) -> None:
        request.headers["x-bench-run"] = self.run
        request.headers["x-bench-steps"] = str(self.steps)
        request.headers["x-bench-step"] = str(self.calls)
        self.calls += 1

    async def _atag(self, request: httpx.Request) -> None:
        self._tag(request)

    def http(self, lib: Any = httpx) -> Any:
        """An HTTP client that tags each request (``lib``: the SDK's httpx: the anthropic
        SDK 2.x takes only ``httpx2`` clients)."""
        kw: dict[str, Any] = {"event_hooks": {"request": [self._tag]}, "timeout": 120}
        if lib is httpx:
            kw["transport"] = _UniqueIds(httpx.HTTPTransport())
        return lib.Client(**kw)

    def ahttp(self, lib: Any = httpx) -> Any:
        kw: dict[str, Any] = {"event_hooks": {"request": [self._atag]}, "timeout": 120}
        if lib is httpx:
            kw["transport"] = _AsyncUniqueIds(httpx.AsyncHTTPTransport())
        return lib.AsyncClient(**kw)

    def bash(self, cmd: str) -> str:
        self.tool_calls += 1
        return bash_result(cmd)

    def on_compact(self, result: Any) -> None:
        self.compactions += 1

    def openai(self, *, sync: bool = False) -> Any:
        import openai

        cls = openai.OpenAI if sync else openai.AsyncOpenAI
        http = self.http() if sync else self.ahttp()
        return cls(base_url=self.base + "/v1", api_key="sk-bench", max_retries=0, http_client=http)

    def anthropic(self, *, sync: bool = False) -> Any:
        import anthropic

        lib = _sdk_httpx(anthropic)
        cls = anthropic.Anthropic if sync else anthropic.AsyncAnthropic
        http = self.http(lib) if sync else self.ahttp(lib)
        return cls(base_url=self.base, api_key="sk-ant-bench", max_retries=0, http_client=http)


def _sdk_httpx(sdk: Any) -> Any:
    """The httpx package an SDK's clients are built on (httpx, or its fork httpx2)."""
    import importlib

    return importlib.import_module("httpx2" if hasattr(sdk._base_client, "httpx2") else "httpx")


def adapter_options(api: str, window: int, low: float) -> dict[str, Any]:
    """The plain loop's budget, window, reserve, low and profile, for an adapter."""
    reserve = MAX_TOKENS if api == "messages" else 0
    return {
        "budget": min(int(window * 0.9), window - reserve),
        "window": window,
        "reserve": reserve,
        "low": low,
        "profile": "anthropic" if api == "messages" else "openai",
    }


# --------------------------------------------------------------------------- frameworks


def run_langchain(d: Drive, opts: dict[str, Any]) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from glyphfold.integrations.langchain import GlyphfoldMiddleware

    @tool
    def bash(cmd: str) -> str:
        """Run a shell command in the repository and return its output."""
        return d.bash(cmd)

    if d.api == "messages":
        from langchain_anthropic import ChatAnthropic

        model: Any = ChatAnthropic(
            model=MODEL, api_key="sk-ant-bench", max_tokens=MAX_TOKENS, max_retries=0
        )
        # ChatAnthropic builds its SDK clients itself; these carry the step hook
        model.__dict__["_client"] = d.anthropic(sync=True)
        model.__dict__["_async_client"] = d.anthropic()
    else:
        from langchain_openai import ChatOpenAI

        model = ChatOpenAI(
            model=MODEL,
            base_url=d.base + "/v1",
            api_key="sk-bench",
            max_retries=0,
            http_client=d.http(),
            use_responses_api=d.api == "responses",
        )
    middleware: list[Any] = [GlyphfoldMiddleware(on_compact=d.on_compact, **opts)]
    if d.api == "messages":
        # a LangChain user who wants Anthropic's prompt cache turns it on (the newest
        # message marked each turn, as the bench's own client and Claude Code do)
        from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware

        middleware.append(AnthropicPromptCachingMiddleware())
    agent = create_agent(model, [bash], system_prompt=SYSTEM, middleware=middleware)
    state = agent.invoke(
        {"messages": [{"role": "user", "content": TASK}]},
        {"recursion_limit": 4 * d.steps + 40},
    )
    last = state["messages"][-1]
    d.finished = last.type == "ai" and not getattr(last, "tool_calls", None)


def run_openai_agents(d: Drive, opts: dict[str, Any]) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool

    from glyphfold.integrations.openai_agents import GlyphfoldInputFilter

    @function_tool
    def bash(cmd: str) -> str:
        """Run a shell command in the repository and return its output."""
        return d.bash(cmd)

    model: Any
    if d.api == "responses":  # the SDK's default model class
        from agents import OpenAIResponsesModel

        model = OpenAIResponsesModel(model=MODEL, openai_client=d.openai())
    else:
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=d.openai())
    agent = Agent(name="coder", instructions=SYSTEM, model=model, tools=[bash])
    filt = GlyphfoldInputFilter(on_compact=d.on_compact, **opts)
    config = RunConfig(call_model_input_filter=filt, tracing_disabled=True)
    result = asyncio.run(Runner.run(agent, TASK, run_config=config, max_turns=d.steps + 5))
    d.finished = bool(result.final_output)


def run_pydantic_ai(d: Drive, opts: dict[str, Any]) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.usage import UsageLimits

    from glyphfold.integrations.pydantic_ai import GlyphfoldHistory

    if d.api == "messages":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        model: Any = AnthropicModel(
            MODEL, provider=AnthropicProvider(anthropic_client=d.anthropic())
        )
    else:
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        cls = OpenAIResponsesModel if d.api == "responses" else OpenAIChatModel
        model = cls(MODEL, provider=OpenAIProvider(openai_client=d.openai()))
    history = GlyphfoldHistory(on_compact=d.on_compact, **opts)
    settings: Any = ModelSettings(max_tokens=MAX_TOKENS)
    if d.api == "messages":
        from pydantic_ai.models.anthropic import AnthropicModelSettings

        # pydantic-ai's own switch for Anthropic's prompt cache on the newest message
        settings = AnthropicModelSettings(max_tokens=MAX_TOKENS, anthropic_cache_messages=True)
    agent = Agent(
        model,
        instructions=SYSTEM,
        capabilities=[history.capability()],
        model_settings=settings,
    )

    @agent.tool_plain
    def bash(cmd: str) -> str:
        """Run a shell command in the repository and return its output."""
        return d.bash(cmd)

    result = agent.run_sync(TASK, usage_limits=UsageLimits(request_limit=d.steps + 5))
    d.finished = bool(result.output)


def run_smolagents(d: Drive, opts: dict[str, Any]) -> None:
    from smolagents import OpenAIServerModel, Tool, ToolCallingAgent
    from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction

    from glyphfold.integrations.smolagents import GlyphfoldModel

    class Bash(Tool):
        name = "bash"
        description = TOOL_DOC
        inputs = {"cmd": {"type": "string", "description": "the command"}}  # noqa: RUF012
        output_type = "string"

        def forward(self, cmd: str) -> str:
            return d.bash(cmd)

    class Finishing(OpenAIServerModel):
        """The scripted model ends with text; a smolagents agent ends with final_answer."""

        def generate(self, *args: Any, **kwargs: Any) -> Any:
            msg = super().generate(*args, **kwargs)
            if not msg.tool_calls:
                fn = ChatMessageToolCallFunction(
                    name="final_answer", arguments={"answer": msg.content or "done"}
                )
                msg.tool_calls = [ChatMessageToolCall(function=fn, id="final", type="function")]
            return msg

    inner = Finishing(
        model_id=MODEL,
        api_base=d.base + "/v1",
        api_key="sk-bench",
        client_kwargs={"http_client": d.http(), "max_retries": 0},
    )
    model = GlyphfoldModel(inner, on_compact=d.on_compact, **opts)
    agent = ToolCallingAgent(
        tools=[Bash()],
        model=model,
        max_steps=d.steps + 3,
        verbosity_level=0,
    )
    # the loop's own system prompt, not smolagents' ~850-token default (the same loop as
    # the plain one; the tool schemas still go with every request)
    agent.prompt_templates["system_prompt"] = SYSTEM
    out = agent.run(TASK)
    d.finished = bool(out) and d.tool_calls >= d.steps


def run_llamaindex(d: Drive, opts: dict[str, Any]) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool

    from glyphfold.integrations.llamaindex import GlyphfoldLLM

    def bash(cmd: str) -> str:
        """Run a shell command in the repository and return its output."""
        return d.bash(cmd)

    # LlamaIndex asks the model name for its window: a real one (the fake ignores it)
    llm: Any
    if d.api == "messages":
        from llama_index.llms.anthropic import Anthropic

        llm = Anthropic(
            model="claude-sonnet-4-5", api_key="sk-ant-bench", max_tokens=MAX_TOKENS, max_retries=0
        )
        llm._client = d.anthropic(sync=True)  # the SDK clients with the step hook
        llm._aclient = d.anthropic()
    else:
        from llama_index.llms.openai import OpenAI

        llm = OpenAI(
            model="gpt-4o",
            api_base=d.base + "/v1",
            api_key="sk-bench",
            max_retries=0,
            http_client=d.http(),
            async_http_client=d.ahttp(),
        )
    wrapped = GlyphfoldLLM(llm, on_compact=d.on_compact, **opts)
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(fn=bash)], llm=wrapped, system_prompt=SYSTEM
    )

    async def main() -> Any:
        return await agent.run(TASK, max_iterations=d.steps + 5)

    out = asyncio.run(main())
    d.finished = bool(str(out.response.content or ""))


class Calls:
    """Every ``Compactor`` call of a run: (compactor, history, tools, action), to replay the
    same histories through a fresh plain ``Compactor`` and compare what it does."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, Any, Any, str]] = []
        self._orig: Any = None

    def __enter__(self) -> Calls:
        from glyphfold.compaction.ladder.compactor import Compactor

        orig = self._orig = Compactor.__call__
        seen = self.seen

        def recording(c: Any, history: Any, *, tools: Any = None, digests: Any = None) -> Any:
            fitted = orig(c, history, tools=tools, digests=digests)
            seen.append((c, history, tools, fitted.action))
            return fitted

        Compactor.__call__ = recording  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        from glyphfold.compaction.ladder.compactor import Compactor

        Compactor.__call__ = self._orig  # type: ignore[method-assign]

    def replay(self) -> tuple[int, bool]:
        """(compactions, same actions): a fresh plain Compactor with the adapter's options
        fed the histories the framework handed the adapter, in order."""
        from glyphfold import Compactor

        if not self.seen:
            return 0, False
        c0 = self.seen[0][0]
        plain = Compactor(
            c0.budget,
            window=c0.window,
            reserve=c0.reserve,
            low=c0.low,
            profile=c0.profile,
            counter=c0.counter,
            **c0.options,
        )
        actions = [plain(h, tools=t).action for _, h, t, _ in self.seen]
        return actions.count("compact"), actions == [a for *_, a in self.seen]


RUNNERS: dict[str, Callable[[Drive, dict[str, Any]], None]] = {
    "langchain": run_langchain,
    "openai-agents": run_openai_agents,
    "pydantic-ai": run_pydantic_ai,
    "smolagents": run_smolagents,
    "llamaindex": run_llamaindex,
}


def run_framework(
    name: str, api: str, *, direct: str, steps: int, window: int, low: float
) -> Result:
    d = Drive(name, api, direct, steps)
    res = Result(api, name)
    calls = Calls()
    try:
        with warnings.catch_warnings(), calls:
            warnings.simplefilter("ignore")
            RUNNERS[name](d, adapter_options(api, window, low))
    except Exception as exc:  # a failed run is a result (the table says why)
        res.error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
        if os.environ.get("BENCH_TRACE"):
            traceback.print_exc()
    res.steps = d.tool_calls
    res.finished = d.finished and not res.error
    res.compactions = d.compactions
    res.priced = httpx.get(f"{direct}/runs/{d.run}", timeout=30).json()
    if calls.seen:
        n, same = calls.replay()
        res.replay = f"{n}, {'same' if same else 'DIFFERENT'} actions"  # type: ignore[attr-defined]
    return res


def _row(api: str, r: Result, steps: int, base: Result | None) -> str:
    rel = r.cost / base.cost if base is not None and base.cost else float("nan")
    ok = [p for p in r.priced if p["accepted"]]
    first = r.priced[0]["tokens"] if r.priced else 0
    return (
        f"| {api} | {r.mode} | {r.steps}/{steps}{'' if r.finished else ' (failed)'} | "
        f"{len(ok)}/{len(r.priced)} | {first:,} | {r.compactions} | "
        f"{getattr(r, 'replay', '')} | {r.share:.3f} | {rel:.2f} | {r.error} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--window", type=int, default=64_000)
    ap.add_argument("--low", type=float, default=None, help="the low watermark (all runs)")
    ap.add_argument(
        "--apis",
        default="chat,responses,messages",
        help="comma-separated: chat, responses, messages",
    )
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    args = ap.parse_args(argv)
    from glyphfold.compaction.ladder.compactor import DEFAULT_LOW_WATERMARK

    low = args.low if args.low is not None else DEFAULT_LOW_WATERMARK
    wanted = args.frameworks.split(",")
    port = _port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fake = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "loop_upstream.py"),
            "--port",
            str(port),
            "--window",
            str(args.window),
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        direct = f"http://127.0.0.1:{port}"
        _wait(direct + "/v1/models")
        print(
            f"window {args.window:,} tokens, {args.steps} steps of 2-8k-token tool results, "
            f"low {low}, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        print(
            "| api | loop | steps | requests accepted | first request (tokens) | compactions | "
            "plain Compactor on the same histories | repeated share (median last 10) | "
            "cost (x self) | error |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for api in args.apis.split(","):
            kw = {"direct": direct, "via": direct, "steps": args.steps, "window": args.window}
            base = run_loop(api, "self", low=low, **kw)
            plain = run_loop(api, "library", low=low, **kw)
            print(_row(api, base, args.steps, base), flush=True)
            print(_row(api, plain, args.steps, base), flush=True)
            shares = [plain.share]
            for name in CLIENTS.get(api, ()):
                if name not in wanted:
                    continue
                r = run_framework(
                    name, api, direct=direct, steps=args.steps, window=args.window, low=low
                )
                if r.finished:
                    shares.append(r.share)
                print(_row(api, r, args.steps, base), flush=True)
            spread = max(shares) - min(shares)
            print(f"{api}: repeated share spread over the finished glyphfold runs {spread:.3f}")
        print(f"load at the end {os.getloadavg()[0]:.1f}")
    finally:
        fake.terminate()
        try:
            fake.wait(10)
        except subprocess.TimeoutExpired:
            fake.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
