#!/usr/bin/env bash
# The action's publish step (target server): upload the generation the ingest step built.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/common.sh"

[ -n "${INPUT_SERVER_URL:-}" ] || fail "target server needs the server-url input"
[ -n "${INPUT_ADMIN_TOKEN:-}" ] || fail "target server needs the admin-token input (the server's BOOKWISE_ADMIN_TOKEN)"
export BOOKWISE_ADMIN_TOKEN="$INPUT_ADMIN_TOKEN"
export BOOKWISE_DATA_DIR
BOOKWISE_DATA_DIR="$(data_dir)"
answer="$(out_dir)/bookwise-publish.json"

set +e
bookwise publish --server "$INPUT_SERVER_URL" --json >"$answer"
status=$?
set -e
python3 "$here/summary.py" publish "$answer" "$status" >>"$GITHUB_STEP_SUMMARY"
if [ "$status" -ne 0 ]; then
  fail "the server did not install the index (exit $status): its live index is unchanged"
fi
echo "index-version=$(python3 "$here/summary.py" version "$answer")" >>"$GITHUB_OUTPUT"
