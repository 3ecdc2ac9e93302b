"""Backups: every record of a store's collections (memories and their versions), vectors
included, in one compact JSONL file, and back.

The first line is a header (`{"format": "reme-backup", "version": 1, "dim": ..., "collections":
{...}}`); every other line is one record: the collection's role (`memories` or `versions`), the
node's fields, and its vector as base64 of little-endian float32 (what the engine stores), so a
backup is a fraction of the store's size on disk and restores exactly.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Mapping

import numpy as np
from pydantic import ValidationError

from reme.errors import InvalidInputError, describe
from reme.schema import MAX_IMPORT_LINES, MemoryNode, parse_json
from reme.store.base import VectorRecord, VectorStore, write_jsonl

FORMAT = "reme-backup"
VERSION = 1


def encode_vector(vector: list[float]) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: Any, dim: int, where: str) -> list[float]:
    try:
        raw = base64.b64decode(text, validate=True)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{where}: the vector is not base64") from None
    if len(raw) != 4 * dim:
        raise InvalidInputError(f"{where}: the vector has {len(raw) // 4} values, the backup says {dim}")
    values = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(values).all():
        raise InvalidInputError(f"{where}: the vector holds NaN or infinite values")
    return [float(x) for x in values]


async def dump(store: VectorStore, collections: Mapping[str, str], path: Path) -> int:
    """Write every record of `collections` (role -> collection name) to `path`, atomically (a
    temporary file renamed into place); returns how many records."""
    dim = await store.collection_dim(next(iter(collections.values())))

    async def rows() -> AsyncIterator[dict[str, Any]]:
        yield {"format": FORMAT, "version": VERSION, "dim": dim, "collections": dict(collections)}
        for role, name in collections.items():
            async for record in store.iter_records(name, with_vectors=True):
                assert record.vector is not None  # asked for
                yield {"role": role, "node": record.node.model_dump(mode="json"),
                       "vector": encode_vector(record.vector)}

    return await write_jsonl(path, rows()) - 1  # the header is not a record


def load(path: Path, roles: Mapping[str, Callable[[Any], MemoryNode]]) -> tuple[int, dict[str, list[VectorRecord]]]:
    """The vector size and the records (by role) of a backup file, each node read by its role's
    function (which raises `ValueError` or a `ValidationError` for a node it refuses); any flaw,
    an id twice in one role included, is an `InvalidInputError` naming the line, before anything
    is written."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise InvalidInputError(f"cannot read the backup {path}: {exc.strerror or exc}") from None
    if len(lines) > MAX_IMPORT_LINES + 1:
        raise InvalidInputError(f"{path}: more than {MAX_IMPORT_LINES} records; nothing was restored")
    header = _line(lines[0], path, 1) if lines else {}
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise InvalidInputError(f"{path} is not a ReMe backup (format {FORMAT!r}, version {VERSION})")
    dim = header.get("dim")
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise InvalidInputError(f"{path}:1: the vector size is not a positive integer")
    records: dict[str, list[VectorRecord]] = {role: [] for role in roles}
    first: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        row = _line(line, path, number)
        where = f"{path}:{number}"
        if not isinstance(row.get("role"), str) or row["role"] not in roles:  # a list is not hashable
            raise InvalidInputError(f"{where}: role must be one of {sorted(roles)}")
        try:
            node = roles[row["role"]](row.get("node"))
        except ValidationError as exc:
            raise InvalidInputError(f"{where}: {describe(exc)}") from None
        except ValueError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
        key = (row["role"], node.memory_id)
        if key in first:
            raise InvalidInputError(f"{where}: memory_id {node.memory_id} is also on line {first[key]}")
        first[key] = number
        records[row["role"]].append(VectorRecord.model_construct(node=node, vector=decode_vector(row.get("vector"),
                                                                                                  dim, where)))
    return dim, records


def _line(line: bytes, path: Path, number: int) -> dict[str, Any]:
    try:
        row = parse_json(line.decode("utf-8"), "the line")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{path}:{number}: the line is not valid UTF-8") from None
    except ValueError as exc:
        raise InvalidInputError(f"{path}:{number}: {exc}") from None
    if not isinstance(row, dict):
        raise InvalidInputError(f"{path}:{number}: expected a JSON object")
    return row
