"""Where a command's rendered output goes: standard output, or the one file ``-o`` names.

A renderer gives its output as pieces of UTF-8 bytes (``Renderer.pieces``); they are written
as they come, so that a large JSON document is never held whole, nor decoded to text to be
encoded again. What a failed write means to the user (a closed pipe, a full disk) is the
command's to say (``cli/messages.py``, ``cli/common.writing``); this module only writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from trace_analyzer.atomic import replace
from trace_analyzer.render.json import Piece


def to_stream(stream: IO[Any], pieces: Iterable[Piece]) -> None:
    """Write ``pieces`` to the text stream ``stream``: to its binary buffer where it has one
    (standard output: the bytes as they are, after what the stream holds), else as text,
    piece by piece (a stream that keeps a copy of what it is given, ``cli/answers.Heard``).
    Each piece ends between characters, so each decodes alone."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        for piece in pieces:
            stream.write(str(piece, "utf-8"))
        stream.flush()
        return
    stream.flush()
    for piece in pieces:
        buffer.write(piece)
    buffer.flush()


def to_file(path: Path, pieces: Iterable[Piece]) -> None:
    """Write ``pieces`` as the file ``path``, whole or not at all (``atomic.replace``: beside
    itself and renamed over, through a link to the file it names, with the mode it had; a
    reader, a full disk or a Ctrl-C mid-way sees the old file or the new one, never half a
    document)."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            _write_all(f, pieces)

    replace(path, write)


def _write_all(f: IO[bytes], pieces: Iterable[Piece]) -> None:
    for piece in pieces:
        f.write(piece)
