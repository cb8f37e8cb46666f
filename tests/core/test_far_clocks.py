"""Traces far apart in time in one folder are not merged into one window (issue 16): each group
of them is a run of its own, a part of the folder's (issue 38; loading/clocks.py,
loading/parts.py, docs/formats.md "Layouts and runs")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import X, kineto, run_cli, write_trace

import trace_analyzer as ta
from trace_analyzer.errors import UsageError
from trace_analyzer.inputs.discover import discover
from trace_analyzer.loading.clocks import FAR_APART_NS
from trace_analyzer.loading.profile import read_parts

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DLRM = SHARED / "real/param/dlrm_kineto"
DAY_NS = 86_400 * 1_000_000_000
BASE = 1_700_000_000 * 1_000_000_000  # baseTimeNanoseconds of the first rank (epoch ns)


def _rank(folder: Path, name: str, base_ns: int) -> Path:
    """A one-GPU Kineto trace: two kernels 100 µs apart, the last ending at 160 µs after base."""
    events = [
        X("kernel", "k0", 0, 40, pid=0, tid=7, device=0, stream=7),
        X("kernel", "k1", 140, 20, pid=0, tid=7, device=0, stream=7),
    ]
    return write_trace(folder / name, kineto(events, baseTimeNanoseconds=base_ns))


def _apart(folder: Path, *names: str) -> None:
    """``folder`` is a run per name (each holding that file alone), each the window and idle
    time of the file named alone; one run is a usage error that names them."""
    code, out, err = run_cli("gaps", folder, "--no-cache", "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert [r["root"] for r in runs] == [f"{folder}#{n}" for n in names]
    for r, name in zip(runs, names, strict=True):
        code, alone, err = run_cli("gaps", folder / name, "--no-cache", "--format", "json")
        (one,) = json.loads(alone)["runs"]
        assert code == 0 and r["window"] == one["window"] and r["summary"] == one["summary"]
        assert any("so they are 2 runs" in w for w in r["warnings"]), r["warnings"]
    with pytest.raises(UsageError, match="2 runs found"):
        ta.load(folder)


def test_two_traces_200_days_apart_are_two_runs_each_as_read_alone(tmp_path):
    a = _rank(tmp_path, "rank0.json", BASE)
    b = _rank(tmp_path, "rank1.json", BASE + 200 * DAY_NS)
    _apart(tmp_path, "rank0.json", "rank1.json")
    for f, base in ((a, BASE), (b, BASE + 200 * DAY_NS)):
        for g in (ta.gaps(ta.load(f)), ta.gaps(ta.load(tmp_path, run=f.name))):
            assert g.window is not None
            assert (g.window.start_ns, g.window.end_ns) == (base, base + 160_000)
            assert g.summary["idle_ns"] == 100_000


@pytest.mark.parametrize("apart", [FAR_APART_NS, FAR_APART_NS + 1])
def test_the_threshold(tmp_path, apart):
    _rank(tmp_path, "rank0.json", BASE)
    _rank(tmp_path, "rank1.json", BASE + 160_000 + apart)  # rank1 starts `apart` after rank0 ends
    if apart > FAR_APART_NS:
        _apart(tmp_path, "rank0.json", "rank1.json")
        return
    g = ta.gaps(ta.load(tmp_path))
    assert g.window is not None and g.window.duration_ns == 2 * 160_000 + apart


def test_a_corpus_rank_copied_200_days_later_is_a_run_of_its_own(tmp_path):
    if not DLRM.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {DLRM}")
    src = sorted(DLRM.glob("*.json.gz"))[0]
    doc = json.loads(gzip.decompress(src.read_bytes()))
    (tmp_path / "early.json.gz").write_bytes(src.read_bytes())
    shift_us = 200 * DAY_NS // 1000  # this trace's ts are epoch µs (no baseTimeNanoseconds)
    assert "baseTimeNanoseconds" not in doc
    for e in doc["traceEvents"]:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] += shift_us
    write_trace(tmp_path / "late.json.gz", doc)
    _apart(tmp_path, "early.json.gz", "late.json.gz")


def test_every_multi_file_corpus_run_stays_one_run():
    if not SHARED.is_dir():
        pytest.skip(f"../shared/corpus is absent: no {SHARED}")
    seen = 0
    for top in (SHARED / "real", SHARED / "hta"):
        for run in discover(top):
            if len(run.sources) > 1:
                seen += 1
                assert len(read_parts(run)) == 1, run.root  # one run, not parts apart
    assert seen >= 2  # the 8 DLRM ranks and HTA's trace_filter ranks at least
