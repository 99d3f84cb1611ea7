"""The rung registry: every rung's name, cost class and how to build it, in one place.

Adding a rung = its module under ``rungs/``, a field in :class:`LadderConfig` for its
config, and one :class:`RungSpec` row in :data:`RUNGS` (the order of the rows is the
ladder's order, cheapest first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from glyphfold.checks import check_int
from glyphfold.compaction.ladder.loop import DEFAULT_TAIL_TOKENS
from glyphfold.compaction.ladder.rungs.base import Rung
from glyphfold.compaction.ladder.rungs.elide import Elide, ElideConfig
from glyphfold.compaction.ladder.rungs.snapshot import Snapshot, SnapshotConfig
from glyphfold.compaction.ladder.rungs.strip_images import StripConfig, StripImages
from glyphfold.compaction.ladder.rungs.summary import Summary, SummaryConfig
from glyphfold.compaction.ladder.rungs.trim import Trim
from glyphfold.errors import InputError

__all__ = [
    "DEFAULT_RUNGS",
    "MODEL_FREE_RUNGS",
    "RUNGS",
    "LadderConfig",
    "RungName",
    "RungSpec",
    "build_rungs",
    "model_free_rungs",
    "registered_rungs",
]

RungName: TypeAlias = Literal["elide", "strip", "snapshot", "summary", "trim"]


@dataclass(frozen=True)
class LadderConfig:
    """The ladder's configuration: what every rung shares, then one config per rung.

    ``tail_tokens``: the tail allowance. The tail (docs/ladder.md) is the newest step plus as
    many newer-to-older steps as fit this many tokens, and never more than half of
    what the target leaves after the head and the newest real user message; no rung
    touches it. ``min_saving_tokens``: elision and image stripping do not act when
    they cannot save this much, and save at least this much when they act (a
    compaction that saves little still breaks the provider's prompt cache; 1,024 is
    the smallest prefix Anthropic caches). ``/shake`` ignores it. ``freeze_blocks``:
    snapshot blocks an earlier pass made, and the text before them, stay byte for byte
    in place and new pages become a new block after them (docs/ladder.md, "Blocks,
    frozen"); the blocks are merged (re-rendered from their source) only when the image
    limit or the target forces it. False: every pass re-renders them.
    """

    tail_tokens: int = DEFAULT_TAIL_TOKENS
    min_saving_tokens: int = 1024
    freeze_blocks: bool = True
    elide: ElideConfig = field(default_factory=ElideConfig)
    strip: StripConfig = field(default_factory=StripConfig)
    snapshot: SnapshotConfig = field(default_factory=SnapshotConfig)
    summary: SummaryConfig = field(default_factory=SummaryConfig)

    def __post_init__(self) -> None:
        for name in ("tail_tokens", "min_saving_tokens"):
            check_int(name, getattr(self, name), minimum=0, unit="tokens", error=ValueError)


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """What a rung may need beyond its config to be built."""

    summarizer: Any = None
    renderer: Any = None
    focus: str | None = None


@dataclass(frozen=True, slots=True)
class RungSpec:
    """One registered rung: its class, whether it calls a model, how to build it.

    ``build`` returns None when the rung cannot run with these options (the summary
    rung without a summarizer).
    """

    name: RungName
    cls: type
    model_free: bool
    build: Callable[[LadderConfig, BuildOptions], Rung | None]


def _summary(cfg: LadderConfig, opts: BuildOptions) -> Rung | None:
    return (
        None if opts.summarizer is None else Summary(opts.summarizer, cfg.summary, focus=opts.focus)
    )


RUNGS: dict[str, RungSpec] = {
    spec.name: spec
    for spec in (
        RungSpec("elide", Elide, True, lambda cfg, _: Elide(cfg.elide)),
        RungSpec("strip", StripImages, True, lambda cfg, _: StripImages(cfg.strip)),
        RungSpec(
            "snapshot",
            Snapshot,
            True,
            lambda cfg, opts: Snapshot(cfg.snapshot, renderer=opts.renderer, focus=opts.focus),
        ),
        RungSpec("summary", Summary, False, _summary),
        RungSpec("trim", Trim, True, lambda cfg, _: Trim()),
    )
}
DEFAULT_RUNGS: tuple[str, ...] = tuple(RUNGS)
MODEL_FREE_RUNGS: tuple[str, ...] = tuple(n for n, s in RUNGS.items() if s.model_free)


def registered_rungs() -> tuple[str, ...]:
    """Every rung name of the registry, in ladder order (read now: what the CLI's help,
    ``glyphfold serve``'s configuration and the checks of names use)."""
    return tuple(RUNGS)


def model_free_rungs() -> tuple[str, ...]:
    """The registered rungs that call no model (the only ones reactive recovery may use)."""
    return tuple(n for n, s in RUNGS.items() if s.model_free)


def rung_names(rungs: Sequence[Any] | str) -> list[Any]:
    """A comma-separated string of names, or a sequence of names and rung objects, as a list."""
    if isinstance(rungs, str):
        return [r.strip() for r in rungs.split(",") if r.strip()]
    return list(rungs)


def build_rungs(
    rungs: Sequence[Any] | str | None,
    *,
    config: LadderConfig,
    allowed: tuple[str, ...],
    summarizer: Any = None,
    renderer: Any = None,
    focus: str | None = None,
) -> list[Rung]:
    """The rung objects to run, in order.

    ``rungs`` names (or gives) the rungs; None means every rung in ``allowed`` that
    can be built. A named rung outside ``allowed`` is skipped; a rung that cannot be
    built although the caller named it is an error.
    """
    explicit = rungs is not None
    wanted = rung_names(rungs) if rungs is not None else list(allowed)
    opts = BuildOptions(summarizer=summarizer, renderer=renderer, focus=focus)
    out: list[Rung] = []
    for r in wanted:
        if not isinstance(r, str):
            if not (hasattr(r, "apply") and hasattr(r, "name")):
                msg = f"a rung must be a name in {list(RUNGS)} or an object with .apply, got {r!r}"
                raise InputError(msg)
            out.append(r)
            continue
        spec = RUNGS.get(r)
        if spec is None:
            msg = f"unknown rung {r!r}; valid rungs: {', '.join(RUNGS)}"
            raise InputError(msg)
        if r not in allowed:
            continue
        built = spec.build(config, opts)
        if built is None:
            if explicit:
                msg = f"the {r} rung needs summarizer=...; pass one or drop {r!r}"
                raise InputError(msg)
            continue
        out.append(built)
    return out


FOCUS_RUNGS = ("snapshot", "summary")  # the rungs a focus= reaches


def focus_problem(
    focus: str | None, rungs: Sequence[Any] | str | None, summarizer: Any
) -> str | None:
    """Why ``focus`` would be ignored by this ladder (None: some rung acts on it).

    A focus is written in each snapshot's reading guide and heads every summary
    request; a ladder with neither rung (``rungs=`` naming only others, or the summary
    alone without a summarizer) would drop it silently. Checked when an adapter or a
    Compactor is built, not at its first compaction many steps later.
    """
    if focus is None:
        return None
    names = list(RUNGS) if rungs is None else rung_names(rungs)
    acting = [
        r
        for r in names
        if (r == "snapshot" or (r == "summary" and summarizer is not None))
        or isinstance(r, (Snapshot, Summary))
    ]
    if acting:
        return None
    return (
        "focus= is written in the snapshots' reading guide and tells the summary rung what "
        "to keep, and this ladder has neither: keep 'snapshot' in rungs=, or pass "
        "summarizer=... with 'summary' in rungs=, or drop focus="
    )
