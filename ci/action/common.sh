# shellcheck shell=bash
# Sourced by the scripts of action.yml (ci/action/*.sh); runs nothing by itself.
#
# The scripts talk through files in one folder, $RUNNER_TEMP on GitHub (else $TMPDIR or /tmp):
#   traceana-diff.md         traceana diff --format markdown (what traceana wrote)
#   traceana-diff.json       traceana diff --format json, same arguments
#   traceana-diff.stderr     what the Markdown run wrote on stderr (the failed gates, the error)
#   traceana-diff.exit-code  its exit status: 0 no gate failed, 1 a gate failed, 2 unusable input
#   traceana-report.md       the report: the Markdown, the gates' result, or the error
# The scripts are plain bash 3.2 (macOS's /bin/bash) and need no tool beyond python3.

# The hidden first line of the pull-request comment (the merge-request note) that finds it again.
# shellcheck disable=SC2034  # used by the scripts that source this file
MARKER='<!-- traceana-diff -->'

traceana_out_dir() {
    local dir=${RUNNER_TEMP:-${TMPDIR:-/tmp}}
    mkdir -p "$dir"
    printf '%s' "$dir"
}

# The data of a workflow command (::error::DATA) with %, CR and LF escaped as GitHub wants.
traceana_escape() {
    local s=$1 pct='%' cr=$'\r' lf=$'\n'
    s=${s//"$pct"/%25}
    s=${s//"$cr"/%0D}
    s=${s//"$lf"/%0A}
    printf '%s' "$s"
}

# traceana_annotate error|warning|notice MESSAGE: an annotation on GitHub, one line elsewhere.
traceana_annotate() {
    if [ "${GITHUB_ACTIONS:-}" = true ]; then
        printf '::%s::%s\n' "$1" "$(traceana_escape "$2")"
    else
        printf 'traceana %s: %s\n' "$1" "$2" >&2
    fi
}

# traceana_fail CODE MESSAGE: an error annotation, then exit CODE.
traceana_fail() {
    traceana_annotate error "$2"
    exit "$1"
}

# traceana_bool INPUT VALUE: status 0 for true/yes/on/1, 1 for false/no/off/0/empty; else exit 2.
traceana_bool() {
    case $(printf '%s' "$2" | tr '[:upper:]' '[:lower:]') in
        true | yes | on | 1) return 0 ;;
        false | no | off | 0 | '') return 1 ;;
        *) traceana_fail 2 "input $1: '$2' is neither true nor false" ;;
    esac
}

# traceana_set_output NAME VALUE: a step output (one line) when $GITHUB_OUTPUT is set.
traceana_set_output() {
    if [ -n "${GITHUB_OUTPUT:-}" ]; then
        printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
    fi
}
