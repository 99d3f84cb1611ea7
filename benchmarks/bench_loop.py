"""An agent tool loop that outgrows its window, as a user runs it (issue 19, SPEC §5.10).

Run: ``python benchmarks/bench_loop.py`` (options: ``--steps``, ``--window``, ``--apis``,
``--low``). A scripted model (:mod:`loop_upstream`) sits behind a loopback fake upstream
in its own process; ``glyphfold serve`` runs in another; the official ``openai`` and
``anthropic`` SDKs drive a tool loop of ``--steps`` steps whose tool results are 2-8k
tokens each. For every API (Chat Completions and Anthropic Messages, streamed or not;
Responses) three runs of the same loop:

- ``self``: straight to the upstream; the harness compacts by itself, as Claude Code or
  Codex do: past 80% of the window it asks the model for a summary (one model call over
  the whole history) and goes on from the task plus that summary;
- ``serve``: through ``glyphfold serve``; the client sends its whole history every step;
- ``library``: straight to the upstream, the history fitted by a ``glyphfold.Compactor``
  in the client's own loop (the same budget as the proxy's).

Per run: steps finished, compactions, the share of each request's tokens that repeats the
previous request's leading blocks (median of the last 10), the cost under Anthropic's
cache prices as each provider caches (:class:`loop_upstream.Pricer`: breakpoints and the
20-block lookback for Anthropic, automatic prefixes for OpenAI; read 0.1x, write 1.25x,
plain 1x, output 5x the base input price) relative to ``self`` in the same process run,
and (``serve``) the proxy's added time p50/p90 over all requests from its
``server-timing`` header. The Anthropic client marks its requests as Claude Code does
(:func:`marked`), in every mode.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import httpx  # noqa: E402
from local_servers import free_port, wait_up  # noqa: E402
from loop_upstream import count_tokens  # noqa: E402

MODEL = "fake-model"
MAX_TOKENS = 4_096
SYSTEM = "You are a careful coding agent. Use the bash tool to inspect and fix the repository."
TASK = "The parser in src/ fails on nested quotes; find the cause, fix it and run the tests."
TOOL = {
    "name": "bash",
    "description": "Run a shell command in the repository and return its output.",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string", "description": "the command"}},
        "required": ["cmd"],
    },
}
SUMMARY_SYSTEM = "You are a helpful assistant tasked with summarizing conversations."
SELF_COMPACT_AT = 0.8  # the harness summarizes past this share of the window
_WORDS = [
    "parser",
    "token",
    "quote",
    "nested",
    "escape",
    "buffer",
    "state",
    "index",
    "value",
    "error",
    "line",
    "column",
    "source",
    "config",
    "module",
    "handler",
    "stream",
    "window",
    "budget",
    "header",
    "client",
    "request",
    "result",
    "cache",
]


def tool_output(step: int) -> str:
    """A deterministic 2-8k-token tool result: source code, then a test log."""
    rng = random.Random(step)
    chars = rng.randint(2_000, 8_000) * 4
    lines: list[str] = []
    n = 0
    while n < chars:
        k = len(lines)
        if rng.random() < 0.7:
            name = "_".join(rng.sample(_WORDS, 2))
            body = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 9)))
            line = f"    def {name}_{k}(self, {rng.choice(_WORDS)}):  # {body}"
        else:
            line = (
                f"tests/test_{rng.choice(_WORDS)}.py::test_{rng.choice(_WORDS)}_{k} "
                f"{rng.choice(['PASSED', 'PASSED', 'FAILED'])} [{k % 100:3d}%]"
            )
        lines.append(line)
        n += len(line) + 1
    return f"$ cat src/module_{step}.py\n" + "\n".join(lines)


@dataclass
class Result:
    api: str
    mode: str
    steps: int = 0
    compactions: int = 0
    finished: bool = False
    error: str = ""
    added_ms: list[float] = field(default_factory=list)
    priced: list[dict[str, Any]] = field(default_factory=list)

    @property
    def cost(self) -> float:
        return sum(p["cost"] for p in self.priced)

    @property
    def share(self) -> float:
        ok = [p["share"] for p in self.priced if p["accepted"]][1:]
        return statistics.median(ok[-10:]) if ok else 0.0

    def parts(self) -> dict[str, float]:
        """The cost in base-input units by what it paid for (``--breakdown``)."""
        from loop_upstream import CACHE_READ, CACHE_WRITE, OUTPUT

        ok = [p for p in self.priced if p["accepted"]]
        return {
            "read": sum(p["cached"] for p in ok) * CACHE_READ,
            "write": sum(p["written"] for p in ok) * CACHE_WRITE,
            "plain": float(sum(p["uncached"] for p in ok)),
            "output": sum(p["output"] for p in ok) * OUTPUT,
        }


# --------------------------------------------------------------------------- histories


class Conversation:
    """A client's own history in one API's wire format, and one model call."""

    def __init__(self, api: str, base: str, run: str, steps: int) -> None:
        import anthropic
        import openai

        self.api = api
        self.run = run
        self.steps = steps
        headers = {"x-bench-run": run, "x-bench-steps": str(steps)}
        if api.startswith("messages"):
            self.client: Any = anthropic.Anthropic(
                base_url=base, api_key="sk-ant-bench", max_retries=0, default_headers=headers
            )
            self.messages: list[Any] = [{"role": "user", "content": TASK}]
        else:
            self.client = openai.OpenAI(
                base_url=base + "/v1", api_key="sk-bench", max_retries=0, default_headers=headers
            )
            if api == "responses":
                self.messages = [{"role": "user", "content": TASK}]
            else:
                self.messages = [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": TASK},
                ]

    @property
    def stream(self) -> bool:
        return self.api.endswith("-stream")

    def history(self) -> Any:
        """The request's history as the harness sends it (Anthropic: with Claude Code's
        prompt-cache breakpoints, on the system prompt and on the newest message)."""
        if self.api.startswith("messages"):
            return marked({"system": SYSTEM, "messages": self.messages})
        return self.plain_history()

    def plain_history(self) -> Any:
        if self.api.startswith("messages"):
            return {"system": SYSTEM, "messages": self.messages}
        if self.api == "responses":
            return {"instructions": SYSTEM, "input": self.messages}
        return self.messages

    def tools(self) -> list[Any]:
        if self.api.startswith("messages"):
            return [
                {
                    "name": TOOL["name"],
                    "description": TOOL["description"],
                    "input_schema": TOOL["parameters"],
                }
            ]
        if self.api == "responses":
            return [{"type": "function", **TOOL}]
        return [{"type": "function", "function": TOOL}]

    def tokens(self, history: Any = None) -> int:
        h = self.history() if history is None else history
        body = dict(h) if isinstance(h, dict) else {"messages": h}
        body["tools"] = self.tools()
        return count_tokens(body, "anthropic" if self.api.startswith("messages") else "openai")

    def call(self, history: Any, step: int, *, tools: bool = True) -> tuple[Any, dict[str, str]]:
        """One model call with ``history``: (the reply, response headers)."""
        extra = {"x-bench-step": str(step)}
        schemas = self.tools() if tools else []
        if self.api.startswith("messages"):
            kw = dict(
                model=MODEL,
                max_tokens=MAX_TOKENS,
                system=history["system"],
                messages=history["messages"],
                tools=schemas,
                extra_headers=extra,
            )
            if self.stream:
                with self.client.messages.with_streaming_response.create(**kw, stream=True) as raw:
                    headers = dict(raw.headers)
                    events = list(raw.parse())
                blocks = _anthropic_blocks(events)
                return blocks, headers
            raw = self.client.messages.with_raw_response.create(**kw)
            msg = raw.parse()
            return [b.model_dump(exclude_none=True) for b in msg.content], dict(raw.headers)
        if self.api == "responses":
            raw = self.client.responses.with_raw_response.create(
                model=MODEL,
                instructions=history["instructions"],
                input=history["input"],
                tools=schemas,
                extra_headers=extra,
            )
            resp = raw.parse()
            return [o.model_dump(exclude_none=True) for o in resp.output], dict(raw.headers)
        kw = dict(model=MODEL, messages=history, tools=schemas, extra_headers=extra)
        if self.stream:
            with self.client.chat.completions.with_streaming_response.create(
                **kw, stream=True
            ) as raw:
                headers = dict(raw.headers)
                chunks = list(raw.parse())
            return _chat_message(chunks), headers
        raw = self.client.chat.completions.with_raw_response.create(**kw)
        m = raw.parse().choices[0].message
        return m.model_dump(exclude_none=True), dict(raw.headers)

    def extend(self, reply: Any, step: int) -> bool:
        """Append the reply and, for a tool call, its result; False when the model is done."""
        if self.api.startswith("messages"):
            self.messages.append({"role": "assistant", "content": reply})
            uses = [b for b in reply if b.get("type") == "tool_use"]
            if not uses:
                return False
            self.messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": uses[0]["id"],
                            "content": tool_output(step),
                        }
                    ],
                }
            )
            return True
        if self.api == "responses":
            calls = [o for o in reply if o.get("type") == "function_call"]
            for o in reply:
                item = {k: v for k, v in o.items() if k not in ("status",)}
                self.messages.append(item)
            if not calls:
                return False
            self.messages.append(
                {
                    "type": "function_call_output",
                    "call_id": calls[0]["call_id"],
                    "output": tool_output(step),
                }
            )
            return True
        msg = {"role": "assistant", "content": reply.get("content")}
        calls = reply.get("tool_calls") or []
        if calls:
            msg["tool_calls"] = calls
        self.messages.append(msg)
        if not calls:
            return False
        self.messages.append(
            {"role": "tool", "tool_call_id": calls[0]["id"], "content": tool_output(step)}
        )
        return True

    def summarize(self, step: int) -> None:
        """The harness compacts by itself: one model call for a summary, then task + summary."""
        ask = "SUMMARIZE the conversation so far for a continuation; keep paths and findings."
        # a one-off request: no breakpoints (nothing would read them; plain input, 1x)
        h = self.plain_history()
        if self.api.startswith("messages"):
            msgs = list(h["messages"])
            last = msgs[-1]
            content = last["content"] if isinstance(last["content"], list) else []
            msgs[-1] = {**last, "content": [*content, {"type": "text", "text": ask}]}
            h = {**h, "messages": msgs}
        elif self.api == "responses":
            h = {**h, "input": [*h["input"], {"role": "user", "content": ask}]}
        else:
            h = [*h, {"role": "user", "content": ask}]
        # like Claude Code's and Codex's compaction: its own system prompt, no tools, so
        # the summary request starts differently from the loop's (no prompt-cache hit)
        if self.api.startswith("messages"):
            h = {**h, "system": SUMMARY_SYSTEM}
        elif self.api == "responses":
            h = {**h, "instructions": SUMMARY_SYSTEM}
        else:
            h = [{"role": "system", "content": SUMMARY_SYSTEM}, *h[1:]]
        reply, _ = self.call(h, step, tools=False)
        summary = _text_of(reply)
        self.messages = (
            [{"role": "system", "content": SYSTEM}] if self.api.startswith("chat") else []
        )
        self.messages.append({"role": "user", "content": f"{TASK}\n\n{summary}"})


EPHEMERAL = {"type": "ephemeral"}


def marked(history: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic request's history with breakpoints where Claude Code puts them: the
    system prompt and the last block of the newest message (a copy; it moves every turn)."""
    system = [{"type": "text", "text": history["system"], "cache_control": EPHEMERAL}]
    msgs = list(history["messages"])
    if msgs:
        last = msgs[-1]
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        content = [*content[:-1], {**content[-1], "cache_control": EPHEMERAL}]
        msgs[-1] = {**last, "content": content}
    return {**history, "system": system, "messages": msgs}


