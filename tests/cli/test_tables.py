"""traceana tables: Parquet that polars reads back to the library's own frames, the queries of
docs/tables.md run over it (DuckDB and polars) and checked against figures computed here from
the raw files, and the refusals (exit 2, one line, nothing overwritten)."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

import polars as pl
import pytest
from conftest import X, kineto, one_line_error, run_cli, union_of, write_trace
from polars.testing import assert_frame_equal

import trace_analyzer as ta
from trace_analyzer.questions.gaps.hints import cause_hint
from trace_analyzer.questions.tables.analysis import GAP_SCHEMA, NAMES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
DOC = ROOT / "docs" / "tables.md"
AMD = ROOT.parent / "shared" / "corpus" / "hta" / "tests" / "data" / "amd_trace"
FILES = [f"{n}.parquet" for n in NAMES] + ["tables.json"]


def tables(path: Path, out: Path, *extra: str) -> Path:
    code, stdout, err = run_cli("tables", path, "-o", out, "--no-cache", *extra)
    assert code == 0, err
    assert stdout == ""
    assert err.startswith(f"wrote {out}: ") and " events, " in err and " gaps, " in err, err
    return out


def as_strings(frame: pl.DataFrame) -> pl.DataFrame:
    """The library's frame as the files hold it: categoricals and enums as strings."""
    return frame.cast({c: pl.String for c, t in frame.schema.items()
                       if isinstance(t, pl.Categorical | pl.Enum)})


def amd() -> Path:
    if not any(AMD.glob("*.json.gz")):
        pytest.skip(f"{AMD} is absent: the shared corpus is not checked out beside the repo")
    return AMD


@pytest.fixture(params=["rmsnorm_naive", "rmsnorm_naive_lnc2", "amd_trace"])
def run(request) -> Path:
    return amd() if request.param == "amd_trace" else FIXTURES / request.param


def test_tables_writes_parquet_that_polars_reads_back_to_the_same_frames(run, tmp_path):
    out = tables(run, tmp_path / "t")
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    p = ta.load(run, args=True)
    g = ta.gaps(p).gaps
    want = {"events": p.events, "edges": p.edges, "chains": ta.chains(p).table,
            "gaps": g, "devices": ta.gaps(p).devices, "ops": ta.ops(p).main_frame()}
    manifest = json.loads((out / "tables.json").read_text())
    assert manifest["traceana_version"] == ta.__version__ and manifest["schema_version"] == 4
    for name, frame in want.items():
        got = pl.read_parquet(out / f"{name}.parquet")
        if name == "gaps":  # and each gap's hint: gaps' own for its op, its cause, or general
            given = {(h["op"], h["cause"]): h["hint"] for h in ta.gaps(p).hints}
            hints = [given.get((o, c), given.get((None, c), cause_hint(c, n)))
                     for o, c, n in got.select("next_op", "cause", "neuron").rows()]
            assert got["hint"].to_list() == hints
            assert all(hints)
            got = got.drop("hint")
        assert_frame_equal(got, as_strings(frame))
        assert manifest["tables"][name]["rows"] == frame.height
        assert list(manifest["tables"][name]["columns"]) == list(got.columns) + (
            ["hint"] if name == "gaps" else [])
        meta = pl.read_parquet_metadata(out / f"{name}.parquet")
        assert meta["traceana_table"] == name and meta["traceana_version"] == ta.__version__
    assert {c: str(t) for c, t in as_strings(g).schema.items()} | {"hint": "String"} == {
        c: str(t) for c, t in GAP_SCHEMA.items()}  # a run without gaps gets these columns


def test_a_run_without_hardware_writes_every_table_with_its_columns(tmp_path):
    trace = write_trace(tmp_path / "cpu" / "trace.json",
                        kineto([X("cpu_op", "aten::add", 10, 5), X("cpu_op", "aten::mul", 20, 5)]))
    out = tables(trace.parent, tmp_path / "t")
    gaps = pl.read_parquet(out / "gaps.parquet")
    assert gaps.height == 0 and dict(gaps.schema) == GAP_SCHEMA
    assert pl.read_parquet(out / "chains.parquet").height == 0
    assert pl.read_parquet(out / "events.parquet").height == 2
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed: pip install duckdb")
    for sql in queries("sql").values():
        assert duckdb.sql(sql.replace("DIR", str(out))).fetchall() == []


# --- the queries of docs/tables.md, against the raw files --------------------------------

