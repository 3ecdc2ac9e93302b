"""What ReMe asks a real Qdrant node over REST, seen on the wire through a relay on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path
from typing import AsyncIterator

from benchmark.qdrant_server import Node
from reme import ReMe

from conftest import DIM


@contextlib.asynccontextmanager
async def relay(port: int) -> AsyncIterator[tuple[int, bytearray]]:
    """A TCP relay on a free port to the node's `port`: yields the relay's port and every byte the
    node sent back through it."""
    answered = bytearray()
    links: list[asyncio.Task[None]] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, keep: bool) -> None:
        while data := await reader.read(65536):
            if keep:
                answered.extend(data)
            writer.write(data)
            await writer.drain()
        writer.close()

    async def serve(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        node_reader, node_writer = await asyncio.open_connection("127.0.0.1", port)
        links.extend([asyncio.create_task(pipe(client_reader, node_writer, False)),
                      asyncio.create_task(pipe(node_reader, client_writer, True))])

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], answered
    finally:
        server.close()
        for link in links:
            link.cancel()
        await asyncio.gather(*links, return_exceptions=True)


async def test_rest_answers_come_uncompressed(empty_node: Node, tmp_path: Path) -> None:
    """Qdrant sends a gzip answer over 1 KB in two writes on a socket without TCP_NODELAY, and the
    second waits for the client's delayed ACK (40 ms on Linux): an update's read of the memory with
    its vector stalled so about every other call. ReMe asks for answers as they are."""
    async with relay(empty_node.http_port) as (port, answered):
        async with ReMe(working_dir=tmp_path, embedding={"backend": "hash", "dimensions": DIM},
                        vector_store={"backend": "qdrant", "url": f"http://127.0.0.1:{port}"}) as reme:
            memory = await reme.add_memory("Alice keeps bees in the garden behind her house", user_name="alice")
            await reme.update_memory(memory.memory_id, content="Alice keeps bees and goats in the garden", user_name="alice")
    heads = re.findall(rb"HTTP/1\.1 \d+ [^\r]*\r\n(.*?)\r\n\r\n", bytes(answered), re.S)
    assert len(heads) > 5
    assert not [head for head in heads if b"content-encoding" in head.lower()]
    sizes = [int(size) for size in re.findall(rb"(?i)content-length: (\d+)", b"\n".join(heads))]
    assert max(sizes) > 1024  # the read of the memory with its vector, the answer that stalled


async def test_changes_by_id_send_few_requests_from_a_process_that_opened_an_existing_store(
        empty_node: Node, tmp_path: Path) -> None:
    """Counted on the wire, in a process that opened collections another one made: an add sends 5
    requests (4 round trips), an update 6 (5: the version goes beside the conditional write, and
    the read-back after both also says whether the memory is still stored), a usage count 3, a
    delete 7 (6). Before, such a process asked the size of the versions collection (2 requests)
    before every write, and the version and the check for a purge took 2 round trips of their own."""
    settings = {"embedding": {"backend": "hash", "dimensions": DIM}}
    async with ReMe(working_dir=tmp_path / "first", vector_store={"backend": "qdrant", "url": empty_node.url},
                    **settings) as reme:
        await reme.add_memory("Alice keeps bees", user_name="alice")
    async with relay(empty_node.http_port) as (port, answered):
        async with ReMe(working_dir=tmp_path / "second", **settings,
                        vector_store={"backend": "qdrant", "url": f"http://127.0.0.1:{port}"}) as reme:
            def answers() -> int:
                return len(re.findall(rb"HTTP/1\.1 \d+ ", bytes(answered)))

            await reme.add_memory("Alice keeps hens", user_name="alice")  # the first write asks what is asked once
            sent = []
            before = answers()
            memory = await reme.add_memory("Alice keeps goats", user_name="alice")
            sent.append(answers() - before)
            before = answers()
            await reme.update_memory(memory.memory_id, content="Alice keeps goats and bees", user_name="alice")
            sent.append(answers() - before)
            before = answers()
            await reme.record_usage([memory.memory_id], True, user_name="alice")
            sent.append(answers() - before)
            before = answers()
            await reme.delete_memory(memory.memory_id, user_name="alice")
            sent.append(answers() - before)
    assert sent == [5, 6, 3, 7]
