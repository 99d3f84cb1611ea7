"""Configuration, the model windows table (SPEC §3.1-3.2) and the command line."""

from __future__ import annotations

import pytest

import glyphfold
from glyphfold.cli import main
from glyphfold.errors import InputError
from glyphfold.serve import ServeConfig, SummaryConfig, load_config
from glyphfold.serve.windows import KNOWN_MODELS, LearnedWindows, resolve_model, stated_window


def _res(model, windows=None, profiles=None, provider="openai"):
    return resolve_model(
        model, provider_profile=provider, windows=windows or {}, profiles=profiles or {}
    )


def test_known_models_and_their_dated_releases():
    r = _res("claude-sonnet-4-5-20250929", provider="anthropic")
    assert (r.window, r.profile, r.source) == (200_000, "anthropic", "table")
    assert _res("gpt-4o-2024-08-06").window == 128_000
    assert _res("claude-3-7-sonnet-latest").window == 200_000
    assert _res("claude-opus-4-7").profile == "anthropic-hires"
    assert all(info.window > 0 for info in KNOWN_MODELS.values())
    assert {i.profile for i in KNOWN_MODELS.values()} <= set(glyphfold.profile_names())


def test_another_model_never_lends_its_window():
    """SPEC §3.2: an unknown model has no window, even when its name starts like a known one."""
    for name in ("gpt-4o-mini-tts", "gpt-4o-fine", "claude-sonnet-4-5-custom", "my-model"):
        r = _res(name)
        assert r.window is None and r.source == "unknown"
        assert r.profile == "openai"  # its endpoint's provider prices its images
    # and its budget is the documented default, scaled by the ratio (SPEC §3.1)
    assert (
        glyphfold.effective_context_budget(context_compact_ratio=0.9, context_window=None) == 28_800
    )


def test_configured_windows_and_profiles_win():
    r = _res("gpt-4o", windows={"gpt-4o": 64_000}, profiles={"gpt-4o": "openai"})
    assert (r.window, r.profile, r.source) == (64_000, "openai", "config")
    r = _res("gpt-4o-2024-08-06", windows={"gpt-4o": 64_000})
    assert r.window == 64_000  # an override of the base name covers its dated releases


def test_windows_learned_from_the_upstream_only_lower():
    learned = LearnedWindows(max_models=2)
    up = "http://up"
    assert stated_window("This model's maximum context length is 8192 tokens. However") == 8192
    assert stated_window("prompt is too long: 210000 tokens > 200000 maximum") == 200_000
    assert stated_window("input length and `max_tokens` exceed context limit: 1 + 2 > 3") == 3
    assert stated_window("rate limited") is None
    learned.learn(up, "gpt-4o", 100_000)
    learned.learn(up, "gpt-4o", 120_000)  # never raised
    r = learned.apply(up, _res("gpt-4o"))
    assert (r.window, r.source) == (100_000, "learned")
    assert learned.apply(up, _res("gpt-4")).source == "table"  # 8,192 is already smaller


def test_config_file_and_flags(tmp_path):
    f = tmp_path / "serve.toml"
    f.write_text(
        'port = 9000\nbudget_ratio = 0.5\nrungs = ["elide", "trim"]\n'
        "[timeouts]\nread = 30\n"
        '[models."my-model"]\nwindow = 50000\nprofile = "openai-tile"\n'
    )
    cfg = load_config(f, port=9100, windows={"other": 1000})
    assert cfg.port == 9100 and cfg.budget_ratio == 0.5 and cfg.read_timeout_s == 30
    assert dict(cfg.windows) == {"my-model": 50_000, "other": 1000}
    assert cfg.profiles["my-model"] == "openai-tile" and cfg.rungs == ("elide", "trim")
    assert cfg.reactive_rungs == ("elide", "trim")


@pytest.mark.parametrize(
    "text,match",
    [
        ("bogus = 1\n", "unknown setting 'bogus'"),
        ("budget_ratio = 1.5\n", "budget_ratio must be in"),
        ('rungs = ["summary"]\n', "needs a \\[summary\\] section"),
        ('rungs = ["magic"]\n', "unknown rung 'magic'"),
        ("[models.x]\nwindow = 0\n", "window of 'x' must be >= 1"),
        ('[models.x]\nprofile = "nope"\n', "profile of 'x' is 'nope'"),
        ('openai_upstream = "ftp://x"\n', "http:// or https://"),
        ("port = [\n", "not valid TOML"),
    ],
)
def test_bad_configuration_is_one_clear_error(tmp_path, text, match):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(InputError, match=match):
        load_config(f)


def test_summary_stays_out_of_recovery():
    cfg = ServeConfig(
        rungs=("elide", "summary", "trim"),
        summary=SummaryConfig("anthropic", "claude-haiku-4-5", "K"),
    )
    assert "summary" in cfg.rungs and "summary" not in cfg.reactive_rungs
    with pytest.raises(InputError, match=r"summary\.provider"):
        SummaryConfig("gemini", "m", "K")


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["serve", "--budget-ratio", "2"], "budget_ratio must be in (0, 1]"),
        (["serve", "--window", "gpt-4o"], "--window takes MODEL=TOKENS"),
        (["serve", "--window", "gpt-4o=-5"], "--window takes MODEL=TOKENS"),
        (["serve", "--config", "/nonexistent/serve.toml"], "does not exist"),
        (
            ["serve", "--openai-upstream", "https://k:s@api.openai.com"],
            "must not carry credentials",
        ),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_warns_loudly_off_loopback(monkeypatch, capsys):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    assert main(["serve", "--host", "0.0.0.0", "--port", "8799"]) == 0
    err = capsys.readouterr().err
    assert "WARNING: listening on 0.0.0.0" in err
    assert calls[0]["host"] == "0.0.0.0" and calls[0]["access_log"] is False
    assert main(["serve"]) == 0
    assert "WARNING" not in capsys.readouterr().err
    assert calls[1]["host"] == "127.0.0.1" and calls[1]["port"] == 8787
