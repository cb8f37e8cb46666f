#!/usr/bin/env bash
# Step 3 of action.yml: post the report as ONE pull-request comment, updated on every push.
# The comment's first line is the hidden marker; the comment that starts with it is edited
# (PATCH), else a new one is posted. Not a pull_request event, or comment: false: no comment
# (the report is in the job summary). A refused comment (a fork's read-only token) is a
# warning, not a failure: gate.sh still decides the job.
#
# INPUT_COMMENT   true (default) / false
# GH_TOKEN        the token gh uses (input github-token); needs pull-requests: write
# REPORT          the report to post (diff.sh's output; default traceana-report.md)
# TRACEANA_PYTHON the helper's interpreter; GITHUB_EVENT_PATH, GITHUB_REPOSITORY from the runner
# Output: comment-url.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/action/common.sh
. "$here/common.sh"

if ! traceana_bool comment "${INPUT_COMMENT:-true}"; then
    echo "traceana: comment is false; the report is in the job summary"
    exit 0
fi
py=${TRACEANA_PYTHON:-python3}
out=$(traceana_out_dir)
report=${REPORT:-$out/traceana-report.md}
[ -f "$report" ] || traceana_fail 2 "no report at $report: did diff.sh run?"

pr=$("$py" "$here/report.py" pr-number "${GITHUB_EVENT_PATH:-}")
if [ -z "$pr" ]; then
    traceana_annotate notice "not a pull request (event ${GITHUB_EVENT_NAME:-unknown}): no comment; the report is in the job summary"
    exit 0
fi
if ! command -v gh >/dev/null; then
    traceana_annotate warning "no gh (GitHub CLI) on PATH: no comment on #$pr; install it or set comment: false"
    exit 0
fi
repo=${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}
payload=$out/traceana-comment.json
"$py" "$here/report.py" payload --marker "$MARKER" "$report" >"$payload"

if ! comments=$(gh api --paginate "repos/$repo/issues/$pr/comments?per_page=100"); then
    traceana_annotate warning "could not list the comments of #$pr (token: pull-requests: write?); no comment"
    exit 0
fi
id=$(printf '%s' "$comments" | "$py" "$here/report.py" find-comment --marker "$MARKER")
if [ -n "$id" ]; then
    what="updated comment $id on #$pr"
    response=$(gh api --method PATCH "repos/$repo/issues/comments/$id" --input "$payload") || response=
else
    what="posted a comment on #$pr"
    response=$(gh api --method POST "repos/$repo/issues/$pr/comments" --input "$payload") || response=
fi
if [ -z "$response" ]; then
    traceana_annotate warning "could not comment on #$pr (a pull request from a fork gets a read-only token); the report is in the job summary"
    exit 0
fi
url=$(printf '%s' "$response" | "$py" "$here/report.py" field html_url)
echo "traceana: $what${url:+: $url}"
traceana_set_output comment-url "$url"
