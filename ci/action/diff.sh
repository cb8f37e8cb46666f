#!/usr/bin/env bash
# Step 2 of action.yml: traceana diff BASE HEAD, to Markdown and to JSON, and the report.
# Never fails on what diff says: its exit status becomes the output exit-code, which
# gate.sh turns into the job's result after comment.sh has posted the report.
#
# INPUT_BASE, INPUT_HEAD  a profile folder, a quoted glob, or a saved summary file, each
# INPUT_FAIL_ON           gate expressions, one per line or comma-separated ('idle_pct_delta>2')
# INPUT_MIN_RUNS          passed as --min-runs N when set
# INPUT_ALLOW_EMPTY       true: pass --allow-empty
# INPUT_ALLOW_EMPTY_GATE  true: pass --allow-empty-gate
# INPUT_ALLOW_MISMATCH    true: pass --allow-mismatch
# TRACEANA, TRACEANA_PYTHON  the command and the helper's interpreter (install.sh's outputs)
# Outputs: verdict, exit-code, report (the report's Markdown file), json (diff's JSON file).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/action/common.sh
. "$here/common.sh"

traceana=${TRACEANA:-traceana}
py=${TRACEANA_PYTHON:-python3}
base=${INPUT_BASE:-}
head=${INPUT_HEAD:-}
[ -n "$base" ] || traceana_fail 2 "input base is empty: a profile folder, glob or saved summary"
[ -n "$head" ] || traceana_fail 2 "input head is empty: a profile folder, glob or saved summary"

args=()
gates=()
while IFS= read -r expr; do
    expr=${expr#"${expr%%[![:space:]]*}"} # trim leading
    expr=${expr%"${expr##*[![:space:]]}"} # and trailing blanks
    if [ -n "$expr" ]; then
        args+=(--fail-on "$expr")
        gates+=(--gate "$expr")
    fi
done < <(printf '%s\n' "${INPUT_FAIL_ON:-}" | tr ',' '\n')
if [ -n "${INPUT_MIN_RUNS:-}" ]; then args+=(--min-runs "$INPUT_MIN_RUNS"); fi
if traceana_bool allow-empty "${INPUT_ALLOW_EMPTY:-false}"; then args+=(--allow-empty); fi
if traceana_bool allow-empty-gate "${INPUT_ALLOW_EMPTY_GATE:-false}"; then
    args+=(--allow-empty-gate)
fi
if traceana_bool allow-mismatch "${INPUT_ALLOW_MISMATCH:-false}"; then args+=(--allow-mismatch); fi

out=$(traceana_out_dir)
md=$out/traceana-diff.md
json=$out/traceana-diff.json
err=$out/traceana-diff.stderr
report=$out/traceana-report.md
rm -f "$md" "$json" "$err" "$report" "$out/traceana-diff.exit-code"

# ${args[@]+...}: an empty array is "unbound" to bash 3.2 under set -u
printf '%s' "traceana diff"
printf ' %q' "$base" "$head" --format markdown -o "$md" ${args[@]+"${args[@]}"}
echo
code=0
"$traceana" diff "$base" "$head" --format markdown -o "$md" ${args[@]+"${args[@]}"} 2>"$err" || code=$?
cat "$err" >&2
if [ "$code" -eq 0 ] || [ "$code" -eq 1 ]; then
    # the same comparison as JSON, for the verdict and the failed gates (from the cache: cheap)
    "$traceana" diff "$base" "$head" --format json -o "$json" ${args[@]+"${args[@]}"} 2>/dev/null || true
fi
echo "$code" >"$out/traceana-diff.exit-code"

verdict=$("$py" "$here/report.py" report --md "$md" --json "$json" --stderr "$err" \
    --exit-code "$code" --base "$base" --head "$head" ${gates[@]+"${gates[@]}"} -o "$report")
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$report" >>"$GITHUB_STEP_SUMMARY"; fi

echo "traceana diff: exit $code, verdict $verdict; report in $report"
traceana_set_output verdict "$verdict"
traceana_set_output exit-code "$code"
traceana_set_output report "$report"
traceana_set_output json "$json"
