#!/usr/bin/env bash
# Last step of action.yml: the job's result from traceana diff's exit status.
# EXIT_CODE (diff.sh's output; else read from traceana-diff.exit-code): 0 passes; 1 (a gate
# failed) and 2 (unusable input) fail the step with an error annotation, with that status.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/action/common.sh
. "$here/common.sh"

out=$(traceana_out_dir)
code=${EXIT_CODE:-}
if [ -z "$code" ] && [ -f "$out/traceana-diff.exit-code" ]; then code=$(cat "$out/traceana-diff.exit-code"); fi
[ -n "$code" ] || traceana_fail 2 "no exit status of traceana diff: did diff.sh run?"

err=$(cat "$out/traceana-diff.stderr" 2>/dev/null || true)
case $code in
    0)
        echo "traceana diff: no gate failed"
        ;;
    1)
        failed=$(printf '%s\n' "$err" | grep -e '--fail-on' || true)
        traceana_fail 1 "traceana diff: a gate failed${failed:+$'\n'$failed}"
        ;;
    *)
        last=$(printf '%s\n' "$err" | grep -v '^[[:space:]]*$' | tail -n 1 || true)
        traceana_fail "$code" "traceana diff could not compare base and head (exit $code): ${last:-no message}"
        ;;
esac
