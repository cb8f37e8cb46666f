"""The `traceana chain`, `info` (links) and `graph` commands: options, formats, coverage.

Expected values come from the fixtures' truth.json, the published call counts, raw corpus
files read here, or inline traces; graph sizes are computed from the events and edges tables.
"""

from __future__ import annotations

import collections
import csv
import functools
import gzip
import io
import json
import re
from pathlib import Path

import networkx as nx
import polars as pl
import pytest
from conftest import X, kineto, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer.loading.link import link

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VARIANTS = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled", "rmsnorm_naive_lnc2"]
SOURCES = {"full": "", "parquet": "explorer/parquet",
           "legacy_json": "explorer/json/system_profile.json"}
NAIVE = FIXTURES / "rmsnorm_naive"
# Published calls per op of the naive workload (one execution per call).
NAIVE_CALLS = {"aten::mul": 3, "aten::add": 1, "aten::rsqrt": 1, "aten::mean": 1}
COVERAGE_KEYS = {"hardware_executions", "linked", "linked_pct", "by_method", "unlinked"}
# Columns a user of the per-execution CSV/JSON relies on.
CHAIN_FIELDS = {"hw_event_id", "hw_name", "lane", "step", "op", "link_method", "hw_start_ns",
                "hw_end_ns", "dispatch_to_hw_us", "hw_duration_us"}


def truth(variant: str) -> dict:
    return json.loads((FIXTURES / variant / "truth.json").read_text())


def cli_json(*args) -> dict:
    code, out, err = run_cli(*args, "--format", "json")
    assert code == 0, f"exit {code}: {err}"
    return json.loads(out)


def chain_run(path, *opts) -> dict:
    runs = cli_json("chain", path, *opts)["runs"]
    assert len(runs) == 1
    return runs[0]


@functools.lru_cache(maxsize=None)
def fixture_chain(variant: str, source: str) -> dict:
    """`chain --format json` of one fixture read from one source (computed once)."""
    return chain_run(FIXTURES / variant / SOURCES[source])


def executions(variant: str) -> dict:
    """truth.json: (lane, start_ns, end_ns) -> op of every nc_exec_running."""
    return {(e["lane"], e["start_ns"], e["end_ns"]): e["op"] for e in truth(variant)["executions"]}


def pipe_table(text: str) -> list[dict]:
    """Parse the first pipe table in ``text`` (table and markdown formats) into row dicts."""
    lines: list[str] = []
    for ln in text.splitlines():
        if ln.strip().startswith("|"):
            lines.append(ln.strip())
        elif lines:  # the first table has ended
            break
    assert lines, text
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    header, rows = cells[0], cells[1:]
    assert rows and set("".join(rows[0])) <= set("-: "), "no separator row"  # |---|---|
    return [dict(zip(header, r)) for r in rows[1:]]


# --- the fixtures: every execution reaches its op ------------------------------------------


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("variant", VARIANTS)
def test_chain_links_every_fixture_execution_to_its_op(variant, source):
    run = fixture_chain(variant, source)
    expected = executions(variant)
    cov = run["coverage"]
    assert cov["hardware_executions"] == len(expected)
    assert (cov["linked"], cov["linked_pct"], cov["unlinked"]) == (len(expected), 100, 0)
    assert sum(cov["by_method"].values()) == len(expected)
    got = {(r["lane"], r["hw_start_ns"], r["hw_end_ns"]): r["op"] for r in run["rows"]}
    assert got == expected
    for r in run["rows"]:
        assert CHAIN_FIELDS <= r.keys()
        assert r["link_method"] in cov["by_method"]
        assert r["hw_duration_us"] == pytest.approx((r["hw_end_ns"] - r["hw_start_ns"]) / 1000)


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("variant", VARIANTS)
def test_info_links_block_is_the_chain_coverage(variant, source):
    path = FIXTURES / variant / SOURCES[source]
    (info_run,) = cli_json("info", path)["runs"]
    assert COVERAGE_KEYS <= info_run["links"].keys()
    assert info_run["links"] == fixture_chain(variant, source)["coverage"]
    assert info_run["links"]["linked_pct"] == 100
    assert info_run["links"]["hardware_executions"] == len(truth(variant)["executions"])


# --- chain options ---------------------------------------------------------------------------


