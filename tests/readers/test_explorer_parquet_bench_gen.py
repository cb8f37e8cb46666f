"""bench/gen_parquet.py: the synthetic Neuron Explorer Parquet export of the Parquet benchmark.

traceana must read what the generator says it wrote (its truth.json): every row, every
hardware execution linked to an op, and the idle gaps it laid out. Small exports only.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import EXPLORER_COLUMNS, info_json, run_cli

ROOT = Path(__file__).resolve().parents[2]
EVENTS = 20_000


@functools.lru_cache(maxsize=None)
def gen():
    """bench/gen_parquet.py as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_parquet", ROOT / "bench" / "gen_parquet.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> tuple[Path, int, dict]:
    """About 20k rows in SystemProfileEvents_0..N (parts of about 6k rows), with truth.json."""
    out = tmp_path_factory.mktemp("gen_parquet")
    rows = gen().write(out, EVENTS, seed=3, rows_per_file=6_000)
    return out, rows, json.loads((out / "truth.json").read_text())


def test_writes_about_the_rows_asked_as_split_tables_of_schema_7_4(export):
    out, rows, truth = export
    assert rows == truth["rows"]
    assert abs(rows - EVENTS) < 0.05 * EVENTS
    folder = out / "explorer" / "parquet"
    parts = sorted(folder.glob("SystemProfileEvents*.parquet"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    assert len(parts) > 1
    assert [p.name for p in parts] == [f"SystemProfileEvents_{i}.parquet" for i in range(len(parts))]
    assert sum(pl.read_parquet(p).height for p in parts) == rows
    assert all(pl.read_parquet_schema(p) == EXPLORER_COLUMNS for p in parts)
    assert truth["names"]["nc_exec_running"] == truth["executions"]
    assert truth["executions"] == truth["ops"] * truth["lnc"]


def test_traceana_reads_every_row_and_links_every_execution(export):
    out, rows, truth = export
    run = info_json(out)["runs"][0]
    assert [s["schema_version"] for s in run["sources"]] == ["7.4.0"]
    assert run["events"] == rows
    assert run["hardware_lanes"] == truth["hardware_lanes"]
    assert run["links"]["hardware_executions"] == truth["executions"]
    assert run["links"]["linked"] == truth["executions"]
    assert run["links"]["linked_pct"] == 100.0


def test_gaps_are_the_ones_the_generator_laid_out(export):
    out, _, truth = export
    code, text, err = run_cli("gaps", out, "--format", "json")
    assert code == 0, err
    run = json.loads(text)["runs"][0]
    summary = run["summary"]
    assert summary["executions"] == truth["executions"]
    assert summary["devices"] == truth["devices"]
    assert summary["lanes"] == truth["hardware_lanes"]
    assert summary["gap_count"] == truth["device_gaps"]
    assert summary["idle_ns"] == truth["device_idle_ns"]
    assert sum(lane["gap_count"] for lane in run["lanes"]) == truth["gaps"]
    assert [run["window"]["start_ns"], run["window"]["end_ns"]] == truth["hardware_span_ns"]
    # The mix the generator aims at: host-bound gaps, copies before a step, early dispatch.
    causes = summary["idle_by_cause_ns"]
    assert causes["host_dispatch"] > 0 and causes["transfer"] > 0 and causes["runtime"] > 0
    assert causes["uncorrelated"] == 0


def test_same_seed_same_bytes(tmp_path):
    def files(folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        gen().write(tmp_path / name, 3_000, seed=seed, cores=2, lnc=1)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "a") != files(tmp_path / "c")


ODD_JSON = ['{"exec_id":57}', '{"exec_id":"58"}', '{"a":{"exec_id":5}}', '{"exec_id":57,',
            '{"exec\\u005fid":9}', '{"exec_id":1,"exec_id":2}', '{ "exec_id" : 3 }', '{"exec_id":3.0}',
            '{"exec_id":null}', "not json", None, '{"exec_id":99999999999999999999}', "[1]",
            '{"nrt_sequence_id":844424930132009,"exec_id":-4}', '{"nrt\\u005fsequence_id":7}',
            '{"x":"exec_id"}', "{}"]


def odd_rows(n: int = 3_000) -> pl.DataFrame:
    """Explorer rows that stress the reader: overlapping and nested ranges of one name on a
    few threads (some without pid or tid), odd JSON, nulls in the lane columns."""
    import numpy as np

    rng = np.random.default_rng(11)
    start = rng.integers(0, 300, n) * 10

    def pick(values, null_share=0.0):
        out = [values[i] for i in rng.integers(0, len(values), n)]
        return [None if rng.random() < null_share else v for v in out]

    return pl.DataFrame({
        "id": range(n), "name": pick(["aten::mul [trace.json]", "aten::mul", "aten::add", "ProfilerStep#1",
                                      "nc_exec_running", "nrt_tensor_write", "cc_exec_barrier", None]),
        "start_ts": start, "end_ts": start + rng.choice([0, 5, 10, 50, 500, 3000], n),
        "duration_ns": None, "trace_event_source": pick(["framework"] * 4 + ["neuron_rt", "neuron_hw"]),
        "instance_id": pick(["i-1", "i-2"], 0.05), "process_id": pick([1, 2]),
        "thread_id": pick([10, 11], 0.05), "nc_idx": pick([0, 1], 0.3), "pcore_idx": pick([0, 1, 2], 0.3),
        "worker_gid": pick([3, 5, -1], 0.5), "flow_id": None, "framework_stream_id": pick(["0", "1", "x"], 0.6),
        "extra_attributes_json": pick(ODD_JSON),
    }, schema={**EXPLORER_COLUMNS})


def test_reader_shortcuts_give_what_the_shared_code_gives(export):
    """explorer_parquet labels, lifts JSON keys and finds dispatches its own (vectorised) way;
    the results must be neuron.label's, json_path_match's and neuron.mark_dispatch's."""
    from trace_analyzer.readers import explorer_lanes as el
    from trace_analyzer.readers import explorer_parquet as ep
    from trace_analyzer.readers import neuron

    folder = export[0] / "explorer" / "parquet"
    gen_raw = pl.concat([ep._read_table(p) for p in ep.tables(folder)])
    for raw in (gen_raw, odd_rows().select(gen_raw.columns).cast(gen_raw.schema)):
        cols = ep._columns(raw)
        for key, col in neuron.EXTRA_COLUMNS.items():
            expect = raw["extra_attributes_json"].str.json_path_match(f"$['{key}']").cast(pl.Int64, strict=False)
            assert cols[col].equals(expect, null_equal=True), key
        labelled = neuron.label(cols)
        ranked = neuron.worker_ranks(labelled)
        assert el.lanes(cols).equals(ranked, null_equal=True)
        assert el.lanes(cols, packed=False).equals(ranked, null_equal=True)
        assert el.mark_dispatch(labelled).equals(neuron.mark_dispatch(labelled), null_equal=True)
