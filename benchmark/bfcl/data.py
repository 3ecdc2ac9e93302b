"""BFCL-v3 multi-turn base: the tasks, their function docs and ground truth, read from the data
that ships inside `bfcl-eval==2025.7.17` (or a copy of its `data/` folder), and the 50 / 150
train / val split of the original ReMe experiments (`split.json`, beside this file)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

BFCL_VERSION = "2025.7.17"
"""Later releases changed 91 of the 200 tasks: results are comparable only on this one."""
CATEGORY = "multi_turn_base"
SPLIT = Path(__file__).with_name("split.json")
FUNC_DOCS = {"GorillaFileSystem": "gorilla_file_system.json", "MathAPI": "math_api.json",
             "MessageAPI": "message_api.json", "TwitterAPI": "posting_api.json", "TicketAPI": "ticket_api.json",
             "TradingBot": "trading_bot.json", "TravelAPI": "travel_booking.json",
             "VehicleControlAPI": "vehicle_control.json"}


class DataError(Exception):
    """The BFCL data is missing or not the pinned release."""


@dataclass
class Task:
    id: str
    question: list[list[dict[str, Any]]]  # turns, each a list of messages
    initial_config: dict[str, Any]
    involved_classes: list[str]
    functions: list[dict[str, Any]]  # BFCL function docs of the involved classes
    ground_truth: list[list[str]]  # per turn, the calls as Python source

    @property
    def query(self) -> str:
        """The first user request: what a lesson is retrieved with and learned for."""
        return next(str(m["content"]) for m in self.question[0] if m["role"] == "user")


def package_data() -> Path:
    """The `data/` folder of the installed bfcl-eval, which must be the pinned release."""
    try:
        version = metadata.version("bfcl-eval")
    except metadata.PackageNotFoundError:
        raise DataError(f"bfcl-eval is not installed: pip install bfcl-eval=={BFCL_VERSION} "
                        f"(see benchmark/bfcl/README.md), or pass --data") from None
    if version != BFCL_VERSION:
        raise DataError(f"bfcl-eval {version} is installed; this benchmark pins {BFCL_VERSION} "
                        f"(later releases changed the tasks): pip install bfcl-eval=={BFCL_VERSION}")
    import bfcl_eval

    return Path(bfcl_eval.__file__).parent / "data"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DataError(f"no {path.name} in {path.parent}")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def split_ids(split: str) -> list[str]:
    """Task ids of `train`, `val` or `all` (train then val)."""
    ids: dict[str, list[str]] = json.loads(SPLIT.read_text(encoding="utf-8"))
    return ids["train"] + ids["val"] if split == "all" else list(ids[split])


def load_tasks(data: Path, ids: list[str]) -> list[Task]:
    """The tasks named by `ids`, in that order, from a BFCL `data/` folder."""
    entries = {e["id"]: e for e in _jsonl(data / f"BFCL_v3_{CATEGORY}.json")}
    answers = {e["id"]: e["ground_truth"] for e in _jsonl(data / "possible_answer" / f"BFCL_v3_{CATEGORY}.json")}
    docs: dict[str, list[dict[str, Any]]] = {}
    tasks = []
    for task_id in ids:
        if task_id not in entries or task_id not in answers:
            raise DataError(f"task {task_id} is not in {data}")
        entry = entries[task_id]
        functions = []
        for name in entry["involved_classes"]:
            if name not in docs:
                docs[name] = _jsonl(data / "multi_turn_func_doc" / FUNC_DOCS[name])
            functions += docs[name]
        tasks.append(Task(task_id, entry["question"], entry["initial_config"], list(entry["involved_classes"]),
                          functions, answers[task_id]))
    return tasks
