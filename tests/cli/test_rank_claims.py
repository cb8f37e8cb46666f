"""Two traces that claim one rank are warned of (issue 37: no word was said, and ``--rank``
took both while ``ranks`` counted them as one), as real processes; ranks of their own, or a
trace without one, are not."""

from __future__ import annotations

import json

import pytest
from conftest import run_process


def trace(path, pid, rank):
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 10 + pid, "dur": 5, "pid": 0, "tid": 7,
         "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 5, "dur": 5, "pid": pid,
         "tid": pid},
    ]  # fmt: skip
    doc = {"traceEvents": events}
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank, "world_size": 2}
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(("ranks", "warned"), [((0, 0), True), ((0, 1), False),
                                               ((None, None), False)])  # fmt: skip
@pytest.mark.parametrize("command", ["gaps", "ranks", "ops"])
def test_one_rank_claimed_twice_is_warned(tmp_path, command, ranks, warned):
    for name, pid, rank in zip("ab", (1, 2), ranks, strict=True):
        trace(tmp_path / f"{name}.json", pid, rank)
    code, out, err, *_ = run_process(command, tmp_path, "--no-cache")
    assert code == 0, err
    line = (f"2 kineto-json files claim rank 0 (distributedInfo: {tmp_path / 'a.json'}, "
            f"{tmp_path / 'b.json'}): --rank 0 takes them all")  # fmt: skip
    assert (line in out + err) is warned, out + err
