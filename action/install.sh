#!/usr/bin/env bash
# Installs Bookwise for the action: CPU torch first (else pip resolves the CUDA build), then Bookwise.
set -euo pipefail
python -m pip install --upgrade --quiet pip
if [ -n "${TORCH_SPEC:-}" ]; then
  python -m pip install --quiet "$TORCH_SPEC" --index-url https://download.pytorch.org/whl/cpu
fi
# By default the action installs the Bookwise it is part of: the tag in `uses:` pins both.
python -m pip install --quiet "${BOOKWISE_SPEC:-${GITHUB_ACTION_PATH:?not run as an action: set BOOKWISE_SPEC}[local]}"
bookwise --version
