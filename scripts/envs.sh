#!/usr/bin/env bash
# Run the suites that need a framework of their own (envtests/NAME/), each in its own virtual
# environment .venvs/NAME. The frameworks cannot share one environment (AgentScope 1.x and 2.x,
# AppWorld's pins), nor the main .venv.
#   scripts/envs.sh               every suite
#   scripts/envs.sh langgraph     the named ones; extra arguments after `--` go to pytest
#   REME_ENVS_JOBS=1 scripts/envs.sh   one suite at a time (default: 2 at a time)
#
# An environment is built once per content and reused: it lives in the cache,
# $REME_ENVS_CACHE (default ~/.cache/reme-envs), as NAME-KEY, and .venvs/NAME links to it. KEY is a
# hash of all that goes into it: envtests/NAME/requirements.txt (pip arguments, one per line,
# relative to the repository root), envtests/NAME/no-deps.txt (installed after it with --no-deps),
# envtests/NAME/build.py (run last, with the environment's Python) and the files a
# `# key: GLOB...` line of requirements.txt names (what build.py reads), the dependencies
# pyproject.toml gives the extras a `.[extra]` line names, the Python that builds it and this
# script's BUILD number. Change any of them and the next run builds a new environment;
# a clone, a worktree or a CI run with the same content reuses it without calling pip. ReMe itself
# is not kept in it: pip installs the checkout with the requirements, then it is uninstalled, and
# the suite runs with this checkout on PYTHONPATH, so every checkout tests its own code in a
# shared environment. A build that did not finish is never reused (it is built again), two runs
# building the same environment wait for each other, and an environment no run has used for 14
# days is removed when another of the same NAME is used. `rm -rf ~/.cache/reme-envs` starts over.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BUILD=1  # bump when the way an environment is built changes
CACHE=${REME_ENVS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reme-envs}
export PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1
TIMEFORMAT='   %0R s (CPU %0U s user, %0S s sys)'
names=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do names+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
if [ ${#names[@]} -eq 0 ]; then
  for dir in envtests/*/; do [ -f "$dir/requirements.txt" ] && names+=("$(basename "$dir")"); done
fi

key() {  # the content hash of envtests/$1's environment
  "$PYTHON" - "$1" "$BUILD" <<'PY'
import hashlib, platform, re, sys
from pathlib import Path

name, build = sys.argv[1:]
h = hashlib.sha256(f"{build}\n{sys.version}\n{platform.platform()}\n{Path(sys.executable).resolve()}\n".encode())
extras: set[str] = set()
more: set[Path] = set()
for file in ("requirements.txt", "no-deps.txt", "build.py"):
    path = Path("envtests", name, file)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if file == "build.py":
        h.update(f"{file}\0{text}\0".encode() if text else b"")
        continue
    h.update(f"{file}\0{text}\0".encode())
    for line in text.splitlines():  # the checkout itself: `.`, `.[a,b]`, `-e .[a]`
        found = re.fullmatch(r"\s*(?:-e\s+)?\.(?:\[([^\]]*)\])?\s*(?:#.*)?", line)
        if found:
            extras |= {"(core)"} | {e.strip() for e in (found.group(1) or "").split(",") if e.strip()}
        if line.startswith("# key:"):  # files build.py reads: `# key: GLOB ... (why)`
            for pattern in line[len("# key:"):].split("(")[0].split():
                more.update(p for p in Path().glob(pattern) if p.is_file())
for path in sorted(more):
    h.update(f"{path}\0".encode() + path.read_bytes() + b"\0")
if extras:
    try:
        import tomllib
    except ImportError:  # Python 3.10: the whole file
        h.update(Path("pyproject.toml").read_bytes())
    else:
        project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
        optional = project.get("optional-dependencies", {})
        for extra in sorted(extras):
            h.update(f"{extra}\0{project['dependencies'] if extra == '(core)' else optional.get(extra)}\0".encode())
print(h.hexdigest()[:16])
PY
}

build() {  # create and fill the environment $2 for envtests/$1
  rm -rf "$2"
  "$PYTHON" -m venv "$2"
  "$2/bin/python" -m pip install --quiet -r "envtests/$1/requirements.txt"
  if [ -f "envtests/$1/no-deps.txt" ]; then  # packages whose own requirements the suite does not need
    "$2/bin/python" -m pip install --quiet --no-deps -r "envtests/$1/no-deps.txt"
  fi
  # The checkout the environment was built from: the suites run with theirs on PYTHONPATH instead.
  if "$2/bin/python" -m pip show --quiet reme-memory >/dev/null 2>&1; then
    "$2/bin/python" -m pip uninstall --quiet --yes reme-memory
  fi
  if [ -f "envtests/$1/build.py" ]; then  # what the suite adds beyond pip's requirements
    PYTHONPATH="$PWD" "$2/bin/python" "envtests/$1/build.py"
  fi
  touch "$2/.reme-env-complete"
}

has_flock() { command -v flock >/dev/null; }  # util-linux; without it (macOS), no locking and no pruning

prune() {  # environments of $1, other than $2, that no run has used for 14 days
  local old
  has_flock || return 0
  for old in "$CACHE/$1"-????????????????/; do
    old=${old%/}
    [ "$old" = "$2" ] || [ ! -d "$old" ] && continue
    [ -f "$old/.reme-env-complete" ] && [ -z "$(find "$old/.reme-env-complete" -mtime +14)" ] && continue
    ( flock -n 9 && rm -rf "$old" ) 9>"$old.lock" && rm -f "$old.lock" || true
  done
}

mkdir -p "$CACHE" .venvs
# First every environment, one at a time (pip); then the suites, JOBS at a time: a suite waits on
# its test servers and subprocesses for much of its time, which another suite's CPU fills. Each
# suite's output comes whole when it ends, with its wall and CPU time.
JOBS=${REME_ENVS_JOBS:-2}
for name in "${names[@]}"; do
  [ -f "envtests/$name/requirements.txt" ] || { echo "envs: no envtests/$name/requirements.txt" >&2; exit 2; }
  env="$CACHE/$name-$(key "$name")"
  echo "== $name ($env)"
  time (
    if has_flock; then flock 9; fi  # another run building or pruning this environment: wait for it
    if [ -f "$env/.reme-env-complete" ]; then
      touch "$env/.reme-env-complete"
      echo "   environment: reused"
    else
      echo "   environment: building"
      build "$name" "$env"
    fi
  ) 9>"$env.lock"
  if [ -d ".venvs/$name" ] && [ ! -L ".venvs/$name" ]; then rm -rf ".venvs/$name"; fi  # one this script made before the cache
  ln -sfn "$env" ".venvs/$name"
  prune "$name" "$env"
done

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
suite() {  # run envtests/$1's suite; its output into $logs/$1.log, printed whole at the end
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  {
    echo "== $name: suite"
    time PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" ".venvs/$name/bin/python" -m pytest -q "envtests/$name" "$@" \
      || rc=$?
    echo "   $name done in $(( $(date +%s) - start )) s"
  } >"$logs/$name.log" 2>&1
  echo "$rc" >"$logs/$name.rc"
  if has_flock; then ( flock 8; cat "$logs/$name.log" ) 8>"$logs/print.lock"; else cat "$logs/$name.log"; fi
}
for name in "${names[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  suite "$name" "$@" &
done
wait
failed=()
for name in "${names[@]}"; do
  [ "$(cat "$logs/$name.rc" 2>/dev/null || echo 1)" = 0 ] || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then echo "envs: failed: ${failed[*]}" >&2; exit 1; fi
