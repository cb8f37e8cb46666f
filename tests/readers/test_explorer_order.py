"""An Explorer export read alone comes sorted as numbered() sorts a run's events (the reader
sorts as it labels, so numbered() copies nothing). The table a user gets must not depend on
that: the same rows, the same columns, the same order of events with equal start and end
(their order decides which of two tied executions is listed first, and which op a tie links
to), as the file-order read sorted by numbered()."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
from conftest import write_parquet

from trace_analyzer.inputs.discover import discover
from trace_analyzer.loading.profile import unique_sources
from trace_analyzer.model import schema
from trace_analyzer.readers import read_source

T0 = 1_793_620_800_000_000_000
INST, PID = "i-0123456789abcdef0", 4242


def rows(rng: random.Random) -> list[dict]:
    """Rows with many ties: starts from a few values, ends from a few lengths, on several cores,
    threads and sources, with flows and JSON keys on some, in no order."""
    out = []
    for i in range(rng.randint(1, 400)):
        start = rng.choice([0, 10, 10, 20, 50, 50, 50, 90])
        end = start + rng.choice([0, 5, 5, 40])
        source = rng.choice(["neuron_hw", "neuron_hw", "nrt", "framework", "cc"])
        name = {"neuron_hw": "nc_exec_running", "nrt": "nrta_execute_schedule",
                "framework": rng.choice(["aten::mul", "aten::add", "ProfilerStep#1"]),
                "cc": "cc_running"}[source]
        row = dict(id=i, name=name, start_ts=T0 + start, end_ts=T0 + end,
                   trace_event_source=source, instance_id=INST, process_id=PID,
                   thread_id=rng.choice([PID, PID + 8]))
        if source in ("neuron_hw", "cc"):
            row |= dict(nc_idx=rng.randint(0, 1), pcore_idx=rng.randint(0, 1))
        if rng.random() < 0.5:
            row["flow_id"] = [str(rng.randint(1, 30))]
        if rng.random() < 0.5:
            row["extra_attributes_json"] = f'{{"exec_id": {rng.randint(1, 9)}, "model_name": "m"}}'
        out.append(row)
    rng.shuffle(out)
    return out


def both(folder: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    (src,), _ = unique_sources(discover(folder)[0])
    fast = read_source(src, in_order=True).events
    slow = read_source(src, in_order=False).events
    return fast, slow


@pytest.mark.parametrize("seed", range(40))
def test_an_export_read_in_order_is_the_file_order_read_sorted(tmp_path, seed):
    rng = random.Random(seed)
    folder = tmp_path / "run"
    if seed % 4 == 3:  # split parts: the slices of several files, one table
        made = rows(rng)
        half = len(made) // 2
        write_parquet(folder / "SystemProfileEvents_0.parquet", made[:half])
        write_parquet(folder / "SystemProfileEvents_1.parquet", made[half:])
    else:
        write_parquet(folder / "SystemProfileEvents.parquet", rows(rng))
    fast, slow = both(folder)
    assert schema._in_order(fast)  # numbered() will neither sort nor copy it
    want = schema.numbered([schema.check_events(slow)[0]])
    got = schema.numbered([schema.check_events(fast)[0]])
    assert got.equals(want, null_equal=True)


def test_a_table_with_ties_in_any_order_is_in_order():
    ties = pl.DataFrame({"start_ns": [1, 1, 1, 2, 2], "end_ns": [3, 3, 4, 2, 2]})
    assert schema._in_order(ties)
    assert not schema._in_order(ties.with_columns(end_ns=pl.Series([3, 4, 3, 2, 2])))
    assert not schema._in_order(ties.reverse())
    assert schema._in_order(ties.head(0)) and schema._in_order(ties.head(1))
