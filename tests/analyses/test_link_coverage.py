"""Link coverage of every trace of the shared corpus, held to a recorded floor (issue 15).

Every run traceana finds in ../shared/corpus/real/ and ../shared/corpus/hta/ (SOURCE.md in
each) is loaded; for each trace file it reads, two figures are compared with the record
beside this file, link_coverage.json:

- hardware executions (rows of ``traceana chain``: events of kind ``hardware``) and how many
  reach a framework op (``linked``, the coverage ``traceana info`` reports);
- Kineto device ops (kernels, memsets: kind ``hardware``; memcpys: kind ``transfer``) and
  how many have a parent launch (``launched``: the child of a ``device`` hop, docs/graph.md).

The totals (executions, device ops) must equal the record, and are checked here against the
raw files too, counted in a few lines of orjson. The linked and launched counts are a
REGRESSION FLOOR recorded from traceana's own output (commit 4376090 plus issue 15's
``cuda_profiler_range`` category): they may grow, never shrink. Inputs traceana refuses on
purpose (an execution trace, rocprofiler-sdk JSON) are recorded as refused and must stay so.

When coverage improves, or the corpus changes, rewrite the record deliberately:

    .venv/bin/python tests/analyses/test_link_coverage.py --record

and commit it with the change that moved it. The whole corpus loads in about 5 s.
"""

from __future__ import annotations

import functools
import gzip
import json
import sys
import warnings
from pathlib import Path

import orjson
import polars as pl
import pytest

import trace_analyzer as ta
from trace_analyzer.inputs.discover import Run, discover
from trace_analyzer.loading.profile import Profile, load_parts, refuse_untimed

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
TOPS = ("real", "hta")
RECORD = Path(__file__).with_name("link_coverage.json")
ABSENT = (f"../shared/corpus is absent: no {CORPUS / 'real'} or {CORPUS / 'hta'}; the link "
          "coverage record needs the shared corpus checked out beside the repository")
RERECORD = ("if coverage improved on purpose, rewrite the record: "
            ".venv/bin/python tests/analyses/test_link_coverage.py --record")

# Raw Kineto categories, counted from the files. traceana's hardware executions are kernels
# and memsets (and MTIA's ccp events, the old capitalised names, CUPTI range events); a
# memcpy is a transfer: a device op with a launch, but not an execution that keeps the
# device busy (docs/formats.md). cuda_sync runs on the device lane and is linked by the
# device hop too, but it is a wait, not work: counted in neither figure. gpu_user_annotation
# (a device-side annotation) is neither.
RAW_HARDWARE = {"kernel", "Kernel", "gpu_memset", "Memset", "mtia_ccp_events",
                "cuda_profiler_range"}
RAW_DEVICE_OPS = RAW_HARDWARE | {"gpu_memcpy", "Memcpy", "mtia_dma_request"}
MTIA_NOT_WORK = {"dma_request", "event_record", "event_wait"}


def rel(path: object) -> str:
    return str(Path(str(path)).relative_to(CORPUS))


@functools.cache
def runs() -> dict[str, Run]:
    """Every run discovered under the corpus folders, by its root relative to the corpus."""
    return {rel(run.root): run for top in TOPS for run in discover(CORPUS / top)}


@functools.cache
def loaded(root: str) -> Profile | str:
    """The run at ``root`` loaded, or the one line of its refusal (an InputError)."""
    try:
        (profile,) = refuse_untimed(load_parts(runs()[root]))
    except ta.InputError as e:
        return str(e).replace(str(CORPUS) + "/", "")
    return profile


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def figures(p: Profile) -> dict[str, dict]:
    """Per trace file read in run ``p``: its executions, linked, device ops and launched."""
    files = p.events.select("event_id", "file")
    chain = ta.chains(p).table.select("hw_event_id", linked=pl.col("op").is_not_null())
    hw = chain.join(files, left_on="hw_event_id", right_on="event_id")
    launched = p.edges.filter(pl.col("hop") == "device")["dst"]
    kind, src = pl.col("lane_kind").cast(pl.String), pl.col("source")
    dev = p.events.filter(
        kind.is_in(["hardware", "transfer"]) & ~src.is_in(["neuron_hw", "neuron_rt"])
    ).select("file", launched=pl.col("event_id").is_in(launched.implode()))
    out = {}
    for r in p.reads:
        if not r.read:
            continue
        f = str(r.source.path)
        mine, ops = hw.filter(pl.col("file") == f), dev.filter(pl.col("file") == f)
        n, k = mine.height, int(mine["linked"].sum())
        d, ln = ops.height, int(ops["launched"].sum())
        out[rel(f)] = {"run": rel(p.root), "format": r.format, "hardware_executions": n,
                       "linked": k, "linked_share": share(k, n), "device_ops": d,
                       "launched": ln, "launched_share": share(ln, d)}
    return out


