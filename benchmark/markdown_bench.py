"""Memory as Markdown at scale: how long `export_markdown` and `sync_markdown` take for one user
with N memories (a tenth of them journal events), on the embedded store with the hash embedder
(so embedding is not what is measured).

For each size it reports: the export, a sync of the untouched tree (read, compare, nothing
written), and a sync with 1% of the items edited, 1% removed and 1% added (one batch written,
the edited and added texts embedded, the tree rewritten), plus the tree's size on disk.

    python -m benchmark.markdown_bench --sizes 1000 10000
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from reme import MemoryNode, ReMe

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def edit_tree(tree: Path, share: float) -> int:
    """Edit, remove and append `share` of MEMORY.md's items each; returns how many of each."""
    memory = tree / "MEMORY.md"
    lines = memory.read_text(encoding="utf-8").split("\n")
    items = [i for i, line in enumerate(lines) if line.startswith("- ")]
    n = max(1, int(len(items) * share))
    for i in items[:n]:
        lines[i] = lines[i].replace("fact", "edited fact", 1)
    gone = set(items[n:2 * n])
    kept = [line for i, line in enumerate(lines) if i not in gone]
    memory.write_text("\n".join(kept) + "".join(f"- new fact {i}\n" for i in range(n)), encoding="utf-8")
    return n


async def measure(size: int, root: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    async with ReMe(working_dir=root / f"wd-{size}", embedding={"backend": "hash"}) as reme:
        nodes = [MemoryNode(memory_type="personal", memory_target="alice", content=f"Alice fact number {i}",
                            tags=["event"] if i % 10 == 0 else [], message_time=T0 + timedelta(hours=i))
                 for i in range(size)]
        for start in range(0, size, 5000):
            await reme.add_memories(nodes[start:start + 5000])
        tree = root / f"md-{size}"
        t = time.perf_counter()
        done = await reme.export_markdown(tree, user_name="alice")
        out["export_s"] = time.perf_counter() - t
        out["files"] = len(done.files)
        out["mb"] = sum(p.stat().st_size for p in tree.rglob("*.md")) / 1e6
        t = time.perf_counter()
        same = await reme.sync_markdown(tree, user_name="alice")
        out["sync_same_s"] = time.perf_counter() - t
        assert same.changes == 0 and same.unchanged == size, same
        n = edit_tree(tree, 0.01)
        t = time.perf_counter()
        result = await reme.sync_markdown(tree, user_name="alice")
        out["sync_edits_s"] = time.perf_counter() - t
        assert (len(result.updated), len(result.deleted), len(result.added)) == (n, n, n), result
        out["edits"] = n
    return out


async def main(sizes: list[int]) -> None:
    print(f"{'memories':>9} {'files':>6} {'MB':>6} {'export s':>9} {'sync (no edits) s':>18} "
          f"{'sync (3% changed) s':>20}")
    with tempfile.TemporaryDirectory(prefix="reme-md-bench-") as folder:
        for size in sizes:
            r = await measure(size, Path(folder))
            print(f"{size:>9} {int(r['files']):>6} {r['mb']:>6.2f} {r['export_s']:>9.2f} {r['sync_same_s']:>18.2f} "
                  f"{r['sync_edits_s']:>20.2f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    asyncio.run(main(parser.parse_args().sizes))
