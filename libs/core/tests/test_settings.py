from __future__ import annotations

from pathlib import Path

import pytest

from lore_core.settings import ConfigError, load_settings, redact, redact_url, to_dict


def write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text, encoding="utf-8")


def test_contract_defaults_without_any_file(tmp_path: Path) -> None:
    s = load_settings(tmp_path, environ={})
    assert (s.docdb.llm.max_concurrent_requests, s.docdb.llm.max_retries, s.docdb.llm.timeout) == (10, 3, 120)
    assert (s.docdb.vlm.max_retries, s.docdb.vlm.timeout) == (5, 120)
    e = s.docdb.embedding_api
    assert (e.dim, e.timeout, e.batch_size, e.num_threads, e.max_retries, e.retry_delay) == (
        1024,
        30,
        2000,
        8,
        5,
        2,
    )
    q = s.docdb.query_defaults
    assert (q.top_k, q.threshold, q.similarity_weight, q.occur_weight, q.reranker_url) == (
        10,
        0.0,
        1.5,
        1.0,
        None,
    )
    assert s.docdb.search_params.ef_multiplier == 10
    assert s.docdb.milvus.sentence_mode is False
    assert s.mem.memorykb.embedding.dim == 1536
    assert s.mem.memoryvg.embedder.config.embedding_dims == 1024
    assert s.mem.memoryvg.vector_store.config.collection_name == "memoryvg"
    assert (s.gen.llm.max_concurrent_requests, s.gen.llm.timeout, s.gen.embedding_api.dim) == (10, 120, 1024)
    assert (s.postgres_batch_size, s.parse_max_workers) == (500, 2)
    p = s.parameter
    assert (p.chunk_config.chunk_size, p.chunk_config.overlap, p.chunk_config.max_workers) == (1024, 50, 16)
    assert (p.graph_config.batch_size, p.graph_config.max_workers) == (2000, 200)
    assert (p.graph_merge_config.parallel_batches, p.graph_merge_config.batch_size) == (16, 500)
    assert (p.vector_config.batch_size, p.vector_config.num_threads) == (2000, 8)


def test_repository_config_files_load_and_match_the_defaults() -> None:
    folder = Path(__file__).resolve().parents[3] / "config"
    assert to_dict(load_settings(folder, environ={})) == to_dict(
        load_settings(folder / "missing", environ={})
    )


def test_file_overrides_default_and_env_overrides_file(tmp_path: Path) -> None:
    write(tmp_path, "lore.yaml", "docdb:\n  llm:\n    timeout: 30\n    base_url: http://file\n")
    write(
        tmp_path, "pipeline.yaml", "parameter:\n  chunk_config:\n    chunk_size: 256\nparse_max_workers: 4\n"
    )
    s = load_settings(tmp_path, environ={})
    assert s.docdb.llm.timeout == 30
    assert s.docdb.llm.base_url == "http://file"
    assert s.parameter.chunk_config.chunk_size == 256
    assert s.parse_max_workers == 4
    env = {
        "LORE__DOCDB__LLM__BASE_URL": "http://env",
        "LORE__PARAMETER__CHUNK_CONFIG__CHUNK_SIZE": "512",
        "LORE__DOCDB__MILVUS__SENTENCE_MODE": "true",
        "UNRELATED": "x",
    }
    s = load_settings(tmp_path, environ=env)
    assert s.docdb.llm.base_url == "http://env"
    assert s.docdb.llm.timeout == 30  # untouched keys keep the file's value
    assert s.parameter.chunk_config.chunk_size == 512
    assert s.docdb.sentence_mode is True


def test_config_dir_comes_from_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "lore.yaml", "gateway:\n  port: 9999\n")
    monkeypatch.setenv("LORE_CONFIG_DIR", str(tmp_path))
    assert load_settings().gateway.port == 9999


def test_wrong_type_names_the_key(tmp_path: Path) -> None:
    write(tmp_path, "lore.yaml", "docdb:\n  llm:\n    timeout: soon\n")
    with pytest.raises(ConfigError, match=r"docdb\.llm\.timeout"):
        load_settings(tmp_path, environ={})


def test_unknown_key_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "lore.yaml", "docdb:\n  llm:\n    temprature: 0.3\n")
    with pytest.raises(ConfigError, match="temprature"):
        load_settings(tmp_path, environ={})


def test_unknown_provider_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"docdb\.llm\.provider"):
        load_settings(tmp_path, environ={"LORE__DOCDB__LLM__PROVIDER": "gpt"})


def test_broken_yaml_names_the_file(tmp_path: Path) -> None:
    write(tmp_path, "pipeline.yaml", "parameter: [unclosed\n")
    with pytest.raises(ConfigError, match=r"pipeline\.yaml"):
        load_settings(tmp_path, environ={})


def test_redaction_masks_nested_secret_keys_and_keeps_the_rest() -> None:
    config = {
        "docdb": {
            "llm": {"api_key": "sk-live-123", "model": "gpt", "max_tokens": 100},
            "object_storage": {"secret_key": "s3cret", "access_key": "AKIA", "bucket": "b"},
            "graph_store": {"password": "pw", "url": None},
        },
        "providers": [{"token": "t0k", "name": "x"}],
        "empty": {"api_key": None},
    }
    out = redact(config)
    assert out["docdb"]["llm"] == {"api_key": "***", "model": "gpt", "max_tokens": 100}
    assert out["docdb"]["object_storage"] == {"secret_key": "***", "access_key": "***", "bucket": "b"}
    assert out["docdb"]["graph_store"]["password"] == "***"
    assert out["providers"][0] == {"token": "***", "name": "x"}
    assert out["empty"]["api_key"] is None  # nothing set, nothing to hide
    assert config["docdb"]["llm"]["api_key"] == "sk-live-123"  # the input is not modified


def test_redaction_masks_passwords_inside_urls() -> None:
    assert redact_url("postgresql://lore:hunter2@db:5432/lore") == "postgresql://lore:***@db:5432/lore"
    assert redact_url("falkordb://:pw@graph:6379") == "falkordb://:***@graph:6379"
    assert redact_url("http://example.com/a@b") == "http://example.com/a@b"
    out = redact({"database": {"url": "postgresql+asyncpg://u:p%40ss@h/db"}})
    assert "p%40ss" not in str(out)
    assert out["database"]["url"] == "postgresql+asyncpg://u:***@h/db"


def test_redaction_of_real_settings_hides_env_secrets(tmp_path: Path) -> None:
    s = load_settings(
        tmp_path,
        environ={
            "LORE__DOCDB__LLM__API_KEY": "sk-abc",
            "LORE__DOCDB__DATABASE__URL": "postgresql://lore:pw@127.0.0.1/lore",
        },
    )
    text = str(redact(to_dict(s)))
    assert "sk-abc" not in text
    assert ":pw@" not in text


def test_the_documented_environment_reference_matches_the_settings() -> None:
    from pathlib import Path

    from lore_core.settings_reference import env_reference, reference_block

    page = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    assert reference_block(page) == env_reference(), (
        "docs/configuration.md's environment reference is stale: "
        "run `uv run python -m lore_core.settings_reference`"
    )
