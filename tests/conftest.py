"""Shared helpers: tiny inputs written to tmp_path, the CLI runner, and the shared corpus."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from trace_analyzer.cli import cli

# The repository is /work/main; the shared corpus sits beside it in ../shared/corpus/hta.
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "hta"
CORPUS_DATA = CORPUS / "tests" / "data"

# The SystemProfileEvents columns of Explorer schema 7.4.0 (docs/neuron-formats.md §2.1).
EXPLORER_COLUMNS: dict[str, pl.DataType] = {
    "id": pl.Int64,
    "name": pl.String,
    "start_ts": pl.Int64,
    "end_ts": pl.Int64,
    "duration_ns": pl.Int64,
    "trace_event_source": pl.String,
    "instance_id": pl.String,
    "process_id": pl.Int64,
    "thread_id": pl.Int64,
    "nc_idx": pl.Int64,
    "pcore_idx": pl.Int64,
    "worker_gid": pl.Int64,
    "flow_id": pl.List(pl.String),
    "framework_stream_id": pl.String,
    "extra_attributes_json": pl.String,
}


def write_trace(path: Path, doc: object) -> Path:
    """Write ``doc`` as JSON to ``path`` (gzip-compressed when the name ends in .gz)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def kineto(events: list[dict], **top) -> dict:
    """Return a Kineto trace document holding ``events`` and any top-level keys given."""
    return {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms", **top,
            "traceEvents": events}


def X(cat: str, name: str, ts: float, dur: float, pid: int = 100, tid: int = 100, **args) -> dict:
    """Return one complete ('X') Kineto event."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def write_parquet(path: Path, rows: list[dict], drop: tuple[str, ...] = ()) -> Path:
    """Write an Explorer SystemProfileEvents table with the 7.4.0 columns (minus ``drop``).

    Each row gives the columns it needs; the others are null. ``duration_ns`` defaults to
    end_ts - start_ts.
    """
    full = []
    for r in rows:
        row = {c: r.get(c) for c in EXPLORER_COLUMNS}
        if row["duration_ns"] is None and row["start_ts"] is not None and row["end_ts"] is not None:
            row["duration_ns"] = row["end_ts"] - row["start_ts"]
        full.append(row)
    df = pl.DataFrame(full, schema=EXPLORER_COLUMNS, orient="row").drop(list(drop))
    path.parent.mkdir(parents=True, exist_ok=True)
    df.write_parquet(path)
    return path


def write_metadata(folder: Path, version: str) -> Path:
    """Write an Explorer Metadata.parquet table holding ``profile_schema_version``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "Metadata.parquet"
    pl.DataFrame({"profile_schema_version": [version], "ntff_version": [5]}).write_parquet(path)
    return path


@pytest.fixture(autouse=True, scope="session")
def _cache_outside_the_repository(tmp_path_factory):
    """CLI runs keep their analysis cache in a session folder, not in fixtures/ or the corpus
    (a second run of the same profile is then answered from it, as for a user)."""
    import os

    folder = tmp_path_factory.mktemp("traceana-cache")
    old = os.environ.get("TRACEANA_CACHE_DIR")
    os.environ["TRACEANA_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("TRACEANA_CACHE_DIR", None)
    else:
        os.environ["TRACEANA_CACHE_DIR"] = old


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run ``traceana ARGS`` in-process; return (exit code, stdout, stderr)."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def info_json(path: Path | str) -> dict:
    """Return ``traceana info PATH --format json`` parsed; fail the test on a nonzero exit."""
    code, out, err = run_cli("info", str(path), "--format", "json")
    assert code == 0, f"exit {code}: {err}"
    return json.loads(out)


@pytest.fixture
def corpus() -> Path:
    """The shared HTA sample traces (tests/data), or a skip when ../shared/corpus is absent."""
    if not CORPUS_DATA.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {CORPUS_DATA}; the corpus tests need the "
                    "shared HTA sample traces checked out beside the repository")
    return CORPUS_DATA


def union_of(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Reference model for the tests: the union of intervals; blocks that overlap or touch are one."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def one_line_error(code: int, out: str, err: str) -> str:
    """Assert the CLI's bad-input contract (exit 2, nothing on stdout, one line, no traceback)
    and return that line."""
    assert code == 2, (code, out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def render_all(results: dict) -> None:
    """Put every analysis result through every renderer: text comes back; JSON parses."""
    from trace_analyzer.render import RENDERERS

    for kind, data in results.items():
        for name, renderer in RENDERERS.items():
            text = renderer.render(kind, data)
            assert isinstance(text, str)
            if name == "json":
                json.loads(text)


def every_analysis(p, folder: Path, min_gap_ns: int = 0) -> dict:
    """Run info, gaps, ops, chain and diff (the run against itself) on one loaded profile."""
    from trace_analyzer.analyses.chain import chain_result
    from trace_analyzer.analyses.diff import diff
    from trace_analyzer.analyses.gaps import gaps_result
    from trace_analyzer.analyses.info import info
    from trace_analyzer.analyses.ops import ops_result

    return {
        "info": info([p], str(folder)),
        "gaps": gaps_result([p], str(folder), min_gap_ns=min_gap_ns),
        "ops": ops_result([p], str(folder)),
        "chain": chain_result([p], str(folder)),
        "diff": diff(p, p, "base", "head"),
    }
