"""Built-in sample texts: a short agent transcript and a large mixed corpus for benchmarks.

Both are generated deterministically (fixed seeds, fixed fragments written for
glyphfold), so pages, goldens and benchmark numbers are reproducible.
"""

from __future__ import annotations

import random

SAMPLE_TRANSCRIPT = """\
[system] You are a coding agent working in /srv/app. Keep answers short; run the tests.
[user] The nightly build fails on `test_invoice_totals`. Find out why and fix it.
[assistant] I'll run the failing test first.
[tool_call id=call_7f3a91c2] bash {"cmd": "pytest -q tests/test_invoice.py -k totals"}
[tool_result id=call_7f3a91c2]
F                                                                        [100%]
=================================== FAILURES ===================================
_____________________________ test_invoice_totals ______________________________

    def test_invoice_totals():
        inv = Invoice(lines=[Line("A-1001", 3, Decimal("19.99")),
                             Line("B-2002", 1, Decimal("0.01"))])
>       assert inv.total() == Decimal("60.98")
E       AssertionError: assert Decimal('60.97') == Decimal('60.98')

tests/test_invoice.py:14: AssertionError
1 failed, 41 passed in 0.83s
[assistant] Rounding happens per line before the sum. Reading the model.
[tool_call id=call_0b55e6d4] read_file {"path": "app/invoice.py", "lines": "1-40"}
[tool_result id=call_0b55e6d4]
from decimal import ROUND_HALF_UP, Decimal

class Invoice:
\tdef __init__(self, lines):
\t\tself.lines = list(lines)

\tdef total(self) -> Decimal:
\t\t# BUG: quantize() each line truncates the half-cent of 3 x 19.99
\t\treturn sum((l.amount().quantize(Decimal("0.01")) for l in self.lines), Decimal(0))
[assistant] Fix: sum exact amounts, round once with ROUND_HALF_UP.
[tool_call id=call_c41d0e88] apply_patch {"file": "app/invoice.py", "hunks": 1}
[tool_result id=call_c41d0e88] ✓ patched app/invoice.py (+2 -1)
[tool_call id=call_9d2e7a10] bash {"cmd": "pytest -q"}
[tool_result id=call_9d2e7a10] 42 passed in 0.91s ✅
[user] Merci ! Peux-tu aussi vérifier les montants en devises étrangères (€, ¥, £) ?
[assistant] Oui : les totaux en € et £ passent ; ¥ n'a pas de centimes, donc l'arrondi
est à l'unité. Résumé en chinois pour l'équipe :
发票总额的舍入问题已修复，所有测试通过。
[tool_result id=call_e5f0a3b7] ⚠ 3 warnings: DeprecationWarning in app/fx.py:88 (utcnow)
[assistant] Done. Commit 4e1c9b07 "Round invoice totals once (half-up)"; 42/42 tests pass.
"""

_PROSE = (
    "The agent read the failing test, traced the rounding to the invoice model and "
    "patched it; every later turn builds on that fix, so the middle of the history "
    "still matters even when nobody reads it again.",
    "Context windows are finite: old tool results are elided first, then screenshots "
    "are stripped, then the middle is rendered into pages of glyphs a vision model reads.",
    "A page is billed by its area, not by how many characters it carries, so a dense "
    "page of small crisp glyphs costs a fraction of the same text sent as tokens.",
)
_ACCENTED = (
    "Le modèle a déjà vérifié les résultats ; la facture reçue à Genève était correcte.",
    "El niño pidió una canción más; la señora contestó con cortesía y siguió leyendo.",
    "Die Größe der Übersetzung hängt vom Maßstab ab; Jürgen prüft die Änderungen.",
    "Zażółć gęślą jaźń: łódź płynie szybko, a żółw śpi pod świerkiem.",
)
_CJK = (
    "上下文窗口是有限的：旧的工具结果先被省略，然后中间部分被渲染成字形页面。",
    "エージェントはテストを実行し、丸めの問題を見つけて修正しました。",
    "대화 기록의 중간 부분은 이미지로 렌더링됩니다.",
)
_CODE = (
    "def total(self) -> Decimal:",
    "    amounts = [line.amount() for line in self.lines]",
    "    return sum(amounts, Decimal(0)).quantize(CENT, rounding=ROUND_HALF_UP)",
    "for (let i = 0; i < rows.length; i++) { grid[i] = rows[i].split('\\t'); }",
    'SELECT id, total FROM invoices WHERE status = "open" ORDER BY created_at DESC;',
    '\tif err != nil {\n\t\treturn fmt.Errorf("load %s: %w", path, err)\n\t}',
)
_LOG_LEVELS = ("INFO", "DEBUG", "WARN", "ERROR")


def _log_line(rng: random.Random, i: int) -> str:
    level = rng.choice(_LOG_LEVELS)
    ms = rng.randrange(1, 5000)
    req = f"{rng.getrandbits(64):016x}"
    return (
        f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randrange(1000):03d}Z {level:5s} "
        f"worker-{rng.randrange(8)} req={req} path=/api/v1/items/{rng.randrange(10**6)} "
        f"status={rng.choice((200, 200, 201, 404, 500))} took={ms}ms"
    )


def mixed_transcript(n_chars: int = 1_000_000, *, seed: int = 1234) -> str:
    """Return a deterministic ~``n_chars`` mix of prose, code, logs, accented Latin and CJK."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    i = 0
    while size < n_chars:
        kind = rng.random()
        if kind < 0.35:
            block = "\n".join(_log_line(rng, i + k) for k in range(rng.randrange(3, 12)))
        elif kind < 0.60:
            block = " ".join(rng.choice(_PROSE) for _ in range(rng.randrange(1, 5)))
        elif kind < 0.85:
            block = "\n".join(rng.choice(_CODE) for _ in range(rng.randrange(2, 8)))
        elif kind < 0.95:
            block = " ".join(rng.choice(_ACCENTED) for _ in range(rng.randrange(1, 4)))
        else:
            block = "".join(rng.choice(_CJK) for _ in range(rng.randrange(1, 3)))
        parts.append(block)
        size += len(block) + 1
        i += 1
    return "\n".join(parts)[:n_chars]
