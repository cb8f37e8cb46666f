#!/usr/bin/env bash
# GitLab's comment.sh: post the report as ONE merge-request note, updated on every push.
# The note whose first line is the marker is edited (PUT), else a new one is posted (POST).
# Not a merge request pipeline: no note. A refused note is a warning: gate.sh decides the job.
#
# TRACEANA_BOT_TOKEN  a project access token, scope api (a masked CI/CD variable)
# REPORT              the report (default traceana-report.md in $RUNNER_TEMP, $TMPDIR or /tmp)
# TRACEANA_PYTHON     the helper's interpreter (python3)
# CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID from GitLab
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/action/common.sh
. "$here/common.sh"

py=${TRACEANA_PYTHON:-python3}
out=$(traceana_out_dir)
report=${REPORT:-$out/traceana-report.md}
[ -f "$report" ] || traceana_fail 2 "no report at $report: did diff.sh run?"
if [ -z "${CI_MERGE_REQUEST_IID:-}" ]; then
    echo "traceana: not a merge request pipeline: no note"
    exit 0
fi
token=${TRACEANA_BOT_TOKEN:?set TRACEANA_BOT_TOKEN: a project access token with scope api}
notes="$CI_API_V4_URL/projects/$CI_PROJECT_ID/merge_requests/$CI_MERGE_REQUEST_IID/notes"
payload=$out/traceana-note.json
headers=$out/traceana-note.headers
"$py" "$here/report.py" payload --marker "$MARKER" "$report" >"$payload"

# every page of the notes, oldest first; X-Next-Page is empty on the last one
all=
page=1
while [ -n "$page" ]; do
    if ! body=$(curl --fail --silent --show-error --dump-header "$headers" \
        --header "PRIVATE-TOKEN: $token" "$notes?sort=asc&order_by=created_at&per_page=100&page=$page"); then
        echo "traceana: could not list the notes of !$CI_MERGE_REQUEST_IID; no note" >&2
        exit 0
    fi
    all="$all$body"
    page=$(tr -d '\r' <"$headers" | sed -n 's/^[Xx]-[Nn]ext-[Pp]age: *//p' | tail -n 1)
done

id=$(printf '%s' "$all" | "$py" "$here/report.py" find-comment --marker "$MARKER")
if [ -n "$id" ]; then
    method=PUT url="$notes/$id"
else
    method=POST url=$notes
fi
if curl --fail --silent --show-error --output /dev/null --request "$method" \
    --header "PRIVATE-TOKEN: $token" --header "Content-Type: application/json" \
    --data-binary @"$payload" "$url"; then
    echo "traceana: $method $url"
else
    echo "traceana: could not $method the note on !$CI_MERGE_REQUEST_IID" >&2
fi
