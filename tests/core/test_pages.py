"""model/pages.py: the buffers the compiled replay writes into are zeroed, writable, the size
asked for, and outlive the mapping's name while a view of them lives; where mapping fails,
a bytearray gives the same."""

from __future__ import annotations

import mmap

import pytest

from trace_analyzer.model import pages


@pytest.mark.parametrize("nbytes", [0, 8, pages.SMALL - 8, pages.SMALL, 3 * pages.SMALL + 8])
def test_a_buffer_is_zeroed_writable_and_the_size_asked_for(nbytes):
    buf = pages.zeroed(nbytes)
    assert buf.nbytes == nbytes and not buf.readonly
    assert not any(buf)
    if nbytes >= 16:
        view = buf.cast("q")
        view[0], view[-1] = 7, -7
        assert view[0] == 7 and view[len(view) - 1] == -7


def test_a_view_keeps_the_mapping_alive():
    view = pages.zeroed(2 * pages.SMALL)[8:24].cast("q")
    view[1] = 42
    import gc

    gc.collect()
    assert list(view) == [0, 42]


def test_where_mapping_fails_a_bytearray_does(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no memory to map")

    monkeypatch.setattr(mmap, "mmap", refuse)
    buf = pages.zeroed(2 * pages.SMALL)
    assert buf.nbytes == 2 * pages.SMALL and isinstance(buf.obj, bytearray)
