"""A marker an edit damaged is reported as what it is (docs/markdown.md's own examples)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from reme import ReMe

from test_markdown import alice_tree, edit


@pytest.mark.parametrize("broken", ["<!-- reme:{key} ->", "<!- reme:{key} -->", "reme:{key} -->",
                                    "<!-- reme:{key} --", "<!--reme:{key}>"])
async def test_a_broken_marker_is_reported_as_broken_not_as_two_markers(reme: ReMe, tmp_path: Path,
                                                                        broken: str) -> None:
    tree, nodes = await alice_tree(reme, tmp_path)
    key = uuid.UUID(nodes["seat"].memory_id).hex[:8]
    edit(tree / "MEMORY.md", f"<!-- reme:{key} -->", broken.format(key=key))
    result = await reme.sync_markdown(tree, user_name="alice", dry_run=True)
    [issue] = result.ambiguous
    assert "broken marker" in issue.reason and "two markers" not in issue.reason, issue.reason


async def test_two_whole_markers_in_one_item_are_still_two_markers(reme: ReMe, tmp_path: Path) -> None:
    tree, nodes = await alice_tree(reme, tmp_path)
    seat, food = (uuid.UUID(nodes[k].memory_id).hex[:8] for k in ("seat", "food"))
    edit(tree / "MEMORY.md", f"<!-- reme:{seat} -->", f"<!-- reme:{food} --> <!-- reme:{seat} -->")
    result = await reme.sync_markdown(tree, user_name="alice", dry_run=True)
    assert any("two markers" in issue.reason for issue in result.ambiguous), result.ambiguous