def test_chain_op_exact_name():
    run = chain_run(NAIVE, "--op", "aten::mul")
    assert [r["op"] for r in run["rows"]] == ["aten::mul"] * NAIVE_CALLS["aten::mul"]
    # the selection does not change the coverage of the run
    assert run["coverage"]["hardware_executions"] == 6


@pytest.mark.parametrize("pattern,ops", [
    ("aten::m*", {"aten::mul", "aten::mean"}),
    ("aten::*", set(NAIVE_CALLS)),
    ("aten::r?rt", set()),  # ? is one character
    ("aten::rs?rt", {"aten::rsqrt"}),
    ("*add", {"aten::add"}),
    ("aten::mu", set()),  # a name, not a prefix
])
def test_chain_op_glob(pattern, ops):
    run = chain_run(NAIVE, "--op", pattern)
    got = collections.Counter(r["op"] for r in run["rows"])
    assert got == {op: NAIVE_CALLS[op] for op in ops}


def test_chain_op_glob_with_spaces_and_colons():
    run = chain_run(FIXTURES / "rmsnorm_compiled", "--op", "Torch-Compiled Region: *")
    assert [r["op"] for r in run["rows"]] == ["Torch-Compiled Region: 0/0"]


def test_chain_step():
    step = int(truth("rmsnorm_naive")["profiler_step"]["name"].split("#")[1])
    run = chain_run(NAIVE, "--step", str(step))
    assert len(run["rows"]) == 6 and {r["step"] for r in run["rows"]} == {step}
    assert chain_run(NAIVE, "--step", str(step + 1))["rows"] == []


def test_chain_by_op():
    run = chain_run(NAIVE, "--by", "op")
    rows = {r["op"]: r for r in run["rows"]}
    assert {op: r["executions"] for op, r in rows.items()} == NAIVE_CALLS
    # mean hardware time per execution: the published device time over the calls
    assert rows["aten::mul"]["hw_duration_us"] == pytest.approx(1164.5 / 3, abs=0.01)
    assert rows["aten::add"]["hw_duration_us"] == pytest.approx(434.6, abs=0.01)
    assert all(r["link_method"] for r in run["rows"])


def test_chain_by_op_with_op_filter():
    run = chain_run(NAIVE, "--by", "op", "--op", "aten::m*")
    assert {r["op"]: r["executions"] for r in run["rows"]} == {"aten::mul": 3, "aten::mean": 1}


def test_chain_limit_keeps_the_first_executions():
    first = sorted(executions("rmsnorm_naive"), key=lambda k: k[1])[:2]
    run = chain_run(NAIVE, "--limit", "2")
    assert [(r["lane"], r["hw_start_ns"], r["hw_end_ns"]) for r in run["rows"]] == first
    assert run["coverage"]["hardware_executions"] == 6


def test_chain_limit_must_be_positive():
    code, _, _ = run_cli("chain", NAIVE, "--limit", "0")
    assert code == 2


def test_chain_unlinked_on_fully_linked_fixture_is_empty():
    run = chain_run(NAIVE, "--unlinked")
    assert run["rows"] == [] and run["coverage"]["unlinked"] == 0


BASE = 1_793_620_800_000_000_000
HOST = 4242


def orphan_trace(tmp_path) -> Path:
    """One linked kernel (aten::mm) and one whose launch sits outside every op."""
    events = [
        X("cpu_op", "aten::mm", 100, 50, pid=HOST, tid=HOST, **{"External id": 1}),
        X("cuda_runtime", "cudaLaunchKernel", 110, 5, pid=HOST, tid=HOST, correlation=11,
          **{"External id": 1}),
        X("kernel", "gemm", 200, 40, pid=0, tid=7, device=0, stream=7, correlation=11),
        X("cuda_runtime", "cudaLaunchKernel", 700, 5, pid=HOST, tid=HOST, correlation=12),
        X("kernel", "orphan", 800, 30, pid=0, tid=7, device=0, stream=7, correlation=12),
    ]
    return write_trace(tmp_path / "trace.json", kineto(events, baseTimeNanoseconds=BASE))


def test_chain_unlinked_lists_only_executions_without_op(tmp_path):
    p = orphan_trace(tmp_path)
    run = chain_run(p, "--unlinked")
    assert [(r["hw_name"], r["op"], r["link_method"]) for r in run["rows"]] == [("orphan", None, None)]
    assert (run["coverage"]["linked"], run["coverage"]["unlinked"]) == (1, 1)
    all_rows = chain_run(p)["rows"]
    assert {r["hw_name"]: r["op"] for r in all_rows} == {"gemm": "aten::mm", "orphan": None}


