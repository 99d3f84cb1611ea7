"""A non-Python client: the openai npm package under Node, end to end through the proxy.

``.ci/run`` installs it (``npm ci`` in tests/serve/node); skipped where Node or the
package is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.serve.histories import openai_history

NODE_DIR = Path(__file__).parent / "node"
WINDOW = 20_000


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(
    not (NODE_DIR / "node_modules" / "openai").is_dir(),
    reason="npm ci has not run in tests/serve/node",
)
def test_openai_npm_client_through_the_proxy(serve, fake, tmp_path):
    srv = serve(windows={"fake-model": WINDOW})
    history = tmp_path / "history.json"
    history.write_text(json.dumps(openai_history(25, chars=16_000)))
    env = {**os.environ, "GLYPHFOLD_URL": srv.url, "MODEL": "fake-model", "HISTORY": str(history)}
    out = subprocess.run(
        ["node", "client.mjs"], cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    plain, stream, error = (json.loads(line) for line in out.stdout.splitlines())
    assert plain["text"].startswith("ok ") and stream["text"].startswith("ok ")
    before, after = map(int, plain["tokens"].split("->"))
    assert before > 4 * WINDOW and after <= WINDOW
    assert error == {"mode": "error", "status": 500, "type": "server_error"}
    accepted = [r for r in fake.accepted() if r.model == "fake-model"]
    assert len(accepted) == 2 and all(r.tokens <= WINDOW for r in accepted)
