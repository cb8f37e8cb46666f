"""How a name is cut to a width (render/cut.py, docs/output.md "The terminal width"): never
longer than the width, its pieces its own text in order, and names of one column that differ
still differ when cut, wherever they differ (start, middle, end), while the width leaves room
to show it. The expected names are built here; the check of each cut is the test's own."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_analyzer.render.blocks import Table, draw, num_col, text_col
from trace_analyzer.render.cut import ELLIPSIS, END, MIDDLE, START, cut, cut_apart
from trace_analyzer.render.safe import TABLE, plain


def stands_for(shown: str, name: str) -> bool:
    """Whether ``shown`` is ``name`` cut: its pieces between ellipses in order in it, the
    first its start and the last its end."""
    if ELLIPSIS not in shown:
        return shown == name
    first, *middle, last = shown.split(ELLIPSIS)
    if not (name.startswith(first) and name.endswith(last)):
        return False
    at = len(first)
    for piece in middle:
        at = name.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return at <= len(name) - len(last)


def test_a_name_is_cut_in_its_middle_its_start_or_its_end():
    name = "void at::native::elementwise_kernel<128, 4>(int, float)"
    assert cut(name, 21) == "void at::n…nt, float)"  # 10 and 10 characters
    assert cut(name, 22) == "void at::na…nt, float)"  # the start one longer
    assert cut(name, 21, START) == "…<128, 4>(int, float)"
    assert cut(name, 21, END) == "void at::native::ele…"
    assert cut(name, len(name)) == name and cut(name, 1) == "…" and cut(name, 0) == ""


FAMILY = [  # real kernels: alike at both ends, apart in the middle
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::"
    f"{f}<float> >(at::TensorIteratorBase&, at::native::{f}<float> const&)::{{lambda(int)#1}}>"
    "(int, at::native::gpu_kernel_impl<at::native::" + f + "<float> >(at::TensorIteratorBase&,"
    " at::native::" + f + "<float> const&)::{lambda(int)#1})"
    for f in ("AddFunctor", "MulFunctor", "DivFunctor", "SubFunctor", "CUDAFunctor_add")
]


@pytest.mark.parametrize("most", [12, 16, 20, 24, 40, 80])
def test_names_alike_at_both_ends_stay_apart(most):
    shown = cut_apart(FAMILY, most)
    assert len(set(shown.values())) == len(FAMILY), shown
    for name, s in shown.items():
        assert len(s) <= most and stands_for(s, name), (name, s)
    assert len({cut(n, most) for n in FAMILY}) < len(FAMILY)  # cut alone, some read the same


@settings(max_examples=200, deadline=None)
@given(
    stem=st.text(string.ascii_letters + ":<>_ ", min_size=30, max_size=120),
    tails=st.lists(st.text(string.digits, min_size=1, max_size=6), min_size=2,
                   max_size=6, unique=True),
    rest=st.text(string.ascii_letters + ",)", min_size=0, max_size=60),
    most=st.integers(min_value=12, max_value=60),
    at=st.sampled_from([MIDDLE, START]),
)  # fmt: skip
def test_names_that_differ_anywhere_stay_apart(stem, tails, rest, most, at):
    # names alike but for a few digits (letters elsewhere: two names differing only in how
    # many times a letter repeats could not be told apart by any cut), which sit at the
    # start, in the middle or at the end
    names = [f"{t}{stem}{rest}" for t in tails] + [f"{stem}{t}{rest}" for t in tails]
    names += [f"{stem}{rest}{t}" for t in tails]
    names = list(dict.fromkeys(names))
    shown = cut_apart(names, most, at)
    for name, s in shown.items():
        assert len(s) <= most and stands_for(s, name), (name, s)
    assert len(set(shown.values())) == len(names), shown


def test_a_table_keeps_a_column_of_names_apart_and_its_lines_aligned():
    rows = [[n, "1 ms"] for n in FAMILY]
    lines = draw([Table(None, (text_col("kernel", cut=20), num_col("time")), rows)], TABLE,
                 width=40)  # fmt: skip
    assert all(len(ln) == len(lines[1]) <= 40 for ln in lines[1:]), lines
    assert len({ln.split("|")[1] for ln in lines[3:]}) == len(FAMILY)


def test_a_wrapping_column_loses_nothing_and_a_cut_name_stays_inert():
    evidence = "next launched 1.12 s after the lane went idle (host: 4.12 µs in framework ops)"
    name = "aten::clear" + "x" * 40 + "\x1b[2J\u202e"
    table = Table(None, (text_col("op", cut=8), text_col("evidence", cut=16, wrap=True)),
                  [[name, evidence], ["aten::add", "–"]])  # fmt: skip
    lines = draw([table], TABLE, width=40)
    assert all(len(ln) == len(lines[1]) <= 40 for ln in lines[1:]), lines
    cells = [ln.split("|")[2].strip() for ln in lines[3:]]
    assert len(cells) > 2 and " ".join(cells[:-1]) == evidence  # every word, in order
    assert any("1.12 s" in c for c in cells)  # a number keeps its unit
    text = "\n".join(lines)
    assert "\x1b" not in text and "\u202e" not in text
    assert stands_for(lines[3].split("|")[1].strip(), plain(name))
