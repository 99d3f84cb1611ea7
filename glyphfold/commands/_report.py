"""The demo's ``index.html``: before/after tokens, the ladder, the ledger, the pages."""

from __future__ import annotations

from html import escape
from typing import Any

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1640px;padding:0 1rem;
color:#1d1d1f;background:#fafafa}
h1{font-size:1.6rem;margin:.2rem 0}h2{margin-top:2.2rem;border-bottom:1px solid #ddd}
.cards{display:flex;gap:1rem;flex-wrap:wrap;margin:1rem 0}
.card{background:#fff;border:1px solid #ddd;border-radius:8px;padding:.7rem 1.1rem;min-width:10rem}
.card b{display:block;font-size:1.5rem}
table{border-collapse:collapse;background:#fff;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.25rem .55rem;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{height:14px;background:#4a7;display:inline-block;vertical-align:middle}
.bar.before{background:#c55}
figure{margin:1rem 0;background:#fff;border:1px solid #ddd;padding:.5rem;overflow-x:auto}
/* pages at 1:1 (a glyph page downscaled by the browser loses strokes): never shrunk to
   the window, scrolled sideways instead; the script below keeps an integer zoom on
   screens with a fractional pixel ratio */
figure img.page{display:block;max-width:none;image-rendering:pixelated;
image-rendering:crisp-edges;border:0}
figure figcaption{position:sticky;left:0}
code,pre{font-family:ui-monospace,monospace;font-size:13px}
pre{white-space:pre-wrap;background:#fff;border:1px solid #ddd;padding:.6rem}
.role-user{color:#06c}.role-assistant{color:#7a3}.role-tool{color:#a60}.role-system{color:#888}
.kind{font-size:12px;border-radius:4px;padding:0 .35rem;background:#eee}
"""


# On a screen whose device-pixel ratio is not a whole number (125%, 150% desktop
# scaling), a CSS pixel is not a whole number of screen pixels: size each page so one
# page pixel covers floor(ratio) screen pixels exactly.
_INTEGER_ZOOM = """<script>
(function(){var r=window.devicePixelRatio||1;if(r===Math.floor(r))return;
var z=Math.max(1,Math.floor(r))/r;document.querySelectorAll('img.page').forEach(
function(i){i.style.width=(i.width*z)+'px';i.style.height=(i.height*z)+'px';});})();
</script>"""


def _num(n: int) -> str:
    return f"{n:,}"


def report_html(
    result: Any,
    *,
    session: Any,
    page_files: list[str],
    profile: str,
    elapsed_ms: float,
) -> str:
    """Build the self-contained HTML report of one compaction (pages linked as files)."""
    from glyphfold.compaction.history.markers import glyphfold_meta
    from glyphfold.compaction.history.model import Image, Text

    before, after = result.tokens_before, result.tokens_after
    saved_pct = 100 * (before - after) / before if before else 0.0
    h = result.history
    n_in = len(session["messages"]) if isinstance(session, dict) else len(session)
    parts = [
        "<!doctype html><meta charset=utf-8><title>glyphfold demo</title>",
        f"<style>{_CSS}</style>",
        "<h1>glyphfold demo: the recovery ladder on a long coding session</h1>",
        f"<p>A built-in agent session ({_num(n_in)} messages) compacted to a budget of "
        f"{_num(result.budget)} tokens with the <code>{escape(profile)}</code> profile in "
        f"{elapsed_ms:.0f} ms. Cheapest rung first: elision, image stripping, snapshots "
        "(old steps as glyph pages, every word kept, no model call), then summary and trim "
        "only if still needed.</p>",
        '<div class="cards">',
        f'<div class="card">tokens before<b>{_num(before)}</b></div>',
        f'<div class="card">tokens after<b>{_num(after)}</b></div>',
        f'<div class="card">saved<b>{saved_pct:.1f}%</b></div>',
        f'<div class="card">messages<b>{_num(n_in)} &rarr; {_num(len(h.messages))}</b></div>',
        f'<div class="card">snapshot pages<b>{len(page_files)}</b></div>',
        "</div>",
        f'<div><span class="bar before" style="width:{600}px"></span> before</div>',
        f'<div><span class="bar" style="width:{max(1, round(600 * after / max(before, 1)))}px">'
        "</span> after</div>",
        "<h2>The ladder</h2><table><tr><th>rung</th><th class=n>tokens before</th>"
        "<th class=n>after</th><th class=n>saved</th><th>what left, and where it went</th></tr>",
    ]
    for e in result.ledger:
        dests: dict[str, int] = {}
        for r in e.removed:
            dests[r.dest] = dests.get(r.dest, 0) + 1
        what = ", ".join(f"{n} message(s) &rarr; {escape(d)}" for d, n in sorted(dests.items()))
        if e.pages:
            what += f"; {len(e.pages)} page(s)"
        if e.note:
            what += f" <i>({escape(e.note)})</i>"
        parts.append(
            f"<tr><td><b>{escape(e.rung)}</b></td><td class=n>{_num(e.tokens_before)}</td>"
            f"<td class=n>{_num(e.tokens_after)}</td><td class=n>{_num(e.tokens_saved)}</td>"
            f"<td>{what or 'nothing'}</td></tr>"
        )
    parts.append("</table>")

    factsheets = []  # each snapshot's last text block, when it has one beside the guide
    for m in h.messages:
        if glyphfold_meta(m).get("kind") == "snapshot":
            texts = [b.text for b in m.blocks if isinstance(b, Text)]
            if len(texts) > 1:
                factsheets.append(texts[-1])
    factsheet = "\n\n".join(factsheets)
    if page_files:
        parts.append(
            "<h2>Snapshot pages</h2><p>What the model receives instead of the middle "
            "of the conversation, rendered from the transcript text (never from "
            "earlier pages). Shown at 1:1, pixel for pixel as the model gets them; "
            "on a narrow window, scroll a page sideways.</p>"
        )
        for k, (src, page) in enumerate(zip(page_files, result.pages, strict=True), 1):
            s, e = page.source_span
            parts.append(
                f"<figure id=page-{k}><img class=page src='{escape(src)}' width={page.width} "
                f"height={page.height} alt='page {k}'>"
                f"<figcaption>page {k}: {page.width}&times;{page.height} px, "
                f"{_num(page.image_tokens)} image tokens, {_num(len(page.png))} PNG bytes, "
                f"transcript chars {_num(s)}&ndash;{_num(e)} "
                f"({(e - s) / max(page.image_tokens, 1):.1f} chars per token)"
                "</figcaption></figure>"
            )
    if factsheet:
        parts.append(f"<h2>Factsheet sent beside the pages</h2><pre>{escape(factsheet)}</pre>")

    parts.append(
        "<h2>The compacted history</h2><table><tr><th class=n>#</th><th>role</th>"
        "<th>part</th><th>starts with</th></tr>"
    )
    snap = next((e for e in result.ledger if e.rung == "snapshot" and e.pages), None)
    head = snap.extra.get("head_messages", 0) if snap else len(h.messages)
    tail_from = len(h.messages) - (snap.extra.get("tail_messages", 0) if snap else 0)
    for i, m in enumerate(h.messages):
        kind = glyphfold_meta(m).get("kind")
        if kind:
            part = kind
        elif i < head:
            part = "head (verbatim)"
        elif i >= tail_from:
            part = "tail (verbatim)"
        else:
            part = "middle, as text"
        if kind == "snapshot":
            preview = f"{sum(isinstance(b, Image) for b in m.blocks)} page image(s) + guide"
        else:
            preview = m.text[:140] or ", ".join(f"call {c.name}" for c in m.tool_calls)
        parts.append(
            f"<tr><td class=n>{i}</td><td class='role-{escape(m.role)}'>{escape(m.role)}</td>"
            f"<td><span class=kind>{escape(part)}</span></td><td>{escape(preview)}</td></tr>"
        )
    parts.append("</table>")

    parts.append(
        "<h2>The ledger</h2><p>Every message that left the history, where it went "
        "and what it cost.</p>"
    )
    for e in result.ledger:
        parts.append(
            f"<details><summary><b>{escape(e.rung)}</b>: {len(e.removed)} row(s), "
            f"{_num(e.tokens_saved)} tokens saved</summary><table><tr><th class=n>#"
            "</th><th>role</th><th>id</th><th>went to</th><th class=n>chars</th>"
            "<th class=n>tokens</th><th>detail</th></tr>"
        )
        for r in e.removed:
            parts.append(
                f"<tr><td class=n>{r.index}</td><td>{escape(r.role or '')}</td>"
                f"<td><code>{escape(r.id or '')}</code></td><td>{escape(r.dest)}</td>"
                f"<td class=n>{_num(r.chars)}</td><td class=n>{_num(r.tokens)}</td>"
                f"<td>{escape(r.detail[:160])}</td></tr>"
            )
        parts.append("</table></details>")
    parts.append(_INTEGER_ZOOM)
    parts.append(
        "<p>Files: <a href='compacted.json'>compacted.json</a> (snapshot source kept "
        "under <code>x_glyphfold</code>), <a href='input.json'>input.json</a>, "
        "<a href='report.json'>report.json</a>.</p>"
    )
    return "\n".join(parts) + "\n"
