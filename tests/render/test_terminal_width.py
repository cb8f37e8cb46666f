"""The table format fits the terminal (docs/output.md): with COLUMNS=80 or 120 no line of
`traceana gaps|ops|chain|info` is wider, on the fixtures and on real corpus traces; long text
is cut with an ellipsis and optional columns go first, as a line under the table says.
Without COLUMNS and without a terminal (a pipe, a file) nothing is cut."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from trace_analyzer.render.blocks import Column, Table, draw, num_col, text_col
from trace_analyzer.render.safe import TABLE

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"
CORPUS = ROOT.parent / "shared" / "corpus"
# long op names (Python launches, graph replays), many lanes (MTIA), eight GPUs (nccl)
REAL = ["real/tracelens/sglang_decode", "hta/tests/data/mtia_inference_trace",
        "hta/tests/data/nccl_parser_config", "real/tracelens/h100_bert"]
RUNS = [
    ("gaps",), ("gaps", "--by", "lane"), ("gaps", "--by", "op"), ("gaps", "--by", "step"),
    ("ops",), ("chain",), ("chain", "--by", "op"), ("info",),
]


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("args", RUNS, ids=" ".join)
def test_every_line_fits_the_terminal_on_the_fixtures(monkeypatch, columns, args):
    monkeypatch.setenv("COLUMNS", str(columns))
    for fixture in ("rmsnorm_naive", "rmsnorm_naive_lnc2", "rmsnorm_compiled"):
        code, out, err = run_cli(*args, ROOT / "fixtures" / fixture)  # the session's cache
        assert code == 0, err
        assert widest(out) <= columns, (fixture, [ln for ln in out.splitlines()
                                                  if len(ln) > columns])


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("rel", REAL)
def test_every_line_fits_the_terminal_on_real_traces(monkeypatch, columns, rel):
    if not (CORPUS / rel).exists():
        pytest.skip(f"../shared/corpus is absent: no {CORPUS / rel}")
    monkeypatch.setenv("COLUMNS", str(columns))
    for args in RUNS:
        top = () if args[0] == "info" else ("--top", "30")
        # through the session's cache (conftest): each trace is read once for its eight runs
        code, out, err = run_cli(*args, CORPUS / rel, *top)
        assert code == 0, (args, err)
        too_wide = [ln for ln in out.splitlines() if len(ln) > columns]
        assert not too_wide, (args, too_wide[:3])


def test_a_narrow_terminal_cuts_text_and_says_which_columns_it_left_out(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli("gaps", NAIVE, "--no-cache")
    assert code == 0
    assert "…/PID:4242/neuron_hw/NC0" in out  # a device cut at its start keeps its end
    assert "(left out to fit 80 columns: after op, evidence)" in out
    assert "(left out to fit 80 columns: " in out.split("by device")[1].split("longest")[0]
    monkeypatch.delenv("COLUMNS")
    code, wide, _ = run_cli("gaps", NAIVE, "--no-cache")
    assert "left out to fit" not in wide and "…" not in wide
    assert "dmem_buf_copyin covers 69 % of the gap (118.4 µs)" in wide  # a pipe: all of it


def test_columns_are_dropped_in_their_stated_order():
    columns = (text_col("name", cut=8), num_col("a"), num_col("b", drop=2), num_col("c", drop=1),
               Column("evidence", cut=10, drop=3))
    rows = [["a long name indeed", "1 ms", "2 ms", "3 ms", "x" * 60]]
    table = Table(None, columns, rows)
    for width, kept in ((120, ["name", "a", "b", "c", "evidence"]),
                        (60, ["name", "a", "b", "c", "evidence"]),  # text cut, all kept
                        (40, ["name", "a", "b", "evidence"]),  # c (drop=1) goes first
                        (30, ["name", "a"])):  # then b (2), then evidence (3)
        lines = draw([table], TABLE, width=width)
        assert all(len(ln) <= width for ln in lines), (width, lines)
        assert [c.strip() for c in lines[1].strip("|").split("|")] == kept, (width, lines)
        if width == 60:
            # cut in their middle: the name keeps its start and its end
            assert "…" in lines[3] and "| a long n… indeed |" in lines[3] and "x" * 7 in lines[3]
    narrowest = draw([table], TABLE, width=12)
    assert all(len(ln) <= 12 for ln in narrowest), narrowest
