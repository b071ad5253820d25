# Shared by the action's scripts (sourced): where this job's data dir and report are.
fail() {
  echo "::error::$1" >&2
  exit 1
}
data_dir() {
  echo "${INPUT_DATA_DIR:-${RUNNER_TEMP:?RUNNER_TEMP is not set}/bookwise-data}"
}
out_dir() {
  echo "${RUNNER_TEMP:?RUNNER_TEMP is not set}"
}