def test_chain_by_op_shows_unlinked_executions(tmp_path):
    rows = chain_run(orphan_trace(tmp_path), "--by", "op")["rows"]
    assert {r["op"]: r["executions"] for r in rows} == {"aten::mm": 1, None: 1}


# --- formats ---------------------------------------------------------------------------------


def test_chain_csv_parses_back():
    code, out, err = run_cli("chain", NAIVE, "--format", "csv")
    assert code == 0, err
    reader = csv.DictReader(io.StringIO(out))
    assert CHAIN_FIELDS <= set(reader.fieldnames)
    rows = list(reader)
    expected = executions("rmsnorm_naive")
    got = {(r["lane"], int(r["hw_start_ns"]), int(r["hw_end_ns"])): r["op"] for r in rows}
    assert got == expected
    # the CSV carries the same columns as the JSON rows
    assert reader.fieldnames == list(fixture_chain("rmsnorm_naive", "full")["rows"][0].keys())


def test_chain_csv_by_op_parses_back():
    code, out, _ = run_cli("chain", NAIVE, "--format", "csv", "--by", "op")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["op"]: int(r["executions"]) for r in rows} == NAIVE_CALLS


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_chain_text_formats_parse_back(fmt):
    code, out, err = run_cli("chain", NAIVE, "--format", fmt)
    assert code == 0, err
    rows = pipe_table(out)
    assert collections.Counter(r["op"] for r in rows) == NAIVE_CALLS
    assert "6 of 6" in out and "(100 %)" in out  # the coverage line
    if fmt == "markdown":
        assert out.startswith("## ")


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_chain_text_formats_by_op_parse_back(fmt):
    code, out, _ = run_cli("chain", NAIVE, "--format", fmt, "--by", "op")
    assert code == 0
    rows = pipe_table(out)
    assert {r["op"]: int(r["executions"]) for r in rows} == NAIVE_CALLS


def test_chain_output_file_format_from_extension(tmp_path):
    out = tmp_path / "chain.csv"
    code, stdout, err = run_cli("chain", NAIVE, "-o", out)
    assert code == 0, err
    assert stdout == ""
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 6


def test_chain_json_shape():
    data = cli_json("chain", NAIVE)
    assert data["schema_version"] == 1
    (run,) = data["runs"]
    assert COVERAGE_KEYS <= run["coverage"].keys()
    assert len(run["rows"]) == 6


# --- the corpus (Kineto GPU traces) ----------------------------------------------------------


def raw_events(folder: Path) -> list[list[dict]]:
    return [json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]
            for f in sorted(folder.glob("*.json.gz"))]


def expected_kernel_ops(files: list[list[dict]]) -> dict:
    """From the raw JSON: (device, correlation) of each kernel -> the innermost cpu_op that
    encloses its launch (the cuda_runtime event with the same correlation) on its thread."""
    expected = {}
    for events in files:
        xs = [e for e in events if e.get("ph") == "X"]
        ops = collections.defaultdict(list)
        for i, e in enumerate(xs):
            if e.get("cat") == "cpu_op":
                ops[e["pid"], e["tid"]].append((e["ts"], e["ts"] + e["dur"], -i, e["name"]))
        runtime = {e["args"]["correlation"]: e for e in xs if e.get("cat") == "cuda_runtime"}
        for k in xs:
            if k.get("cat") != "kernel":
                continue
            r = runtime.get(k["args"]["correlation"])
            inside = [o for o in ops[r["pid"], r["tid"]] if o[0] <= r["ts"] <= o[1]] if r else []
            # innermost: the shortest; at equal span, the one listed later (the child)
            best = min(inside, key=lambda o: (o[1] - o[0], o[2]), default=None)
            expected[k["args"]["device"], k["args"]["correlation"]] = best[3] if best else None
    return expected


def kernel_chains(path: Path) -> pl.DataFrame:
    """chain rows (from the CLI) of the kernel-category events, with their keys."""
    rows = chain_run(path)["rows"]
    events = ta.load(path).events.select("event_id", "category", "device", "correlation")
    ch = pl.DataFrame(rows, infer_schema_length=None).select("hw_event_id", "op", "op_event_id")
    return ch.join(events, left_on="hw_event_id", right_on="event_id").filter(
        pl.col("category") == "kernel")


