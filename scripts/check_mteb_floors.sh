#!/usr/bin/env bash
# Check that the generated rcp_ndcg_tasks.py runs on the oldest mteb releases it supports.
#
# Not part of CI (it installs packages). For each floor version it creates a virtualenv with
# that mteb (torch pinned to the project's 2.13.0, so no other torch is ever installed), installs
# this project, and runs the task-file tests that load the file from a local Hub and evaluate a
# deterministic encoder with stock mteb (tests/test_taskfile.py).
#
# Usage: scripts/check_mteb_floors.sh [VERSION ...]     (default: 2.0.1 2.10.5)
#        KEEP_VENVS=1 keeps the virtualenvs under $FLOORS_DIR (default: a temporary folder).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
TORCH_PIN="torch==2.13.0"
VERSIONS=("$@")
[ ${#VERSIONS[@]} -eq 0 ] && VERSIONS=(2.0.1 2.10.5)
FLOORS_DIR="${FLOORS_DIR:-$(mktemp -d -t rcp-mteb-floors-XXXXXX)}"

cleanup() { [ "${KEEP_VENVS:-0}" = "1" ] || rm -rf "$FLOORS_DIR"; }
trap cleanup EXIT

status=0
for version in "${VERSIONS[@]}"; do
  venv="$FLOORS_DIR/mteb-$version"
  echo "== mteb $version: $venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "$TORCH_PIN" "mteb==$version" \
      "pytest>=8,<10" -e "$ROOT"
  # mteb 2.0.1's wheel (and sdist) ship mteb/tasks/Retrieval, .../STS, ... while its code imports
  # mteb.tasks.retrieval, .../sts: it only imports on case-insensitive filesystems. On Linux,
  # link the lowercase names to the shipped folders (the package's code stays untouched).
  tasks_dir="$("$venv/bin/python" -c 'import importlib.util as u, os; print(os.path.join(os.path.dirname(u.find_spec("mteb").origin), "tasks"))')"
  for dir in "$tasks_dir"/*/; do
    name="$(basename "$dir")"
    lower="$(echo "$name" | tr '[:upper:]' '[:lower:]')"
    if [ "$name" != "$lower" ] && [ ! -e "$tasks_dir/$lower" ]; then
      ln -s "$name" "$tasks_dir/$lower"
      echo "   note: linked mteb/tasks/$lower -> $name (case mismatch in the mteb $version package)"
    fi
  done
  installed="$("$venv/bin/python" -c 'import mteb, torch; print(mteb.__version__, torch.__version__)')"
  echo "   installed mteb/torch: $installed"
  case "$installed" in
    "$version "2.13.0*) ;;
    *) echo "   FAILED: expected mteb $version with torch 2.13.0"; status=1; continue ;;
  esac
  if (cd "$ROOT" && "$venv/bin/python" -m pytest -q -p no:cacheprovider \
        tests/test_taskfile.py -k "stock_mteb or open_corpus or get_tasks or metadata"); then
    echo "   OK: mteb $version"
  else
    echo "   FAILED: mteb $version"
    status=1
  fi
done
exit $status
