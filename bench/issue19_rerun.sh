#!/bin/bash
# Issue 19's figures (docs/benchmarks.md, "Performance, round two"), the current checkout and,
# with OLD=<a git worktree of an earlier commit, its extensions built in place>, that commit
# in the same run. Inputs in /tmp/scale (bench/scaling.py makes the missing ones; the
# metadata-heavy trace: bench/gen_metadata_heavy.py /tmp/scale/metadata-heavy.json), HTA's
# venv in /tmp/hta-venv (bench/README.md). Results in /tmp/bres. About 30 minutes on 2 cores.
set -u
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OLD=${OLD:-}
mkdir -p /tmp/bres
versions=(new); [ -n "$OLD" ] && versions+=(old)
with() { if [ "$1" = old ]; then PYTHONPATH="$OLD" "${@:2}"; else "${@:2}"; fi; }
for v in "${versions[@]}"; do
  with "$v" $PY bench/scaling.py --dir /tmp/scale --neuron 1000000 3000000 10000000 \
      --kineto 30 100 300 1000 --runs 2 > "/tmp/bres/scaling_$v.txt" 2>&1
  for fmt in table json; do
    with "$v" $PY bench/run.py --runs 2 --format $fmt /tmp/scale/kineto-100.json \
        /tmp/scale/kineto-1000.json > "/tmp/bres/run_${v}_$fmt.txt" 2>&1
  done
  for i in 1 2; do
    (cd /tmp && with "$v" /usr/bin/time -f "$v traceana %e s %M KB" "$OLDPWD/.venv/bin/traceana" \
        gaps /tmp/scale/metadata-heavy.json --no-cache > /dev/null) 2>> /tmp/bres/meta.txt
  done
done
for i in 1 2; do
  (cd /tmp && /usr/bin/time -f "json.load %e s %M KB" "$OLDPWD/$PY" -c \
      "import json; json.load(open('/tmp/scale/metadata-heavy.json'))") 2>> /tmp/bres/meta.txt
done
$PY bench/run.py --runs 1 --format json --hta /tmp/hta-venv/bin/python --hta-max-mb 150 \
    /tmp/scale/kineto-100.json > /tmp/bres/run_hta.txt 2>&1
mkdir -p /tmp/c100 && cp -f /tmp/scale/kineto-100.json /tmp/c100/
$PY bench/answers.py /tmp/c100 > /tmp/bres/answers.txt 2>&1
$PY bench/answers.py /tmp/scale/neuron-10000000 --rounds 1 > /tmp/bres/answers_10m.txt 2>&1
rm -rf /tmp/scale/neuron-10000000/.traceana-cache
for i in 1 2 3; do
  (cd /tmp && /usr/bin/time -f "help %e s" "$OLDPWD/.venv/bin/traceana" --help > /dev/null) 2>> /tmp/bres/help.txt
  (cd /tmp && /usr/bin/time -f "gaps-help %e s" "$OLDPWD/.venv/bin/traceana" gaps --help > /dev/null) 2>> /tmp/bres/help.txt
done