def queries(language: str) -> dict[str, str]:
    """The fenced blocks of docs/tables.md in ``language`` that start with a query name."""
    mark = "--" if language == "sql" else "#"
    found = {}
    for block in re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S):
        first, _, rest = block.partition("\n")
        if first.startswith(f"{mark} query: "):
            found[first.removeprefix(f"{mark} query: ").strip()] = rest
    return found


def answers(out: Path) -> dict[str, list[tuple]]:
    """Each query's answer over the tables in ``out``, from DuckDB, held equal to polars'."""
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed: pip install duckdb")
    sql = queries("sql")
    assert set(sql) == {"idle_by_step_and_cause", "idle_before_op", "executions_per_neff"}
    got = {name: duckdb.sql(q.replace("DIR", str(out))).fetchall() for name, q in sql.items()}
    for name, code in queries("python").items():
        scope: dict = {"pl": pl}
        exec(code.replace("DIR", str(out)), scope)
        assert scope["answer"].rows() == got[name], name
    return got


def explorer_rows(folder: Path) -> pl.DataFrame:
    """The rows of a fixture's Explorer Parquet export, read raw."""
    shards = sorted((folder / "explorer" / "parquet").glob("SystemProfileEvents*.parquet"))
    return pl.concat([pl.read_parquet(f) for f in shards])


def explorer_executions(folder: Path) -> list[dict]:
    """The nc_exec_running rows of a fixture's Explorer Parquet export, read raw."""
    rows = explorer_rows(folder).filter(pl.col("name") == "nc_exec_running").to_dicts()
    for r in rows:
        r.update(json.loads(r["extra_attributes_json"]))
    return rows


def steps_of(spans: list[tuple[int, int, int]], t: int) -> int | None:
    return next((n for s, e, n in spans if s <= t < e), None)


@pytest.mark.parametrize("fixture", ["rmsnorm_naive", "rmsnorm_naive_lnc2"])
def test_the_doc_s_queries_answer_what_the_raw_neuron_files_say(fixture, tmp_path):
    folder = FIXTURES / fixture
    got = answers(tables(folder, tmp_path / "t"))
    truth = json.loads((folder / "truth.json").read_text())
    execs = explorer_executions(folder)
    # executions per NEFF: one per exec_id (both physical cores with LNC=2), min start to max end
    per: dict[str, dict[int, list[int]]] = defaultdict(dict)
    for r in execs:
        s, e = per[r["model_name"]].setdefault(r["exec_id"], [r["start_ts"], r["end_ts"]])
        per[r["model_name"]][r["exec_id"]] = [min(s, r["start_ts"]), max(e, r["end_ts"])]
    want = {neff: (len(x), sum(e - s for s, e in x.values())) for neff, x in per.items()}
    assert {neff: (n, ns) for neff, n, ns in got["executions_per_neff"]} == want
    assert sum(n for _, n, _ in got["executions_per_neff"]) == 6  # published: 6 executions
    total = sum(ns for _, _, ns in got["executions_per_neff"])
    assert round(total / 1000, 1) == truth["total_device_us"]  # published: 2,355 µs
    # idle per step: the gaps between one core's consecutive executions, in the step of the next
    marks = explorer_rows(folder).filter(pl.col("name").str.starts_with("ProfilerStep#"))
    spans = [(s, e, int(re.match(r"ProfilerStep#(\d+)", n)[1]))
             for n, s, e in marks.select("name", "start_ts", "end_ts").rows()]
    idle: dict[int | None, list[int]] = defaultdict(list)
    for core in {(r["nc_idx"], r["pcore_idx"]) for r in execs}:
        blocks = union_of([(r["start_ts"], r["end_ts"]) for r in execs
                           if (r["nc_idx"], r["pcore_idx"]) == core])
        for a, b in pairwise(blocks):
            idle[steps_of(spans, b[0])].append(b[0] - a[1])
    by_step: dict[int | None, list[int]] = defaultdict(lambda: [0, 0])
    for step, _, ns, n in got["idle_by_step_and_cause"]:
        by_step[step][0] += ns
        by_step[step][1] += n
    assert dict(by_step) == {s: [sum(d), len(d)] for s, d in idle.items()}
    # the transfer gaps: the ones the truth record (one gap per core) has a copy in
    transfer = [g["duration_ns"] for g in truth["gaps"] if g["transfer_in_gap"]]
    assert sum(ns for _, c, ns, _ in got["idle_by_step_and_cause"] if c == "transfer") == (
        sum(transfer))
    # idle before each op: the truth record's gaps by the op after them
    before: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for g in truth["gaps"]:
        before[g["next_op"]][0] += g["duration_ns"]
        before[g["next_op"]][1] += 1
    assert {op: [ns, n] for op, ns, n in got["idle_before_op"]} == dict(before)
    assert got["idle_before_op"][0][0] == "aten::add"  # after the epsilon's copy