def _text_of(reply: Any) -> str:
    if isinstance(reply, dict):
        return str(reply.get("content") or "")
    out = []
    for b in reply:
        if b.get("type") == "text":
            out.append(b["text"])
        for c in b.get("content") or []:
            if isinstance(c, dict) and c.get("type") == "output_text":
                out.append(c["text"])
    return "".join(out)


def _anthropic_blocks(events: list[Any]) -> list[dict[str, Any]]:
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for ev in events:
        t = getattr(ev, "type", "")
        if t == "content_block_start":
            blocks[ev.index] = ev.content_block.model_dump(exclude_none=True)
        elif t == "content_block_delta":
            d = ev.delta
            if d.type == "input_json_delta":
                partial[ev.index] = partial.get(ev.index, "") + d.partial_json
            elif d.type == "text_delta":
                blocks[ev.index]["text"] = blocks[ev.index].get("text", "") + d.text
    for i, js in partial.items():
        blocks[i]["input"] = json.loads(js)
    return [blocks[i] for i in sorted(blocks)]


def _chat_message(chunks: list[Any]) -> dict[str, Any]:
    content = ""
    calls: dict[int, dict[str, Any]] = {}
    for c in chunks:
        if not c.choices:
            continue
        d = c.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            cur = calls.setdefault(
                tc.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
            )
            if tc.id:
                cur["id"] = tc.id
            if tc.function and tc.function.name:
                cur["function"]["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                cur["function"]["arguments"] += tc.function.arguments
    out: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        out["tool_calls"] = [calls[i] for i in sorted(calls)]
    return out


# --------------------------------------------------------------------------- the loops


def run_loop(
    api: str, mode: str, *, direct: str, via: str, steps: int, window: int, low: float
) -> Result:
    import glyphfold

    run = f"{api}-{mode}-{time.monotonic_ns()}"
    conv = Conversation(api, via if mode == "serve" else direct, run, steps)
    res = Result(api, mode)
    compactor = None
    if mode == "library":
        overhead = -(-len(json.dumps(conv.tools(), separators=(",", ":"))) // 4)
        reserve = MAX_TOKENS if api.startswith("messages") else 0
        budget = min(int(window * 0.9), window - reserve) - overhead
        compactor = glyphfold.Compactor(
            budget,
            window=window - overhead,
            reserve=reserve,
            low=low,
            profile="anthropic" if api.startswith("messages") else "openai",
        )
    try:
        for step in range(steps + 1):
            history = conv.history()
            if mode == "self" and conv.tokens() + MAX_TOKENS > SELF_COMPACT_AT * window:
                conv.summarize(step)
                res.compactions += 1
                history = conv.history()
            if compactor is not None:
                fitted = compactor(history)
                res.compactions += fitted.compactions
                history = fitted.messages
            reply, headers = conv.call(history, step)
            if mode == "serve":
                if headers.get("x-glyphfold-cache") == "compact":
                    res.compactions += 1
                timing = dict(re.findall(r"(\w+);dur=([0-9.]+)", headers.get("server-timing", "")))
                if "glyphfold" in timing:
                    res.added_ms.append(float(timing["glyphfold"]))
            if not conv.extend(reply, step):
                res.finished = True
                break
            res.steps = step + 1
    except Exception as exc:  # a failed run is a result (the table says why)
        res.error = f"{type(exc).__name__}: {str(exc)[:120]}"
    res.priced = httpx.get(f"{direct}/runs/{run}", timeout=30).json()
    return res


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


REALDATA = Path(os.environ.get("GLYPHFOLD_REALDATA", "/work/shared/realdata"))


def real_sessions(lows: list[float], *, fraction: float = 0.4) -> None:
    """Replay the real sessions' model calls through a Compactor, one run per ``low``.

    The budget is ``fraction`` of each session's final size (so it outgrows it); every
    model call (each prefix that ends before an assistant message) is priced by the fake
    upstream's rules. Prints, per ``low``: compactions, model calls per compaction, the
    median repeated share and the cost under cache prices relative to the first ``low``.
    """
    from loop_upstream import Pricer

    import glyphfold

    files = sorted(p for p in REALDATA.glob("*.openai.json") if "__plain" not in p.name)
    if not files:
        print(f"no real sessions in {REALDATA}; skipped")
        return
    sessions = []
    for f in files:
        msgs = json.loads(f.read_text())
        calls = [i for i, m in enumerate(msgs) if m.get("role") == "assistant" and i > 1]
        size = count_tokens({"messages": msgs}, "openai")
        if len(calls) >= 10 and size >= 12_000:
            sessions.append((f.name, msgs, calls, size))
    print(f"{len(sessions)} real sessions (>= 10 model calls, >= 12k tokens), budget {fraction}x")
    print("| low | compactions | calls per compaction | repeated share (median) | cost (x first) |")
    print("|---|---|---|---|---|")
    first = None
    for low in lows:
        compactions = calls_total = 0
        shares: list[float] = []
        cost = 0.0
        for _name, msgs, calls, size in sessions:
            budget = max(4_000, int(size * fraction))
            # the window is the hard limit: a step bigger than the budget still goes through
            c = glyphfold.Compactor(budget, window=max(size, budget), low=low, profile="openai")
            pricer = Pricer("openai")
            for i in calls:
                fitted = c(msgs[:i])
                compactions += fitted.compactions
                calls_total += 1
                priced = pricer.price({"messages": fitted.messages}, output=30)
                cost += priced.cost
                shares.append(priced.share)
        first = first or cost
        per = calls_total / compactions if compactions else float("inf")
        print(
            f"| {low} | {compactions} | {per:.1f} | {statistics.median(shares):.3f} | "
            f"{cost / first:.2f} |",
            flush=True,
        )


def run_mini(mini: str, *, direct: str, via: str) -> None:
    """mini-swe-agent (a real harness CLI, ``pip install mini-swe-agent``) against the
    scripted model: straight to the upstream, then through ``glyphfold serve``.

    The model asks for a ~12k-char command output per step for 30 steps, then submits.
    mini-swe-agent has no compaction of its own, so there is no self-compacting run to
    price against: the table gives its cost in base-input-token units.
    """
    import tempfile

    print("| harness | route | model calls | finished | share (median last 10) | cost | error |")
    print("|---|---|---|---|---|---|---|")
    for route, base in (("direct", direct), ("serve", via)):
        model = f"mini-{route}"
        with tempfile.TemporaryDirectory() as cwd:
            env = {
                **os.environ,
                "MSWEA_CONFIGURED": "true",
                "MSWEA_COST_TRACKING": "ignore_errors",
                "OPENAI_API_KEY": "sk-bench",
            }
            cmd = [mini, "-m", f"openai/{model}", "-t", TASK, "-y", "-c", "mini.yaml"]
            cmd += ["-c", f"model.model_kwargs.api_base={base}/v1", "-c", "agent.cost_limit=0"]
            cmd += ["-c", "agent.step_limit=40", "-o", f"{cwd}/traj.json"]
            out = subprocess.run(
                cmd,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=900,
            )
            text = out.stdout + out.stderr
        priced = httpx.get(f"{direct}/runs/model:{model}", timeout=30).json()
        ok = [p for p in priced if p["accepted"]]
        finished = "Agent wants to finish" in text
        error = "" if finished else (re.findall(r"\w+Error: [^\n]{0,100}", text) or ["?"])[-1]
        share = statistics.median([p["share"] for p in ok][-10:]) if len(ok) > 1 else 0.0
        cost = sum(p["cost"] for p in priced)
        print(
            f"| mini-swe-agent | {route} | {len(ok)}/{len(priced)} | {finished} | {share:.3f} | "
            f"{cost:,.0f} | {error} |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--window", type=int, default=64_000)
    ap.add_argument("--low", type=float, default=None, help="the library run's low watermark")
    ap.add_argument(
        "--apis",
        default="chat,chat-stream,responses,messages,messages-stream",
        help="comma-separated: chat, chat-stream, responses, messages, messages-stream",
    )
    ap.add_argument("--modes", default="self,serve,library")
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="also print each run's cost by part (cache read, write, plain input, output)",
    )
    ap.add_argument(
        "--mini",
        default="",
        help="path of a mini-swe-agent 'mini' executable: run that harness instead",
    )
    ap.add_argument(
        "--real",
        default="",
        help="comma-separated low watermarks: replay the real sessions instead (no servers)",
    )
    args = ap.parse_args(argv)
    if args.real:
        real_sessions([float(x) for x in args.real.split(",")])
        return 0
    from glyphfold.compaction.ladder.compactor import DEFAULT_LOW_WATERMARK

    low = args.low if args.low is not None else DEFAULT_LOW_WATERMARK
    fport, pport = free_port(), free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fake = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "loop_upstream.py"),
            "--port",
            str(fport),
            "--window",
            str(args.window),
        ],
        cwd=ROOT,
        env=env,
    )
    proxy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "glyphfold",
            "serve",
            "--port",
            str(pport),
            "--openai-upstream",
            f"http://127.0.0.1:{fport}",
            "--anthropic-upstream",
            f"http://127.0.0.1:{fport}",
            "--window",
            f"{MODEL}={args.window}",
            "--window",
            f"mini-serve={args.window}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    rows = []
    try:
        direct, via = f"http://127.0.0.1:{fport}", f"http://127.0.0.1:{pport}"
        wait_up(direct + "/v1/models")
        wait_up(via + "/healthz")
        if args.mini:
            print(f"window {args.window:,} tokens, load {os.getloadavg()[0]:.1f}", flush=True)
            run_mini(args.mini, direct=direct, via=via)
            return 0
        print(
            f"window {args.window:,} tokens, {args.steps} steps of 2-8k-token tool results, "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        print(
            "| api | mode | steps | compactions | repeated share (median last 10) | "
            "cost (x self) | added p50 ms | added p90 ms | error |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for api in args.apis.split(","):
            results = {}
            for mode in args.modes.split(","):
                r = run_loop(
                    api,
                    mode,
                    direct=direct,
                    via=via,
                    steps=args.steps,
                    window=args.window,
                    low=low,
                )
                results[mode] = r
            base = results.get("self")
            for mode, r in results.items():
                rel = r.cost / base.cost if base is not None and base.cost else float("nan")
                row = (
                    f"| {api} | {mode} | {r.steps}/{args.steps}{'' if r.finished else ' (failed)'}"
                    f" | {r.compactions} | {r.share:.3f} | {rel:.2f} | "
                    f"{_pct(r.added_ms, 0.5):.1f} | {_pct(r.added_ms, 0.9):.1f} | {r.error} |"
                )
                rows.append(row)
                print(row, flush=True)
            if args.breakdown and base is not None and base.cost:
                # what every mode pays at least: each tool result written to the cache once
                new = sum(len(tool_output(k)) for k in range(base.steps)) / 4
                print(
                    f"    {api}: the tool results ({new:,.0f} tokens) written once at 1.25x: "
                    f"{new * 1.25:,.0f} units ({new * 1.25 / base.cost:.2f}x self)",
                    flush=True,
                )
                for mode, r in results.items():
                    parts = ", ".join(
                        f"{k} {v:,.0f} ({v / base.cost:.2f}x)" for k, v in r.parts().items()
                    )
                    print(f"    {api} {mode}: {r.cost:,.0f} units = {parts} of self", flush=True)
    finally:
        for p in (proxy, fake):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