@pytest.mark.parametrize("trace", ["critical_path/simple_add", "critical_path/alexnet"])
def test_corpus_kernels_link_to_their_cpu_op(corpus, trace):
    path = corpus / trace
    expected = expected_kernel_ops(raw_events(path))
    kernels = kernel_chains(path)
    assert kernels.height == len(expected)  # every kernel is listed
    linked = kernels.filter(pl.col("op").is_not_null())
    assert linked.height >= 0.99 * len(expected)
    # the op is a cpu_op
    cats = ta.load(path).events.select("event_id", "category")
    op_cats = linked.join(cats, left_on="op_event_id", right_on="event_id", suffix="_op")
    assert set(op_cats["category_op"]) == {"cpu_op"}
    # and it is the op the raw trace says launched the kernel
    got = {(r["device"], r["correlation"]): r["op"] for r in kernels.iter_rows(named=True)}
    wrong = {k: (v, got.get(k)) for k, v in expected.items() if got.get(k) != v}
    assert not wrong


def test_corpus_trace_without_flows_still_links(corpus):
    path = corpus / "trace_filter"
    files = raw_events(path)
    assert len(files) == 2
    assert not any(e.get("ph") in ("s", "f") for events in files for e in events)  # no flows
    n_kernels = sum(e.get("ph") == "X" and e.get("cat") == "kernel" for ev in files for e in ev)
    kernels = kernel_chains(path)
    assert kernels.height == n_kernels
    assert kernels.filter(pl.col("op").is_not_null()).height > 0.9 * n_kernels
    (run,) = cli_json("chain", path, "--limit", "1")["runs"]
    assert run["coverage"]["linked_pct"] > 90
    assert "flow_id" not in run["coverage"]["by_method"]


def test_corpus_mtia_reports_coverage(corpus):
    path = corpus / "mtia_inference_trace"
    n_device = sum(e.get("ph") == "X" and e.get("cat") == "mtia_ccp_events"  # DMAs are copies,
                   and e.get("name") not in ("dma_request", "event_record", "event_wait")  # these syncs
                   for ev in raw_events(path) for e in ev)
    (run,) = cli_json("chain", path, "--limit", "5")["runs"]
    cov = run["coverage"]
    assert COVERAGE_KEYS <= cov.keys()
    assert cov["hardware_executions"] == n_device
    assert cov["linked"] + cov["unlinked"] == n_device


# --- graph -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def naive_graph_expected() -> dict:
    """Nodes and edges the naive fixture's graph must hold, from the library's tables."""
    events = ta.load(NAIVE).events
    edges = link(events)
    hw = events.filter(pl.col("lane_kind") == "hardware")["event_id"].to_list()
    nodes = set(edges["src"].to_list()) | set(edges["dst"].to_list()) | set(hw)
    attrs = {r["event_id"]: r for r in events.filter(pl.col("event_id").is_in(list(nodes)))
             .select("event_id", "name", "lane", "lane_kind", "start_ns", "end_ns")
             .with_columns(pl.col("lane_kind").cast(pl.String)).iter_rows(named=True)}
    return {"nodes": nodes, "edges": {(r["src"], r["dst"]): r for r in edges.iter_rows(named=True)},
            "attrs": attrs, "hardware": set(hw)}


def check_graph(g: nx.DiGraph, exp: dict, key=lambda n: n) -> None:
    assert g.is_directed()
    assert {key(n) for n in g.nodes} == exp["nodes"]
    assert g.number_of_edges() == len(exp["edges"])
    for n, a in g.nodes(data=True):
        e = exp["attrs"][key(n)]
        assert (a["label"], a["lane"], a["kind"], int(a["start_ns"]), int(a["end_ns"])) == (
            e["name"], e["lane"], e["lane_kind"], e["start_ns"], e["end_ns"])
    for u, v, a in g.edges(data=True):
        e = exp["edges"][key(u), key(v)]
        assert (a["hop"], a["link_method"], int(a["latency_ns"])) == (
            e["hop"], e["link_method"], e["latency_ns"])


def write_graph(tmp_path, ext: str, path=NAIVE) -> Path:
    out = tmp_path / f"x.{ext}"
    code, _, err = run_cli("graph", path, "-o", out)
    assert code == 0, err
    assert out.is_file()
    return out