def ns(ts: float, base: int) -> int:
    return int(Decimal(repr(ts)) * 1000) + base


def test_the_doc_s_queries_answer_what_a_raw_kineto_trace_says(tmp_path):
    folder = amd()
    got = answers(tables(folder, tmp_path / "t"))
    (path,) = folder.glob("*.json.gz")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    base = int(doc.get("baseTimeNanoseconds", 0))
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    spans = [(ns(e["ts"], base), ns(e["ts"], base) + round(e["dur"] * 1000),
              int(e["name"].rpartition("#")[2])) for e in xs
             if e["name"].startswith("ProfilerStep#") and e.get("cat") == "user_annotation"]
    streams: dict[tuple, list] = defaultdict(list)
    for e in xs:
        if e.get("cat") in ("kernel", "gpu_memset"):
            start = ns(e["ts"], base)
            streams[(e["pid"], e["tid"])].append((start, start + round(e["dur"] * 1000)))
    idle: dict[int | None, list[int]] = defaultdict(list)
    for spans_of_stream in streams.values():
        for a, b in pairwise(union_of(spans_of_stream)):
            idle[steps_of(spans, b[0])].append(b[0] - a[1])
    by_step: dict[int | None, list[int]] = defaultdict(lambda: [0, 0])
    for step, _, total, n in got["idle_by_step_and_cause"]:
        by_step[step][0] += total
        by_step[step][1] += n
    assert dict(by_step) == {s: [sum(d), len(d)] for s, d in idle.items()}
    assert len(idle[1]) > 1  # the trace's kernels run in ProfilerStep#1
    # every gap here ends in a kernel launched from an op: the ops' idle adds up to all of it
    assert sum(t for _, t, _ in got["idle_before_op"]) == sum(map(sum, idle.values()))
    assert got["executions_per_neff"] == []  # a GPU run has no NEFF


# --- refusals ------------------------------------------------------------------------------

def test_a_folder_inside_the_profile_folder_is_refused(tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "rmsnorm_naive", run)
    for inside in (run / "tables", run, run / "explorer"):
        code, out, err = run_cli("tables", run, "-o", inside, "--no-cache")
        assert "inside the profile folder" in one_line_error(code, out, err)
    assert not (run / "tables").exists()
    assert not list(run.glob("*.parquet")) and not (run / "tables.json").exists()


def test_a_folder_that_holds_a_table_is_refused_and_the_file_untouched(tmp_path):
    out = tmp_path / "t"
    out.mkdir()
    (out / "events.parquet").write_bytes(b"mine")
    code, stdout, err = run_cli("tables", FIXTURES / "rmsnorm_naive", "-o", out, "--no-cache")
    line = one_line_error(code, stdout, err)
    assert "already holds events.parquet" in line
    assert (out / "events.parquet").read_bytes() == b"mine"
    assert [p.name for p in out.iterdir()] == ["events.parquet"]


def test_a_bad_input_path_is_refused_and_nothing_is_written(tmp_path):
    code, out, err = run_cli("tables", tmp_path / "nope", "-o", tmp_path / "t", "--no-cache")
    one_line_error(code, out, err)
    assert not (tmp_path / "t").exists()


def test_a_failed_write_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    from trace_analyzer.questions.tables import parquet

    def full(self, file, **kwargs):
        if Path(file).name.startswith(".gaps.parquet"):
            raise OSError(28, "No space left on device")
        return real(self, file, **kwargs)

    real = pl.DataFrame.write_parquet
    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    out = tmp_path / "t"
    code, stdout, err = run_cli("tables", FIXTURES / "rmsnorm_naive", "-o", out, "--no-cache")
    assert "No space left on device" in one_line_error(code, stdout, err)
    assert not out.exists()  # made by the command, and removed with what it wrote
    out.mkdir()
    code, stdout, err = run_cli("tables", FIXTURES / "rmsnorm_naive", "-o", out, "--no-cache")
    assert "No space left on device" in one_line_error(code, stdout, err)
    assert list(out.iterdir()) == []  # the user's own folder: kept, and left empty
    assert not list(tmp_path.rglob(".*.tmp"))
    assert parquet.files(out)[-1].name == "tables.json"


def test_rank_selects_the_ranks_tables(tmp_path):
    out = tables(FIXTURES / "allreduce_2nc", tmp_path / "t", "--rank", "1")
    ranks = pl.read_parquet(out / "events.parquet")["rank"].drop_nulls().unique().to_list()
    assert ranks == [1]
