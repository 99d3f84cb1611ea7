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


def _check_files(config: str | None, event_log: str | None) -> None:
    """--config must be a readable file and --event-log's folder must exist: one line each."""
    import os
    from pathlib import Path

    from glyphfold.errors import InputError

    if config is not None:
        path = Path(config)
        if not path.is_file():
            why = "is a folder" if path.is_dir() else "does not exist"
            msg = f"--config {config} {why}; give the path of a TOML file (docs/serve.md)"
            raise InputError(msg)
        if not os.access(path, os.R_OK):
            msg = f"--config {config} cannot be read (permission denied)"
            raise InputError(msg)
    if event_log not in (None, "-"):
        log = Path(event_log)
        folder = log.parent
        if log.is_dir():
            msg = f"--event-log {event_log} is a folder; give a file name (or - for stderr)"
            raise InputError(msg)
        if not folder.is_dir():
            msg = (
                f"--event-log {event_log}: folder {folder} does not exist "
                "(glyphfold creates no missing folders; create it first)"
            )
            raise InputError(msg)
        if not os.access(log if log.exists() else folder, os.W_OK):
            msg = f"--event-log {event_log} cannot be written (permission denied)"
            raise InputError(msg)


def _check_port(host: str, port: int) -> None:
    """Bind the address once before uvicorn does: a port in use is one line, not seven."""
    import errno
    import socket

    from glyphfold.errors import InputError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        msg = f"--host {host}: cannot resolve it ({exc.strerror})"
        raise InputError(msg) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                msg = (
                    f"port {port} on {host} is already in use (another glyphfold serve?); "
                    "stop it or choose another port with --port N"
                )
            else:
                msg = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            raise InputError(msg) from None


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

    _check_files(args.config, args.event_log)
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
    _check_files(None, cfg.event_log)  # also when the config file names it
    _check_port(cfg.host, cfg.port)
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
