"""The upstream side: one pooled httpx client per configured provider base URL.

The target is built from the configured base URL and the request's path only, and
checked to stay on the configured scheme, host and port: a request cannot make
the proxy connect anywhere else. Request headers (API keys and auth included) go
upstream unchanged but for hop-by-hop ones; nothing here logs them.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import httpx

from glyphfold.serve.config import ServeConfig

__all__ = ["HOP_BY_HOP", "Upstream", "has_dot_segment", "response_headers"]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        # the proxy decodes upstream bodies itself (it reads errors and replies)
        "accept-encoding",
        "content-encoding",
    }
)
# set by the server that answers the client (uvicorn), not copied from the upstream
_OWN_RESPONSE = frozenset({"date", "server"})
_OWN_PREFIX = "x-glyphfold-"
# replies are asked for unencoded: a compressed reply (a gzip "bomb") is never inflated
# past the proxy's limit, and relays need no decoding (issue 21 item 6)
_IDENTITY = (b"accept-encoding", b"identity")
_SEGMENT_SPLIT = re.compile(r"[/\\]")


def has_dot_segment(raw_path: bytes) -> bool:
    """True when a ``.`` or ``..`` segment hides in the path (percent-encoded too, twice)."""
    path = raw_path.split(b"?", 1)[0].decode("latin-1")
    for _ in range(3):
        if any(s in (".", "..") for s in _SEGMENT_SPLIT.split(path)):
            return True
        decoded = unquote(path, encoding="latin-1")
        if decoded == path:
            return False
        path = decoded
    return True  # encoded three times over: no honest client sends that


def response_headers(resp: httpx.Response) -> dict[str, str]:
    """The upstream's response headers a client should see (hop-by-hop dropped)."""
    out: dict[str, str] = {}
    for k, v in resp.headers.multi_items():
        lk = k.lower()
        if lk in HOP_BY_HOP or lk in _OWN_RESPONSE:
            continue
        out[lk] = f"{out[lk]}, {v}" if lk in out else v
    return out


class Upstream:
    """A provider's base URL and the connection pool to it."""

    def __init__(self, provider: str, base_url: str, cfg: ServeConfig) -> None:
        self.provider = provider
        self.base = httpx.URL(base_url)
        prefix = self.base.raw_path.rstrip(b"/")
        # a base that already ends in /v1 (the SDKs' habit) is not given a second /v1
        self._prefix = prefix[:-3] if prefix.endswith(b"/v1") else prefix
        timeout = httpx.Timeout(
            connect=cfg.connect_timeout_s,
            read=cfg.read_timeout_s,
            write=cfg.write_timeout_s,
            pool=cfg.pool_timeout_s,
        )
        limits = httpx.Limits(
            max_connections=cfg.max_connections,
            max_keepalive_connections=cfg.max_keepalive,
            keepalive_expiry=cfg.keepalive_expiry_s,
        )
        # trust_env=False: no proxy variables, no .netrc credentials: the target and the
        # auth headers are exactly what the configuration and the client gave
        self.client = httpx.AsyncClient(
            timeout=timeout, limits=limits, follow_redirects=False, trust_env=False
        )

    @property
    def where(self) -> str:
        """The base URL, for messages (it never holds credentials: config refuses them)."""
        return str(self.base)

    def url(self, raw_path: bytes, query: bytes) -> httpx.URL:
        """The upstream URL for a request path; ValueError if it would leave the host."""
        if not raw_path.startswith(b"/"):
            raw_path = b"/" + raw_path
        if has_dot_segment(raw_path):  # /v1/../../admin would leave the configured prefix
            msg = "request path has a '.' or '..' segment"
            raise ValueError(msg)
        target = self._prefix + raw_path + (b"?" + query if query else b"")
        url = self.base.copy_with(raw_path=target)
        if (url.scheme, url.host, url.port) != (self.base.scheme, self.base.host, self.base.port):
            msg = "request path would leave the configured upstream"
            raise ValueError(msg)
        if not url.raw_path.startswith(self._prefix + b"/"):
            msg = "request path would leave the configured upstream path"
            raise ValueError(msg)
        return url

    @staticmethod
    def forward_headers(
        headers: list[tuple[bytes, bytes]], *, keep_encoding: bool = False
    ) -> list[tuple[bytes, bytes]]:
        """The client's headers as sent upstream: unchanged but hop-by-hop and our own.

        ``keep_encoding``: the body goes up as the client sent it (passthrough), so its
        ``content-encoding`` goes too; a compacting route sends the decoded body.
        Replies are always asked for with ``accept-encoding: identity``.
        """
        out = []
        for k, v in headers:
            lk = k.decode("latin-1").lower()
            if lk == "content-encoding" and keep_encoding:
                out.append((k, v))
                continue
            if lk in HOP_BY_HOP or lk.startswith(_OWN_PREFIX):
                continue
            out.append((k, v))
        out.append(_IDENTITY)
        return out

    async def send(
        self,
        method: str,
        raw_path: bytes,
        query: bytes,
        headers: list[tuple[bytes, bytes]],
        content: bytes,
        *,
        keep_encoding: bool = False,
    ) -> httpx.Response:
        """Send and return the response with its body not yet read (``stream=True``)."""
        req = self.client.build_request(
            method,
            self.url(raw_path, query),
            headers=self.forward_headers(headers, keep_encoding=keep_encoding),
            content=content,
        )
        return await self.client.send(req, stream=True)

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self.client.aclose()
