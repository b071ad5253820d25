from pathlib import Path

import pytest

from bookwise.settings import Settings


def test_toml_file_then_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bookwise.toml").write_text('chunk_max_tokens = 300\nembedding_provider = "hash"\n')
    assert Settings().chunk_max_tokens == 300
    monkeypatch.setenv("BOOKWISE_CHUNK_MAX_TOKENS", "200")
    settings = Settings()
    assert (settings.chunk_max_tokens, settings.embedding_provider) == (200, "hash")
    assert settings.resolved_embedding_model == "hash-384"


def test_unknown_and_invalid_settings_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bookwise.toml").write_text("chunk_max_tokenz = 300\n")
    with pytest.raises(ValidationError, match="chunk_max_tokenz"):
        Settings()
    (tmp_path / "bookwise.toml").write_text("")
    monkeypatch.setenv("BOOKWISE_KEEP_GENERATIONS", "0")
    with pytest.raises(ValidationError, match="keep_generations"):
        Settings()


def test_embedder_adaptation_defaults_to_the_embedded_local_index(tmp_path: Path) -> None:
    base = Settings(data_dir=tmp_path, _env_file=None)  # type: ignore[call-arg]
    assert base.adapts_embedder  # local provider, embedded index
    assert not base.model_copy(update={"qdrant_url": "http://qdrant:6333"}).adapts_embedder
    assert base.model_copy(update={"qdrant_url": "http://q", "embedding_adapt": True}).adapts_embedder
    assert not base.model_copy(update={"embedding_adapt": False}).adapts_embedder
    assert not base.model_copy(update={"embedding_provider": "hash"}).adapts_embedder


def test_short_admin_token_error_names_its_unit_not_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bookwise.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BOOKWISE_ADMIN_TOKEN", "short-secret")
    monkeypatch.setenv("BOOKWISE_KEEP_GENERATIONS", "0")
    (tmp_path / "bookwise.toml").write_text("chunk_max_tokenz = 300\n")
    assert main(["search", "anything"]) == 2
    err = capsys.readouterr().err
    assert "BOOKWISE_ADMIN_TOKEN: too short: at least 16 characters" in err
    assert "BOOKWISE_KEEP_GENERATIONS: " in err
    assert "chunk_max_tokenz: not a Bookwise setting" in err
    assert "items" not in err and "short-secret" not in err  # no pydantic jargon, no secret echoed


@pytest.mark.parametrize(
    ("value", "origins"),
    [
        ("http://localhost:3000", ["http://localhost:3000"]),
        (
            "http://localhost:3000, https://docs.example.org",
            ["http://localhost:3000", "https://docs.example.org"],
        ),
        ('["https://docs.example.org"]', ["https://docs.example.org"]),
    ],
)
def test_allowed_origins_as_one_plain_origin_is_not_a_crash(
    value: str, origins: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BOOKWISE_ALLOWED_ORIGINS", value)
    assert Settings().allowed_origins == origins


@pytest.mark.parametrize("name", ["BOOKWISE_ADMIN_TOKEN", "BOOKWISE_METRICS_TOKEN"])
def test_short_token_is_never_echoed_by_the_cli_or_a_worker_process(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pydantic's own message carries `input_value='…'`: a too-short secret was printed at start."""
    import traceback

    from bookwise.api import workers
    from bookwise.cli import main

    secret = "tooshort-9f3a"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(name, secret)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert f"{name}: too short: at least 16 characters" in err and secret not in err
    # A `serve --workers` process reads the settings itself (its app factory and protocol class).
    workers.worker_settings.cache_clear()
    try:
        with pytest.raises(SystemExit) as ended:
            workers.worker_settings()
    finally:
        workers.worker_settings.cache_clear()
    printed = "".join(traceback.format_exception(ended.value))  # all a crashing worker could show
    assert f"{name}: too short: at least 16 characters" in str(ended.value.code)
    assert secret not in printed and "input_value" not in printed
