"""The floor of one read by id on a loopback Qdrant node, beside the embedded store, in one run.

    python -m benchmark.roundtrip_floor                 # starts a node (scripts/qdrant.sh's binary) for the run
    python -m benchmark.roundtrip_floor --calls 1000

`ReMe.get_memory` on the embedded store is the baseline; on a node started for the run it is
measured through the facade (REST and gRPC), and below it the least a request to the node can
cost from Python: qdrant-client's own retrieve (REST, gRPC), the raw gRPC stub's `Get` (no
conversion to REST models), and an empty `GET /healthz` over a kept-alive httpx connection (no
work in the server at all). Each line gives p50 / p95 in ms and its p50 as a multiple of the
embedded `get_memory`'s. Issue 27 asks every facade call to be within x3 of the embedded store on
a loopback node: this says how far below x3 a single round trip can go on the machine it runs on.
"""
from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

import httpx
from qdrant_client import AsyncQdrantClient, grpc as qgrpc, models

from benchmark.qdrant_server import serve
from benchmark.store_bench import DIM, facade_stores, pct, timed as bench_timed


async def timed(call: Callable[[], Awaitable[Any]], calls: int) -> tuple[float, float]:
    """p50 and p95 in ms of `calls` calls (`store_bench.timed`, `pct`) after 30 to warm up."""
    await bench_timed(call, 30)
    return pct((await bench_timed(call, calls))[0])


async def run(calls: int) -> str:
    root = Path(tempfile.mkdtemp(prefix="reme-floor-"))
    rows: list[tuple[str, tuple[float, float]]] = []
    try:
        with serve(root / "qdrant") as node:
            stores = {("server, " if name != "embedded" else "") + name: reme
                      for name, reme in facade_stores(root, node.url, node.grpc_port).items()}
            for name, reme in stores.items():
                await reme.open()
                stored = await reme.add_memory(f"Alice prefers window seats ({name})", user_name="alice")
                rows.append((f"`get_memory`, {name}", await timed(lambda r=reme, m=stored.memory_id: r.get_memory(m),
                                                                  calls)))
            rest = AsyncQdrantClient(url=node.url, check_compatibility=False)
            grpc = AsyncQdrantClient(url=node.url, grpc_port=node.grpc_port, prefer_grpc=True,
                                     check_compatibility=False)
            name, pid = f"floor{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
            await rest.create_collection(name, vectors_config={"dense": models.VectorParams(
                size=DIM, distance=models.Distance.COSINE)})
            await rest.upsert(name, [models.PointStruct(id=pid, vector={"dense": [0.01] * DIM},
                                                        payload={"content": "x" * 200, "user": "alice"})], wait=True)
            rows.append(("qdrant-client retrieve, REST", await timed(
                lambda: rest.retrieve(name, [pid], with_payload=True, with_vectors=["dense"]), calls)))
            rows.append(("qdrant-client retrieve, gRPC", await timed(
                lambda: grpc.retrieve(name, [pid], with_payload=True, with_vectors=["dense"]), calls)))
            request = qgrpc.GetPoints(collection_name=name, ids=[qgrpc.PointId(uuid=pid)],
                                      with_payload=qgrpc.WithPayloadSelector(enable=True),
                                      with_vectors=qgrpc.WithVectorsSelector(
                                          include=qgrpc.VectorsSelector(names=["dense"])))
            rows.append(("raw gRPC stub `Get`", await timed(lambda: grpc.grpc_points.Get(request), calls)))
            async with httpx.AsyncClient(base_url=node.url) as http:
                rows.append(("empty `GET /healthz`, httpx", await timed(lambda: http.get("/healthz"), calls)))
            for reme in stores.values():
                await reme.close()
            await rest.close()
            await grpc.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = rows[0][1][0]
    out = [f"One read by id, {calls} calls each (p50 / p95 ms; p50 against the embedded `get_memory`):", "",
           "| call | p50 / p95 ms | vs embedded |", "|---|---|---|"]
    out += [f"| {what} | {p50:.3f} / {p95:.3f} | x{p50 / base:.1f} |" for what, (p50, p95) in rows]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=400)
    print(asyncio.run(run(parser.parse_args().calls)))


if __name__ == "__main__":
    main()
