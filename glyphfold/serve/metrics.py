"""Prometheus metrics of one proxy instance (its own registry, so apps do not collide)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]

# added latency is sub-millisecond without compaction, ~0.1-1 s with a 200k-token one
_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


class Metrics:
    """Requests, compactions, recoveries, tokens saved, added latency, upstream errors."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "glyphfold_serve_requests",
            "Requests answered, by route and status",
            ("endpoint", "status"),
            registry=r,
        )
        self.compactions = Counter(
            "glyphfold_serve_compactions",
            "Requests sent compacted, by kind (proactive/reactive) and cache outcome",
            ("endpoint", "kind", "cache"),
            registry=r,
        )
        self.recoveries = Counter(
            "glyphfold_serve_recoveries",
            "Upstream context overflows, by outcome (retried, exhausted, failed)",
            ("endpoint", "outcome"),
            registry=r,
        )
        self.tokens_saved = Counter(
            "glyphfold_serve_tokens_saved",
            "Estimated tokens taken off requests",
            ("endpoint",),
            registry=r,
        )
        self.added_latency = Histogram(
            "glyphfold_serve_added_latency_seconds",
            "Time the proxy adds to a request (total minus waiting for the upstream)",
            ("endpoint", "compacted"),
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.upstream_errors = Counter(
            "glyphfold_serve_upstream_errors",
            "Upstream failures the proxy answered for (connect, timeout, protocol, malformed)",
            ("endpoint", "kind"),
            registry=r,
        )
        self.client_gone = Counter(
            "glyphfold_serve_client_gone",
            "Requests whose client hung up before they were forwarded (never sent upstream)",
            ("endpoint",),
            registry=r,
        )
        self.streams = Gauge(
            "glyphfold_serve_streams_in_flight",
            "Streaming responses being relayed now",
            registry=r,
        )
        self.cache_bytes = Gauge(
            "glyphfold_serve_cache_bytes",
            "Bytes held by the compaction cache",
            registry=r,
        )

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)
