"""``glyphfold serve``: run the context-window proxy (docs/serve.md)."""

from __future__ import annotations

import argparse
import sys

_SWITCH_INTERVAL_S = 0.0005

HELP = "run an HTTP proxy that makes every OpenAI/Anthropic request fit its model's window"

_WARNING = """\
glyphfold serve: WARNING: listening on {host}, which is not a loopback address.
glyphfold serve: WARNING: anyone who can reach this port can send requests through it
glyphfold serve: WARNING: (with their own API keys) and read /metrics. Put it behind a
glyphfold serve: WARNING: firewall or an authenticating load balancer (docs/serve.md)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, help="port to listen on (default 8787)")
    parser.add_argument(
        "--openai-upstream",
        metavar="URL",
        help="where OpenAI requests go (default https://api.openai.com; "
        "'none' disables the OpenAI routes)",
    )
    parser.add_argument(
        "--anthropic-upstream",
        metavar="URL",
        help="where Anthropic requests go (default https://api.anthropic.com; "
        "'none' disables the Anthropic routes)",
    )
    parser.add_argument(
        "--window",
        action="append",
        default=[],
        metavar="MODEL=TOKENS",
        help="context window of a model, overriding the built-in table (repeatable)",
    )
    parser.add_argument(
        "--budget-ratio",
        type=float,
        metavar="R",
        help="compact when a request exceeds window x R (default 0.9)",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="commit every conversation to this transcript store "
        "(sqlite:///path.db or postgresql://...)",
    )
    parser.add_argument("--config", metavar="FILE", help="a TOML config file (docs/serve.md)")
    parser.add_argument(
        "--event-log", metavar="FILE", help="append one JSON line per request here ('-' for stderr)"
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default info)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from glyphfold.serve import create_app, load_config
        from glyphfold.serve.config import is_loopback, parse_window
        from glyphfold.serve.server import uvicorn_options
    except ImportError as exc:
        print(
            f"glyphfold serve: error: {exc.name} is not installed: pip install 'glyphfold[serve]'",
            file=sys.stderr,
        )
        return 2
    from glyphfold.serve.summary import build_summarizer

    windows = dict(parse_window(w) for w in args.window)
    cfg = load_config(
        args.config,
        host=args.host,
        port=args.port,
        openai_upstream=args.openai_upstream,
        anthropic_upstream=args.anthropic_upstream,
        windows=windows,
        budget_ratio=args.budget_ratio,
        db=args.db,
        event_log=args.event_log,
    )
    if not is_loopback(cfg.host):
        print(_WARNING.format(host=cfg.host), file=sys.stderr)
    app = create_app(cfg, summarizer=build_summarizer(cfg))
    proxy = app.state.proxy
    if proxy.recorder is not None:
        proxy.recorder.open()  # a bad --db fails now, with one line
    routes = ", ".join(f"{p}={u.where}" for p, u in sorted(proxy.upstreams.items())) or "none"
    print(f"glyphfold serve: http://{cfg.host}:{cfg.port} -> {routes}", file=sys.stderr)
    # the app's start-up warms pricing and the renderer on threads (Proxy.warm_up)
    # compactions hold the GIL in worker threads; the event loop waits up to the switch
    # interval each time it wants it back (5 ms by default, many times per request): a
    # shorter interval keeps requests that need no compaction fast while compactions run
    sys.setswitchinterval(_SWITCH_INTERVAL_S)
    uvicorn.run(app, **uvicorn_options(cfg), log_level=args.log_level)
    return 0
