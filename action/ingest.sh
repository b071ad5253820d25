#!/usr/bin/env bash
# The action's ingest step. Inputs come from the environment (INPUT_*, mapped in action.yml); any
# BOOKWISE_* setting of the job (e.g. BOOKWISE_EMBEDDING_PROVIDER) applies too.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"

case "${INPUT_TARGET:-}" in
  qdrant)
    [ -n "${INPUT_QDRANT_URL:-}" ] || fail "target qdrant needs the qdrant-url input"
    export BOOKWISE_QDRANT_URL="$INPUT_QDRANT_URL"
    if [ -n "${INPUT_QDRANT_API_KEY:-}" ]; then
      export BOOKWISE_QDRANT_API_KEY="$INPUT_QDRANT_API_KEY"
    fi
    ;;
  server)
    unset BOOKWISE_QDRANT_URL  # the generation is built here, in the embedded index, and uploaded
    ;;
  *)
    fail "the target input must be qdrant or server, not '${INPUT_TARGET:-}'"
    ;;
esac

site="${INPUT_SITE_DIR:-.}"
[ -d "$site" ] || fail "site-dir $site is not a folder"
export BOOKWISE_DATA_DIR
BOOKWISE_DATA_DIR="$(data_dir)"
mkdir -p "$BOOKWISE_DATA_DIR"
report="$(out_dir)/bookwise-report.json"
errors="$(out_dir)/bookwise-ingest.stderr"

args=(ingest "$site" --json --docs-commit "${INPUT_DOCS_COMMIT:-${GITHUB_SHA:?GITHUB_SHA is not set}}")
if [ -n "${INPUT_MANIFEST:-}" ]; then
  args+=(--manifest "$site/$INPUT_MANIFEST")
fi
case "${INPUT_STRICT:-true}" in
  true | True | TRUE | 1 | yes) args+=(--strict) ;;
esac

set +e
bookwise "${args[@]}" >"$report" 2>"$errors"
status=$?
set -e
cat "$errors" >&2

echo "report=$report" >>"$GITHUB_OUTPUT"
python3 "$here/summary.py" ingest "$report" "$errors" "$status" >>"$GITHUB_STEP_SUMMARY"
if [ "$status" -ne 0 ]; then
  fail "bookwise ingest failed (exit $status): nothing was published; see the job summary"
fi
version="$(python3 "$here/summary.py" version "$report")"
echo "index-version=$version" >>"$GITHUB_OUTPUT"
