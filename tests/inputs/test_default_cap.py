"""The default cap on what a compressed input inflates to follows the memory traceana may use
(issue 37): an eighth of it, at most 16 GiB, so that reading one input (3.6x what it inflates
to, measured: docs/reliability.md) stays under about half of it. Before, a fixed 16 GiB let a
5.8 MB .json.gz grow past a 6 GB limit. As real processes: one whose address space is capped
gets the cap that limit gives, worked out here from the limit itself."""

from __future__ import annotations

import resource
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from trace_analyzer.inputs import limits

ENTRY = "import sys; from trace_analyzer.cli import main; sys.argv[0] = 'traceana'; main()"


def _padded_gz(path: Path, inflated: int) -> None:
    """A Kineto trace of whitespace inflating to ``inflated`` bytes, compressed to a few KB."""
    path.parent.mkdir(parents=True)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    block = b" " * (1 << 20)
    with open(path, "wb") as f:
        f.write(z.compress(b'{"traceEvents": ['))
        for _ in range(inflated >> 20):
            f.write(z.compress(block))
        f.write(z.compress(b"]}") + z.flush())


def _traceana(args: list[object], address_space: int) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], capture_output=True,
                          text=True, timeout=120, preexec_fn=cap)  # fmt: skip


def test_a_process_with_less_memory_gets_a_smaller_default_cap(tmp_path):
    space = 4 * 2**30
    want = space // 8  # an eighth of what the process may use
    trace = tmp_path / "run" / "trace.json.gz"
    _padded_gz(trace, want + (64 << 20))
    assert trace.stat().st_size < 2 << 20
    done = _traceana(["gaps", trace.parent, "--no-cache"], space)
    assert done.returncode == 2, done.stderr
    assert f"decompresses to more than {want:,} bytes (--max-bytes" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    # the refusal is the cap's: with a larger one the same file reads (a trace of no events)
    done = _traceana(["info", trace.parent, "--no-cache", "--max-bytes", "1G"], space)
    assert "decompresses" not in done.stderr, done.stderr


def test_the_default_is_an_eighth_of_the_memory_at_most_16_gib():
    total = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text()
                 .splitlines() if line.startswith("MemTotal:"))  # fmt: skip
    assert limits.default_max_bytes() <= min(16 * 2**30, total // 8)
    assert limits.default_max_bytes() >= min(256 * 2**20, total // 8)
    assert limits.effective(None) == limits.default_max_bytes()
