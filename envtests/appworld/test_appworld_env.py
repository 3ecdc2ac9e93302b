"""The AppWorld harness in AppWorld's own environment (appworld 0.1.3.post1, pydantic 1, no
ReMe): it imports and runs there, the installed AppWorld has every part of the interface the
harness uses (which the stand-in world of the main suite's tests imitates), and without AppWorld's
data (online only) the command says how to get it. Tasks themselves cannot run here: no data."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import appworld_standin
import pydantic
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def appworld() -> object:
    # Unpacks the app code shipped encrypted in the package (offline), as setup.sh does.
    subprocess.run([sys.executable, "-m", "appworld.cli", "install"], check=True, capture_output=True)
    import appworld

    return appworld


def test_the_harness_runs_under_pydantic_1_without_reme() -> None:
    assert pydantic.VERSION.startswith("1.")
    with pytest.raises(ImportError):
        import reme
    import benchmark.appworld.run


def params(function: object) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p != "self"]  # type: ignore[arg-type]


def test_installed_appworld_has_what_the_harness_and_the_stand_in_use(appworld: object) -> None:
    from appworld.apps.admin.models import MainUserMunch
    from appworld.evaluator import TestTracker
    from appworld.task import Task

    world, standin = appworld.AppWorld, appworld_standin.AppWorld  # type: ignore[attr-defined]
    assert params(world.__init__)[:2] == params(standin.__init__) == ["task_id", "experiment_name"]
    assert callable(world.__enter__) and callable(world.__exit__)
    for method in ("execute", "task_completed", "evaluate", "close"):
        assert params(getattr(world, method))[:len(params(getattr(standin, method)))] == \
            params(getattr(standin, method)), method
    assert params(appworld.load_task_ids)[0] == params(appworld_standin.load_task_ids)[0]  # type: ignore[attr-defined]
    assert {"instruction", "supervisor"} <= set(params(Task.__init__))
    assert {"first_name", "last_name", "email", "phone_number"} <= set(MainUserMunch.__annotations__)
    tracker = TestTracker()
    assert tracker.passes == [] and tracker.failures == []


def test_without_data_the_command_says_how_to_get_it(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "benchmark.appworld", "--model", "m", "--output",
                           str(tmp_path / "out.json")], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "APPWORLD_ROOT": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert "appworld download data" in done.stderr and "no AppWorld dev tasks" in done.stderr
