#!/bin/bash
# Whether a round of performance work changed any output: the commands below, run by this
# checkout and by OLD (a `git worktree` of an earlier commit, its compiled extensions built or
# copied in), must write the same bytes (cmp). Issue 34 held every round to this.
#
#   bench/same_outputs.sh /path/to/old-worktree [DIR]     # DIR: the inputs, /tmp/scale
#
# Inputs (bench/scaling.py and gen_metadata_heavy.py write them): neuron-1000000,
# neuron-3000000, kineto-100.json, metadata-heavy.json. Exit 1 when any output differs.
set -u
OLD=${1:?usage: bench/same_outputs.sh OLD_CHECKOUT [DIR]}
DIR=${2:-/tmp/scale}
NEW=$(cd "$(dirname "$0")/.." && pwd)
PY="$NEW/.venv/bin/python"
RUN="import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rc=0
same() {  # same NAME ARGS...: run both checkouts, compare what they write
  local name=$1; shift
  for side in new old; do
    root=$NEW; [ "$side" = old ] && root=$OLD
    (cd /tmp && PYTHONPATH="$root" "$PY" -c "$RUN" "$@" --no-cache > "$out/$name.$side" 2>&1)
  done
  if cmp -s "$out/$name.new" "$out/$name.old"; then echo "same: $name"
  else echo "DIFFERENT: $name"; rc=1; fi
}
for n in 1000000 3000000; do same "gaps-json-$n" gaps "$DIR/neuron-$n" --format json; done
same gaps-json-k100 gaps "$DIR/kineto-100.json" --format json
same gaps-table-k100 gaps "$DIR/kineto-100.json"
same gaps-json-metadata gaps "$DIR/metadata-heavy.json" --format json
for c in ops chain info; do same "$c-1m" "$c" "$DIR/neuron-1000000"; done
exit $rc