def measure() -> dict:
    """The record's content, measured now: every trace's figures and every refused run."""
    traces, refused = {}, {}
    for root in sorted(runs()):
        got = loaded(root)
        if isinstance(got, str):
            refused[root] = got
        else:
            traces.update(figures(got))
    return {"traces": dict(sorted(traces.items())), "refused": refused}


def recorded() -> dict:
    return json.loads(RECORD.read_text()) if RECORD.is_file() else {"traces": {}, "refused": {}}


def raw_counts(path: str) -> tuple[int, int]:
    """(hardware executions, device ops) of one Kineto trace, counted from the raw file."""
    data = (CORPUS / path).read_bytes()
    doc = orjson.loads(gzip.decompress(data) if path.endswith(".gz") else data)
    xs = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    # MTIA's DMAs are copies, its event records and waits synchronisation (issue 35)
    cats = [e.get("cat") if e.get("cat") != "mtia_ccp_events" or e.get("name") not in MTIA_NOT_WORK
            else "mtia_" + e["name"] for e in xs]
    return sum(c in RAW_HARDWARE for c in cats), sum(c in RAW_DEVICE_OPS for c in cats)


RECORDED = recorded()


@pytest.fixture
def corpus() -> Path:
    if not all((CORPUS / top).is_dir() for top in TOPS):
        pytest.skip(ABSENT)
    return CORPUS


def trace_now(path: str) -> dict:
    want = RECORDED["traces"][path]
    got = loaded(want["run"])
    assert not isinstance(got, str), f"{want['run']} is refused now: {got}"
    return figures(got)[path]


def test_every_corpus_trace_is_recorded(corpus):
    now = measure()
    assert sorted(now["traces"]) == sorted(RECORDED["traces"]), RERECORD
    assert now["refused"] == RECORDED["refused"], RERECORD


@pytest.mark.parametrize("path", sorted(RECORDED["traces"]))
def test_trace_keeps_its_link_coverage(corpus, path):
    want, got = RECORDED["traces"][path], trace_now(path)
    assert got["hardware_executions"] == want["hardware_executions"], (path, got)
    assert got["device_ops"] == want["device_ops"], (path, got)
    # the recorded floor: coverage may improve (then re-record), never fall
    assert got["linked"] >= want["linked"], (path, got, want)
    assert got["launched"] >= want["launched"], (path, got, want)
    if (got["linked"], got["launched"]) != (want["linked"], want["launched"]):
        warnings.warn(f"{path} links more than recorded: {got}; {RERECORD}", stacklevel=1)


@pytest.mark.parametrize("path", sorted(RECORDED["traces"]))
def test_totals_match_the_raw_file(corpus, path):
    want = RECORDED["traces"][path]
    assert want["format"] == "kineto-json", want  # the corpus holds Kineto traces only
    hardware, device_ops = raw_counts(path)
    assert (want["hardware_executions"], want["device_ops"]) == (hardware, device_ops), path
    got = trace_now(path)
    assert (got["hardware_executions"], got["device_ops"]) == (hardware, device_ops), path


def test_run_coverage_adds_up_its_traces(corpus):
    """What ``traceana info`` reports for a run is the sum of its traces' figures."""
    for root in sorted({t["run"] for t in RECORDED["traces"].values()}):
        p = loaded(root)
        assert isinstance(p, Profile), (root, p)
        cov = ta.info(p).links
        mine = [t for t in RECORDED["traces"].values() if t["run"] == root]
        assert cov["hardware_executions"] == sum(t["hardware_executions"] for t in mine), root
        assert cov["linked"] >= sum(t["linked"] for t in mine), root


@pytest.mark.parametrize("root", sorted(RECORDED["refused"]))
def test_refused_input_stays_refused(corpus, root):
    assert loaded(root) == RECORDED["refused"][root]


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit(f"usage: {sys.argv[0]} --record   (rewrites {RECORD.name} from the corpus)")
    if not all((CORPUS / top).is_dir() for top in TOPS):
        sys.exit(ABSENT)
    about = ("written by tests/analyses/test_link_coverage.py --record; hardware_executions and "
             "device_ops are totals (checked against the raw files), linked and launched a "
             "regression floor recorded from traceana's output (they may grow, never shrink)")
    RECORD.write_text(json.dumps({"about": about, **measure()}, indent=1) + "\n")
    print(f"wrote {RECORD}")
