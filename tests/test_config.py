"""ReMeConfig: keyword arguments over environment over file over defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reme import ConfigError, EmbeddingConfig, ReMeConfig


def test_defaults_are_the_embedded_store_and_local_embeddings() -> None:
    config = ReMeConfig.load(env={})
    assert config.vector_store.backend == "edge" and config.embedding.backend == "local"
    assert config.working_dir == Path(".reme") and config.llm.api_key is None


def test_precedence_kwargs_over_env_over_file(tmp_path: Path) -> None:
    path = tmp_path / "reme.json"
    path.write_text(json.dumps({"working_dir": "from-file", "embedding": {"backend": "hash", "batch_size": 7},
                                "vector_store": {"collection": "file"}}))
    env = {"REME_CONFIG": str(path), "REME_VECTOR_STORE__COLLECTION": "env", "REME_WORKING_DIR": "from-env"}
    config = ReMeConfig.load(env=env, working_dir="from-kwargs")
    assert config.working_dir == Path("from-kwargs")
    assert config.vector_store.collection == "env"
    assert config.embedding.backend == "hash" and config.embedding.batch_size == 7


def test_sections_accept_models_and_merge_with_the_rest(tmp_path: Path) -> None:
    config = ReMeConfig.load(env={"REME_EMBEDDING__BATCH_SIZE": "9"},
                             embedding=EmbeddingConfig(backend="hash"))
    assert config.embedding.backend == "hash" and config.embedding.batch_size == 9


def test_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "reme.toml"
    path.write_text('[vector_store]\nbackend = "qdrant"\nlocation = ":memory:"\n[llm]\nmodel = "gpt-4o-mini"\n')
    config = ReMeConfig.load(path, env={})
    assert config.vector_store.backend == "qdrant" and config.llm.model == "gpt-4o-mini"


def test_openai_variables_fill_the_llm_and_the_openai_embedder() -> None:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    config = ReMeConfig.load(env=env, embedding={"backend": "openai"})
    assert config.llm.api_key is not None and config.llm.api_key.get_secret_value() == "sk-test"
    assert config.embedding.base_url == "http://127.0.0.1:9/v1"
    assert "sk-test" not in repr(config)  # secrets stay out of logs
    assert ReMeConfig.load(env=env).embedding.api_key is None  # the local embedder needs no key


@pytest.mark.parametrize("env,kwargs", [
    ({"REME_NOPE": "1"}, {}),
    ({"REME_EMBEDDING__NOPE": "1"}, {}),
    ({}, {"embedding": {"backend": "word2vec"}}),
    ({}, {"vector_store": {"batch_size": 0}}),
    ({}, {"vector_store": {"hnsw_ef": 0}}),
    ({"REME_CONFIG": "/no/such/file.json"}, {}),
])
def test_bad_settings_are_config_errors(env: dict[str, str], kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ReMeConfig.load(env=env, **kwargs)


def test_lock_timeout_defaults_to_failing_at_once() -> None:
    from reme.config import ReMeConfig

    assert ReMeConfig.load(env={}).vector_store.lock_timeout == 0
    assert ReMeConfig.load(env={"REME_VECTOR_STORE__LOCK_TIMEOUT": "2.5"}).vector_store.lock_timeout == 2.5


def test_the_facade_takes_a_config_mapping_like_keyword_sections(tmp_path: Path) -> None:
    from reme import ReMeSync

    with ReMeSync(config={"working_dir": str(tmp_path / "w"), "embedding": {"backend": "hash", "dimensions": 8}}) as r:
        assert r.config.embedding.backend == "hash" and r.config.working_dir == tmp_path / "w"
        r.add_memory("likes tea", user_name="ann")
    assert (tmp_path / "w").is_dir()


@pytest.mark.parametrize("config, kwargs, error", [
    ({"embedding": {"backend": "word2vec"}}, {}, ConfigError),
    ({"no_such_section": {}}, {}, ConfigError),
    ("reme.toml", {}, TypeError),  # a path goes in config_file
    (ReMeConfig(), {"working_dir": "elsewhere"}, TypeError),  # would be ignored silently
    ({"working_dir": "a"}, {"working_dir": "b"}, TypeError),
])
def test_a_config_the_facade_cannot_use_is_refused_at_once(config: object, kwargs: dict[str, object],
                                                             error: type[Exception]) -> None:
    from reme import ReMe

    with pytest.raises(error):
        ReMe(config=config, **kwargs)  # type: ignore[arg-type]
