"""A narrow terminal keeps rows apart and loses no evidence (issue 39, docs/output.md "The
terminal width"), with traceana run as a real process, as a user runs it.

Names: kernels and ops whose names share long starts (and ends), as real C++ kernel and
autograd names do, stay distinct in `traceana kernels` and `traceana ops` at COLUMNS=100, and
each shown name is its own name cut (its pieces, between the ellipses, in order in it, the
first its start and the last its end), so a reader can tell which row is which; so too in
Markdown, which cuts cells over 160 characters. Evidence: at COLUMNS=120 the longest-gaps
table wraps each gap's evidence onto more lines, every line aligned with the header, and the
wrapped lines hold the whole evidence the JSON has. Names holding control characters stay
inert when cut. The expected names and evidence come from the trace written here and from the
JSON output, never from the text being checked.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path

import pytest
from conftest import X, kineto, run_process, write_trace

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "fixtures" / "rmsnorm_naive"
CORPUS = ROOT.parent / "shared" / "corpus"
RESNET = CORPUS / "real" / "kineto" / "tb_plugin_resnet50"
ELLIPSIS = "…"

_EW = "void at::native::vectorized_elementwise_kernel<4, at::native::{f}<float>, at::detail::Array<char*, {n}> >(int, at::native::{f}<float>, at::detail::Array<char*, {n}>)"  # noqa: E501
_GK = "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::{f}<float> >(at::TensorIteratorBase&, at::native::{f}<float> const&)::{{lambda(int)#1}}>(int, at::native::gpu_kernel_impl<at::native::{f}<float> >(at::TensorIteratorBase&, at::native::{f}<float> const&)::{{lambda(int)#1}})"  # noqa: E501
LONG = "x" * 170  # a start longer than a Markdown cell
KERNELS = [
    _EW.format(f="CUDAFunctor_add", n=3), _EW.format(f="CUDAFunctor_mul", n=3),
    _EW.format(f="FillFunctor", n=1), _GK.format(f="AddFunctor"), _GK.format(f="MulFunctor"),
    _GK.format(f="DivFunctor"), f"{LONG}_kernel_a", f"{LONG}_kernel_b",
    "void at::native::vectorized_elementwise_kernel<4, \x1b[2Jat::native::evil\u202e>(int)",
]  # fmt: skip
OPS = [
    "autograd::engine::evaluate_function: ScaledDotProductEfficientAttentionBackward0",
    "autograd::engine::evaluate_function: NativeLayerNormBackward0",
    "autograd::engine::evaluate_function: AddmmBackward0",
    "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
    "nn.Module: BertModel/encoder/layer.0/attention/self/query",
    "nn.Module: BertModel/encoder/layer.0/attention/self/key",
    "nn.Module: BertModel/encoder/layer.11/attention/self/query",
    "nn.Module: BertModel/encoder/layer.11/attention/output/dense",
    f"{LONG}::op_a", f"{LONG}::op_b",
]
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A Kineto run: each op launches one kernel on stream 7, 200 µs apart (the ops and the
    kernels are the lists above, paired in order; the last kernel is launched twice)."""
    events = []
    for i, kernel in enumerate(KERNELS + KERNELS[-1:]):
        t, op = 100 + 200 * i, OPS[i % len(OPS)]
        events += [
            X("cpu_op", op, t, 20, pid=7, tid=7, **{"External id": i + 1}),
            X("cuda_runtime", "cudaLaunchKernel", t + 5, 5, pid=7, tid=7, correlation=1000 + i,
              **{"External id": i + 1}),
            X("kernel", kernel, t + 50, 30 + i, pid=0, tid=7, device=0, stream=7,
              correlation=1000 + i),
        ]  # fmt: skip
    folder = tmp_path_factory.mktemp("names") / "run"
    write_trace(folder / "trace.json", kineto(events, baseTimeNanoseconds=1_700_000_000 * 10**9))
    return folder


