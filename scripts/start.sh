#!/usr/bin/env bash
# Install the package (pip install -e .) and serve the gallery on the bundled sample images.
#   bash scripts/start.sh [--port P] [--host H] [--images DIR] [--token T] ...
# Options go to `dali-gallery serve` (its default images are the bundled samples); it prints
# the URL to open once the server is up.
set -euo pipefail

# shellcheck source=scripts/test.sh
source "$(dirname "${BASH_SOURCE[0]}")/test.sh"
cd "$REPO_ROOT"

ensure_package
# the CLI of the interpreter that has the package (no dependence on PATH or shims)
cmd=("$GALLERY_PY" -m dali_gallery.gallery.cli serve "$@")
log "starting: ${cmd[*]}"
log "the gallery will be at http://127.0.0.1:8866/ unless --host/--port say otherwise"
exec "${cmd[@]}"
