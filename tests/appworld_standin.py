"""Test support: a minimal stand-in for the `appworld` package, honouring the interface the
AppWorld harness uses (`AppWorld(task_id=..., experiment_name=...)` as a context manager,
`task.instruction`, `task.supervisor`, `execute`, `task_completed`, `evaluate` with `passes` and
`failures`, and `load_task_ids`), since AppWorld's data cannot be downloaded here. One music app
with three songs; the code the agent writes really runs (`exec`) against it. Never shipped.

Datasets: `train` = rate3_1; `dev` = rate_1, rate_2 (scenario `rate`) and count_1 (scenario `count`).
"""

from __future__ import annotations

import contextlib
import io
import traceback
from types import SimpleNamespace
from typing import Any, Callable

TASKS: dict[str, tuple[str, Callable[[AppWorld], list[tuple[str, bool]]]]] = {
    "rate3_1": ("Rate all my liked songs 3 stars", lambda w: w.rated(3)),
    "rate_1": ("Rate all my liked songs 5 stars", lambda w: w.rated(5)),
    "rate_2": ("Rate all my liked songs 4 stars", lambda w: w.rated(4)),
    "count_1": ("How many songs are in my library?", lambda w: [("answer is 3", w.answer == 3)]),
}
DATASETS = {"train": ["rate3_1"], "dev": ["rate_1", "rate_2", "count_1"]}
OPENED: list[tuple[str, str]] = []
"""(task_id, experiment_name) of every world opened, in order."""


def load_task_ids(dataset_name: str) -> list[str]:
    return list(DATASETS[dataset_name])


class AppWorld:
    def __init__(self, task_id: str, experiment_name: str = "default") -> None:
        OPENED.append((task_id, experiment_name))
        instruction, self._tests = TASKS[task_id]
        supervisor = SimpleNamespace(first_name="Ada", last_name="Lovelace", email="ada@example.com",
                                     phone_number="5550100")
        self.task = SimpleNamespace(task_id=task_id, instruction=instruction, supervisor=supervisor)
        self.songs = {1: True, 2: True, 3: False}  # song id -> liked
        self.ratings: dict[int, int] = {}
        self.completed = False
        self.answer: Any = None
        spotify = SimpleNamespace(show_liked_songs=lambda: [{"song_id": i} for i, liked in self.songs.items() if liked],
                                  show_library=lambda: [{"song_id": i} for i in self.songs],
                                  review_song=self._review)
        supervisor_app = SimpleNamespace(complete_task=self._complete)
        docs = SimpleNamespace(show_app_descriptions=lambda: [{"name": "spotify"}, {"name": "supervisor"}])
        self._globals: dict[str, Any] = {"apis": SimpleNamespace(spotify=spotify, supervisor=supervisor_app,
                                                                 api_docs=docs)}

    def _review(self, song_id: int, rating: int) -> dict[str, str]:
        if song_id not in self.songs:
            raise ValueError(f"no song {song_id}")
        self.ratings[song_id] = rating
        return {"message": "Song reviewed."}

    def _complete(self, answer: Any = None, status: str = "success") -> str:
        self.completed, self.answer = True, answer
        return "Marked the active task complete."

    def rated(self, stars: int) -> list[tuple[str, bool]]:
        return [(f"song {i} rated {stars}", self.ratings.get(i) == stars) for i, liked in self.songs.items() if liked]

    def execute(self, code: str) -> str:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(code, self._globals)
        except Exception:
            return out.getvalue() + "Execution failed. Traceback:\n" + traceback.format_exc(limit=1)
        return out.getvalue()

    def task_completed(self) -> bool:
        return self.completed

    def evaluate(self) -> SimpleNamespace:
        results = self._tests(self) + [("task completed", self.completed)]
        return SimpleNamespace(passes=[n for n, ok in results if ok], failures=[n for n, ok in results if not ok])

    def close(self) -> None:
        return None

    def __enter__(self) -> AppWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