def traceana(monkeypatch, columns: int | None, *args) -> str:
    """Return what ``traceana ARGS`` prints to a pipe, with ``COLUMNS`` set (None: unset)."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err, *_ = run_process(*args, "--no-cache")
    assert code == 0, err
    return out


def table(out: str, title: str) -> list[list[str]]:
    """Return the lines of the table under ``title`` as cells, cut at the pipes of its
    delimiter row (so a cell may hold any text), header and delimiter left out; every line of
    the table must keep those pipes where they are."""
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith(title))
    start = next(i for i in range(at, len(lines)) if lines[i].startswith("|"))
    body = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        body.append(ln)
    pipes = [i for i, c in enumerate(body[1]) if c == "|"]
    for ln in body:
        assert len(ln) == len(body[1]) and all(ln[i] == "|" for i in pipes), (ln, body[1])
    return [[ln[a + 1 : b].strip() for a, b in pairwise(pipes)] for ln in body[2:]]


def stands_for(shown: str, name: str) -> bool:
    """Whether ``shown`` is ``name`` cut: its pieces between ellipses in order in it, the
    first its start and the last its end."""
    if ELLIPSIS not in shown:
        return shown == name
    pieces = shown.split(ELLIPSIS)
    if not (name.startswith(pieces[0]) and name.endswith(pieces[-1])):
        return False
    at = len(pieces[0])
    for piece in pieces[1:-1]:
        at = name.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return at <= len(name) - len(pieces[-1])


def check_apart(shown: list[str], names: list[str]) -> None:
    """Each shown name stands for exactly one of ``names`` (as a terminal shows them: control
    characters as escapes), and each of ``names`` is shown once."""
    visible = [CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 256
                           else f"\\u{ord(m[0]):04x}", n) for n in names]  # fmt: skip
    assert len(shown) == len(set(shown)) == len(names), shown
    for s in shown:
        found = [n for n in visible if stands_for(s, n)]
        assert len(found) == 1, (s, found)


def test_kernels_sharing_a_start_stay_apart_at_100_columns(run, monkeypatch):
    out = traceana(monkeypatch, 100, "kernels", run, "--top", "50")
    assert max(len(ln) for ln in out.splitlines()) <= 100
    rows = table(out, "kernels by total device time")
    shown = [r[1] for r in rows]
    assert any(ELLIPSIS in s for s in shown)  # the width did cut them
    check_apart(shown, KERNELS)
    assert not CONTROL.search(out)  # a name cut is as inert as a whole one


def test_ops_sharing_a_start_stay_apart_at_100_columns(run, monkeypatch):
    out = traceana(monkeypatch, 100, "ops", run)
    assert max(len(ln) for ln in out.splitlines()) <= 100
    shown = [r[0] for r in table(out, "ops by device time")]
    assert any(ELLIPSIS in s for s in shown)
    check_apart(shown, OPS)


def test_markdown_cuts_long_names_apart(run, monkeypatch):
    """Markdown cuts a cell over 160 characters: two kernels alike in their first 170 stay
    two (Markdown escapes ``_``; the pieces are compared unescaped)."""
    out = traceana(monkeypatch, None, "kernels", run, "--format", "markdown", "--top", "50")
    cells = [ln.split(" | ")[1].replace("\\", "").strip() for ln in out.splitlines()
             if ln.startswith("| ") and LONG[:20] in ln]  # fmt: skip
    assert len(cells) == 2 and all(ELLIPSIS in c and len(c) <= 160 for c in cells), cells
    check_apart(cells, [k for k in KERNELS if k.startswith(LONG)])


def gap_rows(out: str) -> list[list[list[str]]]:
    """The rows of the longest-gaps table, each the cells of its lines (a row's first line
    names its device; the lines under it, its evidence wrapped, leave the device blank)."""
    rows: list[list[list[str]]] = []
    for cells in table(out, "longest gaps"):
        if cells[0]:
            rows.append([cells])
        else:
            assert not any(cells[:-1]), cells  # only the evidence goes on
            rows[-1].append(cells)
    return rows


@pytest.mark.parametrize("path", [NAIVE, RESNET], ids=["naive", "resnet50"])
def test_evidence_wraps_and_is_whole_at_120_columns(path, monkeypatch):
    if not path.exists():
        pytest.skip(f"../shared/corpus is absent: no {path}")
    doc = json.loads(traceana(monkeypatch, None, "gaps", path, "--format", "json"))
    evidence = {re.sub(r"\s", "", g["evidence"] or "–") for g in doc["runs"][0]["device_gaps"]}
    out = traceana(monkeypatch, 120, "gaps", path)
    assert max(len(ln) for ln in out.splitlines()) <= 120
    header = out.split("longest gaps")[1].splitlines()[2]
    assert header.rstrip(" |").endswith("evidence"), header  # the column is kept
    rows = gap_rows(out)
    assert len(rows) == min(10, len(doc["runs"][0]["device_gaps"]))
    assert any(len(r) > 1 for r in rows)  # some evidence took more than one line
    for r in rows:
        text = "".join(cells[-1] for cells in r)
        assert ELLIPSIS not in text and re.sub(r"\s", "", text) in evidence, text
