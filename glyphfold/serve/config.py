"""The proxy's configuration: typed, validated up front, from a TOML file and flags.

Precedence: built-in defaults < the ``--config`` file < command-line flags. Every
invalid value raises :class:`~glyphfold.errors.InputError` naming the setting and
the fix. The upstreams come from here only: no request can point the proxy
anywhere else.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from glyphfold.checks import check_int, check_number
from glyphfold.compaction.ladder.registry import model_free_rungs, registered_rungs
from glyphfold.errors import InputError

__all__ = [
    "DEFAULT_ANTHROPIC_UPSTREAM",
    "DEFAULT_OPENAI_UPSTREAM",
    "ServeConfig",
    "SummaryConfig",
    "is_loopback",
    "load_config",
    "parse_window",
]

DEFAULT_OPENAI_UPSTREAM = "https://api.openai.com"
DEFAULT_ANTHROPIC_UPSTREAM = "https://api.anthropic.com"


def _upstream(name: str, value: str | None) -> str | None:
    """A validated upstream base URL (scheme://host[:port][/prefix]), or None (disabled)."""
    if value is None or value == "none":
        return None
    if not isinstance(value, str):
        msg = f"{name} must be a URL string or 'none', got {value!r}"
        raise InputError(msg)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        msg = f"{name} must be an http:// or https:// URL with a host, got {value!r}"
        raise InputError(msg)
    if parts.username or parts.password:
        msg = f"{name} must not carry credentials; clients send their own keys"
        raise InputError(msg)
    if parts.query or parts.fragment:
        msg = f"{name} must not have a query or fragment, got {value!r}"
        raise InputError(msg)
    return value.rstrip("/")


@dataclass(frozen=True, slots=True)
class SummaryConfig:
    """The optional summary rung: which provider/model writes summaries, and its key.

    The key is read from the environment variable ``api_key_env`` when the proxy
    starts; the summary runs only in proactive compaction, never in recovery.
    """

    provider: str
    model: str
    api_key_env: str
    max_tokens: int = 2048

    def __post_init__(self) -> None:
        if self.provider not in ("openai", "anthropic"):
            msg = f"summary.provider must be 'openai' or 'anthropic', got {self.provider!r}"
            raise InputError(msg)
        for k in ("model", "api_key_env"):
            v = getattr(self, k)
            if not isinstance(v, str) or not v:
                msg = f"summary.{k} must be a non-empty string, got {v!r}"
                raise InputError(msg)
        check_int("summary.max_tokens", self.max_tokens, minimum=1)


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``glyphfold serve`` needs; see docs/serve.md for each setting."""

    host: str = "127.0.0.1"
    port: int = 8787
    openai_upstream: str | None = DEFAULT_OPENAI_UPSTREAM
    anthropic_upstream: str | None = DEFAULT_ANTHROPIC_UPSTREAM
    windows: Mapping[str, int] = field(default_factory=dict)  # model -> window tokens
    profiles: Mapping[str, str] = field(default_factory=dict)  # model -> render profile
    budget_ratio: float = 0.9  # proactive budget = window x ratio (SPEC §3.1)
    db: str | None = None  # transcript store URL
    event_log: str | None = None  # JSON-lines path; "-" = stderr
    max_body_bytes: int = 32 * 1024 * 1024
    max_retries: int = 1  # retries after an upstream context overflow
    # default: every model-free rung of the registry, in ladder order
    rungs: tuple[str, ...] = field(default_factory=model_free_rungs)
    summary: SummaryConfig | None = None
    cache_bytes: int = 256 * 1024 * 1024
    compact_workers: int = 2
    # where the ladder runs: "process" (compact_workers spawned processes, warmed at
    # start-up: the event loop never waits for the GIL) or "thread" (in this process)
    compact_in: str = "process"
    passthrough: bool = True  # other paths go upstream unchanged (else provider-shaped 404)
    warm_up: bool = True  # load pricing and the renderer on threads at start-up
    # with --db: "api-key" keeps each API key's conversations apart (a hash of the key
    # names its namespace); "shared" puts every client in one namespace
    conversation_scope: str = "api-key"
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 600.0  # between two chunks of an upstream response
    write_timeout_s: float = 60.0
    pool_timeout_s: float = 10.0
    max_connections: int = 200
    max_keepalive: int = 50
    # below the 5 s idle timeout of common servers (uvicorn, Node): a pooled connection is
    # dropped before the upstream closes it, never reused as it closes (a lost request)
    keepalive_expiry_s: float = 4.0
    client_keepalive_s: float = 75.0  # how long an idle client connection stays open
    learned_window_ttl_s: float = 3600.0  # a window learned from an overflow is forgotten after
    # what one client may hold (docs/serve.md "Limits"): its request head must arrive within
    # header_timeout_s and be at most max_header_bytes; its body may pause at most
    # body_idle_timeout_s between two chunks and must be complete within body_timeout_s
    header_timeout_s: float = 10.0
    max_header_bytes: int = 64 * 1024
    body_idle_timeout_s: float = 15.0
    body_timeout_s: float = 120.0
    max_client_connections: int = 512  # lowered to fit the open-files limit
    max_response_bytes: int = 64 * 1024 * 1024  # an upstream reply, decoded

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not self.host:
            msg = f"host must be a non-empty string, got {self.host!r}"
            raise InputError(msg)
        check_int("port", self.port, minimum=0)
        if self.port > 65535:
            msg = f"port must be <= 65535, got {self.port}"
            raise InputError(msg)
        object.__setattr__(
            self, "openai_upstream", _upstream("openai_upstream", self.openai_upstream)
        )
        object.__setattr__(
            self, "anthropic_upstream", _upstream("anthropic_upstream", self.anthropic_upstream)
        )
        for model, tokens in self.windows.items():
            check_int(f"window of {model!r}", tokens, minimum=1)
        object.__setattr__(self, "windows", MappingProxyType(dict(self.windows)))
        self._check_profiles()
        check_number("budget_ratio", self.budget_ratio, minimum=0)
        if not 0.0 < self.budget_ratio <= 1.0:
            msg = f"budget_ratio must be in (0, 1], got {self.budget_ratio!r}"
            raise InputError(msg)
        for name in (
            "max_body_bytes",
            "cache_bytes",
            "compact_workers",
            "max_connections",
            "max_header_bytes",
            "max_client_connections",
            "max_response_bytes",
        ):
            check_int(name, getattr(self, name), minimum=1)
        check_int("max_retries", self.max_retries, minimum=0)
        check_int("max_keepalive", self.max_keepalive, minimum=0)
        for name in (
            "connect_timeout_s",
            "read_timeout_s",
            "write_timeout_s",
            "pool_timeout_s",
            "keepalive_expiry_s",
            "client_keepalive_s",
            "learned_window_ttl_s",
            "header_timeout_s",
            "body_idle_timeout_s",
            "body_timeout_s",
        ):
            check_number(name, getattr(self, name), minimum=0.001)
        self._check_rungs()
        if self.conversation_scope not in ("api-key", "shared"):
            msg = (
                f"conversation_scope must be 'api-key' or 'shared', got {self.conversation_scope!r}"
            )
            raise InputError(msg)
        if self.compact_in not in ("process", "thread"):
            msg = f"compact_in must be 'process' or 'thread', got {self.compact_in!r}"
            raise InputError(msg)
        for name in ("passthrough", "warm_up"):
            if not isinstance(getattr(self, name), bool):
                msg = f"{name} must be true or false, got {getattr(self, name)!r}"
                raise InputError(msg)

    def _check_profiles(self) -> None:
        from glyphfold import profile_names

        valid = set(profile_names())
        for model, name in self.profiles.items():
            if name not in valid:
                msg = f"profile of {model!r} is {name!r}; valid: {', '.join(sorted(valid))}"
                raise InputError(msg)
        object.__setattr__(self, "profiles", MappingProxyType(dict(self.profiles)))

    def _check_rungs(self) -> None:
        rungs = tuple(self.rungs)
        valid = registered_rungs()
        for r in rungs:
            if r not in valid:
                msg = f"unknown rung {r!r}; valid rungs: {', '.join(valid)}"
                raise InputError(msg)
        free = model_free_rungs()
        needs_model = [r for r in rungs if r not in free]
        if needs_model and self.summary is None:
            msg = (
                f"the {', '.join(needs_model)} rung calls a model: it needs a [summary] "
                "section (provider, model, api_key_env)"
            )
            raise InputError(msg)
        if not rungs:
            msg = "rungs must name at least one rung"
            raise InputError(msg)
        object.__setattr__(self, "rungs", rungs)

    @property
    def reactive_rungs(self) -> tuple[str, ...]:
        """The rungs recovery may use: the configured ones that call no model (SPEC §5.1)."""
        free = model_free_rungs()
        return tuple(r for r in self.rungs if r in free) or ("trim",)


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_window(spec: str) -> tuple[str, int]:
    """``MODEL=TOKENS`` -> (model, tokens); InputError naming the expected form."""
    model, sep, tokens = spec.rpartition("=")
    if not sep or not model or not tokens.strip().isdigit() or int(tokens) <= 0:
        msg = f"--window takes MODEL=TOKENS with a positive token count, got {spec!r}"
        raise InputError(msg)
    return model, int(tokens)


_TABLES = {"timeouts", "models", "summary"}
_TIMEOUTS = {
    "connect": "connect_timeout_s",
    "read": "read_timeout_s",
    "write": "write_timeout_s",
    "pool": "pool_timeout_s",
}


def _from_toml(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    scalars = {f.name for f in fields(ServeConfig)} - {"windows", "profiles", "summary"}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in scalars:
            out[key] = tuple(value) if key == "rungs" and isinstance(value, list) else value
        elif key not in _TABLES:
            msg = f"{where}: unknown setting {key!r}; see docs/serve.md for the valid ones"
            raise InputError(msg)
    for key, value in dict(data.get("timeouts", {})).items():
        if key not in _TIMEOUTS:
            msg = f"{where}: unknown timeout {key!r}; valid: {', '.join(_TIMEOUTS)}"
            raise InputError(msg)
        out[_TIMEOUTS[key]] = value
    windows: dict[str, int] = {}
    profiles: dict[str, str] = {}
    for model, row in dict(data.get("models", {})).items():
        if not isinstance(row, Mapping) or set(row) - {"window", "profile"}:
            msg = f"{where}: [models.{model!r}] takes 'window' and 'profile' only"
            raise InputError(msg)
        if "window" in row:
            windows[model] = row["window"]
        if "profile" in row:
            profiles[model] = row["profile"]
    out["windows"], out["profiles"] = windows, profiles
    if "summary" in data:
        s = data["summary"]
        try:
            out["summary"] = SummaryConfig(**dict(s))
        except TypeError as exc:
            msg = f"{where}: [summary] takes provider, model, api_key_env, max_tokens ({exc})"
            raise InputError(msg) from None
    return out


def load_config(path: str | os.PathLike[str] | None = None, **overrides: Any) -> ServeConfig:
    """Defaults, then the TOML file at ``path`` (if any), then ``overrides`` (None = unset)."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            msg = f"{path}: not valid TOML: {exc}"
            raise InputError(msg) from None
        values = _from_toml(data, str(path))
    windows = dict(values.pop("windows", {}))
    windows.update(overrides.pop("windows", None) or {})
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        cfg = ServeConfig(**values)
    except TypeError as exc:
        msg = f"bad configuration: {exc}"
        raise InputError(msg) from None
    return replace(cfg, windows=windows) if windows else cfg
