"""A Kineto trace where most records are metadata, as in real MTIA traces (issue 19).

    .venv/bin/python bench/gen_metadata_heavy.py /tmp/mtia-like.json    # about 87 MB

The issue measured a real 87 MB MTIA trace (455,739 records, 68 % of them ``"ph": "M"``), which
is not on this machine. This stand-in has the same size and mix: the trace of
``gen_kineto.py 50`` (about 163,000 records in libkineto's layout) with ``process_name``,
``thread_name``, ``thread_sort_index`` and ``process_labels`` metadata records inserted
after the ``traceEvents`` array's opening, as libkineto writes them (one per line), until two
thirds of the records are metadata. Deterministic.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

META_SHARE = 0.68


def metadata(i: int) -> bytes:
    kind = ("process_name", "thread_name", "thread_sort_index", "process_labels")[i % 4]
    value = (
        f'"labels": "MTIA device {i % 64}"'
        if kind == "process_labels"
        else f'"sort_index": {i}'
        if kind == "thread_sort_index"
        else f'"name": "{"process" if kind == "process_name" else "thread"} {i} (mtia:{i % 64})"'
    )
    return (
        f'  {{\n    "name": "{kind}", "ph": "M", "ts": 0, "pid": {1000 + i % 977}, '
        f'"tid": {i},\n    "args": {{\n      {value}\n    }}\n  }},\n'
    ).encode()


def main() -> None:
    out = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.json"
        gen = Path(__file__).with_name("gen_kineto.py")
        subprocess.run([sys.executable, gen, "50", base], check=True, stdout=subprocess.DEVNULL)
        text = base.read_bytes()
    records = text.count(b'"ph":')
    extra = int(records * META_SHARE / (1 - META_SHARE))
    at = text.index(b"[", text.index(b'"traceEvents"')) + 1
    with open(out, "wb") as f:
        f.write(text[:at] + b"\n")
        for i in range(extra):
            f.write(metadata(i))
        f.write(text[at:].lstrip(b"\n"))
    total = records + extra
    print(f"{out}: {out.stat().st_size / 1e6:.1f} MB, {total:,} records, "
          f"{extra / total:.0%} metadata")


if __name__ == "__main__":
    main()
