#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# compose service `eval` (profile tools): psi of the learner's model against
# the non-private optimum on the union of the owners' rows, as JSON.
#   docker compose run --rm eval
# Environment: DP_OWNER_NAMES (required), DP_EVAL_ARGS (more `dpasync eval`
# flags, e.g. "--target price"), DP_ROOT (/var/lib/dpasync; tests only).
set -euo pipefail
R=${DP_ROOT:-/var/lib/dpasync}
IFS=, read -r -a all <<<"${DP_OWNER_NAMES:?DP_OWNER_NAMES is not set}"
files=()
for n in "${all[@]}"; do files+=("$R/owners/$n/data.csv"); done
[ -f "$R/out/model.json" ] || { echo "eval: no model yet in $R/out (is the job done?)" >&2; exit 1; }
# shellcheck disable=SC2086
exec dpasync eval ${DP_EVAL_ARGS:-} "$R/out/model.json" "${files[@]}"
