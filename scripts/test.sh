#!/usr/bin/env bash
# The project's test command:  bash scripts/test.sh [extra pytest arguments]
#
# Installs what is missing (Chromium through apt-get, the package with its `test` extra through
# pip), skipping what is already there, checks the code with ruff, then runs every test that
# needs no GPU. The exit status is ruff's if it finds a problem, else pytest's. Also sourced by scripts/start.sh and .ci/run for its helper functions.
#
# Environment: PYTHON (interpreter to use; default: the active virtualenv, ./.venv, python,
# python3 -- an "externally managed" system Python gets a ./.venv instead), DALI_GALLERY_CHROMIUM
# (browser path, default /usr/bin/chromium), CI (when set, a missing browser fails the browser
# tests instead of skipping them).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHROMIUM_BIN="${DALI_GALLERY_CHROMIUM:-/usr/bin/chromium}"

export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export MPLBACKEND=Agg JUPYTER_PLATFORM_DIRS=1
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1  # the tests use the system Chromium

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }

# Run a command as root: directly when root, through sudo when it exists, else fail.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo -E "$@"
    else
        log "need root (or sudo) to run: $*"
        return 1
    fi
}

apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        log "apt-get not found: install $* by hand"
        return 1
    fi
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "$@"
}

ensure_chromium() {
    if [ -x "$CHROMIUM_BIN" ]; then
        return 0
    fi
    log "installing Chromium (apt-get install chromium)"
    # Debian's package; on Ubuntu `chromium` is a snap wrapper that does not run in containers.
    apt_install chromium fonts-liberation
}

_is_externally_managed() {
    "$1" - <<'PY'
import os, sys, sysconfig
in_venv = sys.prefix != sys.base_prefix
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(0 if (not in_venv and os.path.exists(marker)) else 1)
PY
}

# Sets GALLERY_PY to the interpreter to use (creating ./.venv when the system Python refuses pip).
ensure_python() {
    if [ -n "${GALLERY_PY:-}" ]; then
        return 0
    fi
    if [ -n "${PYTHON:-}" ]; then
        GALLERY_PY="$PYTHON"
    elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
        GALLERY_PY="$VIRTUAL_ENV/bin/python"
    elif [ -x "$REPO_ROOT/.venv/bin/python" ]; then
        GALLERY_PY="$REPO_ROOT/.venv/bin/python"
    elif command -v python >/dev/null 2>&1; then
        GALLERY_PY="$(command -v python)"
    elif command -v python3 >/dev/null 2>&1; then
        GALLERY_PY="$(command -v python3)"
    else
        log "no python found; installing python3"
        apt_install python3 python3-venv
        GALLERY_PY="$(command -v python3)"
    fi
    if _is_externally_managed "$GALLERY_PY"; then
        log "$GALLERY_PY is externally managed (PEP 668): using a virtualenv in $REPO_ROOT/.venv"
        if ! "$GALLERY_PY" -m venv "$REPO_ROOT/.venv" >/dev/null 2>&1; then
            rm -rf "$REPO_ROOT/.venv"
            apt_install python3-venv
            "$GALLERY_PY" -m venv "$REPO_ROOT/.venv"
        fi
        GALLERY_PY="$REPO_ROOT/.venv/bin/python"
    fi
    export GALLERY_PY
    # so that console scripts (dali-gallery) of that environment are found
    PATH="$(dirname "$GALLERY_PY"):$PATH"
    export PATH
}

# True when the package is installed from this checkout and the named modules import.
# Run from / so that the check sees what is installed, not this checkout through the current
# directory: a package installed (editable) from another clone must not count as installed here.
_installed() {
    (cd / && "$GALLERY_PY" - "$REPO_ROOT" "$@") <<'PY'
import importlib, importlib.metadata as md, pathlib, sys
root = pathlib.Path(sys.argv[1]).resolve()
try:
    md.distribution("dali-gallery")
    import dali_gallery
    import dali_gallery.gallery.serve
    for path in (*dali_gallery.__path__, dali_gallery.gallery.serve.__file__):
        assert pathlib.Path(path).resolve().is_relative_to(root), path
    for name in sys.argv[2:]:
        importlib.import_module(name)
except Exception:
    sys.exit(1)
PY
}

# The test extra needs torch (notebooks/export_training.ipynb) on the CPU only. A plain
# `pip install torch` takes the index's newest build with several GB of CUDA libraries; when pip
# has a local wheel (its configured --find-links), take that one and then its dependencies.
ensure_cpu_torch() {
    if "$GALLERY_PY" -c "import torch" >/dev/null 2>&1; then
        return 0
    fi
    if "$GALLERY_PY" -m pip install -q --no-index --no-deps "torch>=2.4" >/dev/null 2>&1; then
        local version
        version="$("$GALLERY_PY" -c "import importlib.metadata as m; print(m.version('torch'))")"
        log "using the locally available torch $version"
        "$GALLERY_PY" -m pip install -q "torch==$version"
    else
        log "no local torch wheel: pip will pick torch from the index"
    fi
}

# ensure_package [EXTRA]: pip install -e ".[EXTRA]" unless it is already installed from here.
TEST_MODULES=(pytest pytest_timeout hypothesis ruff nbclient nbformat ipykernel playwright
              setuptools torchvision albumentations yaml)
ensure_package() {
    ensure_python
    local extra="${1:-}" spec="."
    local -a modules=()
    if [ "$extra" = test ]; then
        modules=("${TEST_MODULES[@]}")
    fi
    if [ -n "$extra" ]; then
        spec=".[$extra]"
    fi
    if _installed "${modules[@]}"; then
        return 0
    fi
    if [ "$extra" = test ]; then
        ensure_cpu_torch
    fi
    log "installing: $GALLERY_PY -m pip install -e '$spec'"
    (cd "$REPO_ROOT" && "$GALLERY_PY" -m pip install -e "$spec")
}

main() {
    cd "$REPO_ROOT"
    ensure_chromium || log "no Chromium: browser tests will be skipped (or fail when CI is set)"
    ensure_package test
    log "running: $GALLERY_PY -m ruff check ."
    "$GALLERY_PY" -m ruff check --no-cache .
    log "running: $GALLERY_PY -m pytest -m 'not gpu' -p no:cacheprovider $*"
    # exec: pytest's exit status is this script's (failures are never masked)
    exec "$GALLERY_PY" -m pytest -m "not gpu" -p no:cacheprovider "$@"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
