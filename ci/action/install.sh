#!/usr/bin/env bash
# Step 1 of action.yml: make `traceana` available to the next steps.
#
# INPUT_INSTALL  source (default): pip-install the action's own checkout ($GITHUB_ACTION_PATH)
#                  into a venv under $RUNNER_TEMP;
#                none: use the `traceana` already on PATH (installed by an earlier step);
#                anything else: a path for pip, into the same venv: a wheel the workflow built
#                  (a glob with one match, e.g. dist/traceana-*.whl) or a source folder.
#                  It must exist: traceana is never installed by name from an index.
# INPUT_PYTHON   the interpreter that makes the venv (default python3; 3.11 or newer).
# Outputs: traceana (the command), python (an interpreter for the helper, ci/action/report.py).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/action/common.sh
. "$here/common.sh"

install=${INPUT_INSTALL:-source}
python=${INPUT_PYTHON:-python3}

# The one existing path that $1 names (a glob allowed), made absolute.
resolve() {
    local matches=() m
    if [ -e "$1" ]; then
        matches=("$1")
    else
        for m in $1; do # globbing on purpose: dist/traceana-*.whl
            if [ -e "$m" ]; then matches+=("$m"); fi
        done
    fi
    [ ${#matches[@]} -eq 1 ] || traceana_fail 2 >&2 \
        "install: '$1' names ${#matches[@]} files; give a wheel or source folder that exists (or source, or none)"
    m=${matches[0]}
    if [ -d "$m" ]; then (cd "$m" && pwd); else printf '%s/%s' "$(cd "$(dirname "$m")" && pwd)" "$(basename "$m")"; fi
}

if [ "$install" = none ]; then
    traceana=$(command -v traceana) || traceana_fail 2 "install: none, but there is no traceana on PATH"
    py=$(command -v "$python") || traceana_fail 2 "python: no '$python' on PATH"
else
    if [ "$install" = source ]; then
        spec=$(resolve "${GITHUB_ACTION_PATH:-$here/../..}")
    else
        spec=$(resolve "$install")
    fi
    command -v "$python" >/dev/null || traceana_fail 2 "python: no '$python' on PATH (actions/setup-python installs one)"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        traceana_fail 2 "python: traceana needs Python 3.11 or newer; '$python' is $("$python" -V 2>&1)"
    venv="$(traceana_out_dir)/traceana-venv"
    "$python" -m venv "$venv" ||
        traceana_fail 2 "python: '$python' -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)"
    echo "traceana: pip install $spec into $venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off "$spec"
    traceana=$venv/bin/traceana
    py=$venv/bin/python
fi

"$traceana" --version
traceana_set_output traceana "$traceana"
traceana_set_output python "$py"