def test_graph_graphml(tmp_path, naive_graph_expected):
    g = nx.read_graphml(write_graph(tmp_path, "graphml"))
    check_graph(g, naive_graph_expected, key=int)
    # every hardware execution is a node, with the op it came from upstream
    for hw in naive_graph_expected["hardware"]:
        assert g.in_degree(str(hw)) == 1


def test_graph_node_link_json(tmp_path, naive_graph_expected):
    data = json.loads(write_graph(tmp_path, "json").read_text())
    g = nx.node_link_graph(data, edges="edges")
    check_graph(g, naive_graph_expected)


def test_graph_dot(tmp_path, naive_graph_expected):
    text = write_graph(tmp_path, "dot").read_text()
    assert "digraph" in text
    arrows = re.findall(r"^\s*\"?(\d+)\"?\s*->\s*\"?(\d+)\"?", text, flags=re.M)
    assert {(int(a), int(b)) for a, b in arrows} == set(naive_graph_expected["edges"])
    assert len(arrows) == len(naive_graph_expected["edges"])


def test_graph_stderr_reports_counts(tmp_path, naive_graph_expected):
    code, _, err = run_cli("graph", NAIVE, "-o", tmp_path / "g.json")
    assert code == 0
    n, m = len(naive_graph_expected["nodes"]), len(naive_graph_expected["edges"])
    assert f"{n} nodes, {m} edges" in err


def test_graph_keeps_unlinked_hardware_as_a_node(tmp_path):
    g = nx.read_graphml(write_graph(tmp_path, "graphml", path=orphan_trace(tmp_path)))
    labels = {a["label"]: n for n, a in g.nodes(data=True)}
    assert "orphan" in labels and "gemm" in labels
    assert g.in_degree(labels["gemm"]) == 1


def test_graph_unknown_extension_is_exit_2_with_one_line(tmp_path):
    out = tmp_path / "x.png"
    code, stdout, err = run_cli("graph", NAIVE, "-o", out)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "x.png" in err
    assert not out.exists()


def test_graph_on_several_runs_is_exit_2_with_one_line(tmp_path):
    out = tmp_path / "x.json"
    code, _, err = run_cli("graph", FIXTURES, "-o", out)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "runs" in err
    assert not out.exists()


# --- --top N: the rows the text and Markdown reports show, in every command (default 10; JSON
# and CSV have them all); --limit N, of ops and chain: the first N rows in every format


@pytest.mark.parametrize("command", ["chain", "ops"])
def test_top_cuts_the_text_and_limit_every_format(command):
    every = cli_json(command, NAIVE)["runs"][0]["rows"]
    assert len(every) > 2
    assert cli_json(command, NAIVE, "--top", "2")["runs"][0]["rows"] == every  # all in JSON
    assert cli_json(command, NAIVE, "--limit", "2")["runs"][0]["rows"] == every[:2]
    help_text = run_cli(command, "--help")[1]
    assert "--top N" in help_text and "--limit N" in help_text
    assert "--top, --limit" not in help_text  # two options now, not one with two names


def table_rows(text: str) -> list[str]:
    """The rows of the one table of a chain or ops report, in a terminal or in Markdown."""
    return [ln for ln in text.splitlines() if ln.startswith("| aten")]


def test_the_text_shows_ten_rows_by_default_and_what_limit_kept():
    lnc2 = FIXTURES / "rmsnorm_naive_lnc2"  # 12 executions
    code, out, err = run_cli("chain", lnc2, "--no-cache")
    assert code == 0, err
    assert len(table_rows(out)) == 10 and "and 2 more executions" in out
    code, out, err = run_cli("chain", lnc2, "--limit", "12", "--no-cache")
    assert len(table_rows(out)) == 12 and "more executions" not in out  # --limit's N shown
    code, out, err = run_cli("chain", lnc2, "--limit", "12", "--top", "3", "--no-cache")
    assert len(table_rows(out)) == 3 and "and 9 more executions" in out


def test_chain_markdown_shows_the_top_rows_and_counts_the_rest():
    code, out, err = run_cli("chain", NAIVE, "--format", "markdown", "--top", "6")
    assert code == 0, err
    assert len(pipe_table(out)) == 6 and "more executions" not in out
    code, out, err = run_cli("ops", NAIVE, "--format", "markdown", "--top", "3")
    assert code == 0, err
    assert len(pipe_table(out)) == 3 and "and 1 more ops" in out  # the result has them all
