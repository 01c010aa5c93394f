#!/usr/bin/env bash
# Install the package (pip install -e .) and serve the gallery on the bundled sample images.
#   bash scripts/start.sh [--port P] [--host H] [--images DIR] [--token T] ...
# Options go to `dali-gallery serve`; it prints the URL to open once the server is up.
set -euo pipefail

# shellcheck source=scripts/test.sh
source "$(dirname "${BASH_SOURCE[0]}")/test.sh"
cd "$REPO_ROOT"

ensure_package
args=(--images "$REPO_ROOT/gallery/samples" "$@")

if command -v dali-gallery >/dev/null 2>&1 && dali-gallery serve --help >/dev/null 2>&1; then
    cmd=(dali-gallery serve "${args[@]}")
else
    # until the CLI has its `serve` sub-command, the module runs the same code
    cmd=("$GALLERY_PY" -m dali_gallery.gallery.serve "${args[@]}")
fi
log "starting: ${cmd[*]}"
log "the gallery will be at http://127.0.0.1:8866/ unless --host/--port say otherwise"
exec "${cmd[@]}"
