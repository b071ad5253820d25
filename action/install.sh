#!/usr/bin/env bash
# Installs Bookwise for the action: CPU torch first (else pip resolves the CUDA build), then Bookwise.
set -euo pipefail
python -m pip install --upgrade --quiet pip
if [ -n "${TORCH_SPEC:-}" ]; then
  python -m pip install --quiet "$TORCH_SPEC" --index-url https://download.pytorch.org/whl/cpu
fi
python -m pip install --quiet "${BOOKWISE_SPEC:?set the bookwise-spec input}"
bookwise --version
