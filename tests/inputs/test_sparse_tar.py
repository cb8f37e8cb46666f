"""GNU sparse members in a tar: their maps are bounded before tarfile builds them.

A sparse member's map lists where its data regions lie in the file. Python's tarfile builds
it into a list of (offset, size) tuples as it finds it, for every member: a few hundred KB of
.tar.gz can declare millions of entries (gigabytes of tuples, minutes of parsing). Each form
is built here by hand from GNU tar's own description of it (the GNU tar manual, "Sparse
Formats"; tarfile cannot write sparse members), and run through the CLI as a real process
whose peak memory (its own VmHWM) and wall time are bounded:

- old GNU (type 'S'): 4 entries in the header, then 512-byte extension blocks of 21 entries
  while the last byte of each says another follows;
- pax GNU sparse 1.0: a count, then that many pairs of numbers, one a line, at the start of
  the member's data;
- pax GNU sparse 0.1 (GNU.sparse.map in a pax header): bounded by the pax header's 1 MiB, but
  a global header's map is copied into every later member's header by tarfile, and each
  map's entries take about 30 times its bytes in memory: they count against --max-bytes.

Sparse members that tar programs write (GNU tar --sparse, in its four formats, and the same
forms built by hand) still read, and the bytes of a member with holes come back in place.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import X, kineto, one_error, run_process

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import open_archive

TRACE = json.dumps(kineto([X("kernel", "k", 1.0, 2.0, pid=1, tid=7, device=0, stream=7)],
                          baseTimeNanoseconds=1_000_000_000)).encode()
END = b"\0" * 1024  # two zero blocks end a tar
MiB = 2**20
LIMIT = "more than the 1,048,576 a map may hold"


traceana = run_process  # (exit code, stdout, stderr, peak MiB, wall s)
one_line = one_error


def found(code: int, out: str, err: str, *_: object) -> list[str]:
    """The sources `info --format json` found, after checking it succeeded."""
    assert code == 0, err
    return [s["path"] for r in json.loads(out)["runs"] for s in r["sources"]]


# the blocks of a tar (POSIX ustar, GNU, pax), built as tar programs write them
def block(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 512)


def header(name: str, size: int, kind: bytes = tarfile.REGTYPE,
           fmt: int = tarfile.USTAR_FORMAT) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(fmt)


def member(name: str, data: bytes) -> bytes:
    return header(name, len(data)) + block(data)


def number(n: int) -> bytes:
    return b"%011o\0" % n  # a 12-byte octal field of a GNU header


def old_gnu_header(name: str, entries: list[tuple[int, int]], stored: int, realsize: int,
                   extended: bool) -> bytes:
    """A GNU header of type 'S': its first 4 entries at byte 386, the flag that extension
    blocks follow at 482, the file's real size at 483; the checksum recomputed."""
    buf = bytearray(header(name, stored, fmt=tarfile.GNU_FORMAT))
    buf[156:157] = tarfile.GNUTYPE_SPARSE
    for i, (offset, size) in enumerate(entries[:4]):
        buf[386 + 24 * i: 410 + 24 * i] = number(offset) + number(size)
    buf[482] = extended
    buf[483:495] = number(realsize)
    buf[148:156] = b" " * 8
    buf[148:156] = b"%06o\0 " % sum(buf)
    return bytes(buf)


def extension(entries: list[tuple[int, int]], more: bool) -> bytes:
    """An extension block: up to 21 entries of 24 bytes, then at 504 the flag for another."""
    buf = bytearray(512)
    for i, (offset, size) in enumerate(entries[:21]):
        buf[24 * i: 24 * i + 24] = number(offset) + number(size)
    buf[504] = more
    return bytes(buf)


def pax(records: dict[str, object], kind: bytes = tarfile.XHDTYPE) -> bytes:
    """A pax header: records "%d %s=%s\\n", the length counting the whole record."""
    body = b""
    for key, value in records.items():
        rest = f" {key}={value}\n".encode()
        n = len(rest) + len(str(len(rest)))
        n += len(str(n)) - len(str(len(rest)))
        body += str(n).encode() + rest
    return header("././@PaxHeader", len(body), kind) + block(body)


def old_gnu_bomb(path: Path, blocks: int, name: str) -> None:
    """A .tar.gz: ``name`` as an old GNU sparse member whose map runs on for ``blocks``
    extension blocks of 21 entries each, then run/trace.json. The blocks are compressed as
    pieces of 1 MiB, compressed once: the file stays small."""
    entries = [(512 * (i + 1), 1) for i in range(21)]
    piece = 2048
    parts = [gzip.compress(old_gnu_header(name, entries, 512, MiB, True))]
    parts += [gzip.compress(extension(entries, True) * piece)] * ((blocks - 1) // piece)
    parts.append(gzip.compress(extension(entries, True) * ((blocks - 1) % piece)
                               + extension(entries, False) + b"d" * 512
                               + member("run/trace.json", TRACE) + END))
    path.write_bytes(b"".join(parts))


def v10_bomb(path: Path, entries: int, name: str) -> None:
    """A .tar.gz: ``name`` as a pax GNU sparse 1.0 member whose map declares ``entries``
    entries of (1, 1), all present, then run/trace.json."""
    count = f"{entries}\n".encode()
    length = len(count) + 4 * entries
    stored = length + (-length % 512) + 512
    records = {"GNU.sparse.major": 1, "GNU.sparse.minor": 0, "GNU.sparse.name": name,
               "GNU.sparse.realsize": MiB}
    piece = 2**18  # entries: 1 MiB
    parts = [gzip.compress(pax(records) + header("run/GNUSparseFile.0/x", stored) + count)]
    parts += [gzip.compress(b"1\n1\n" * piece)] * (entries // piece)
    parts.append(gzip.compress(b"1\n1\n" * (entries % piece) + b"\0" * (-length % 512)
                               + b"d" * 512 + member("run/trace.json", TRACE) + END))
    path.write_bytes(b"".join(parts))


def map_01(numbers: int) -> str:
    return ",".join(["1"] * numbers)  # GNU.sparse.map: offset,size,offset,size,...


def test_an_old_gnu_map_of_200000_blocks_is_refused_without_being_built(tmp_path):
    arc = tmp_path / "run.tar.gz"
    old_gnu_bomb(arc, 200_000, "run/trace.json")  # 4.2 million entries in 100 MiB of blocks
    assert arc.stat().st_size < 1_000_000
    code, out, err, peak, wall = traceana("info", arc, "--no-cache")
    assert one_line(code, out, err) == (
        f"traceana: error: {arc}: the GNU sparse map of run/trace.json at byte 0 of the tar "
        f"stream holds {200_000 * 512:,} bytes, {LIMIT}")
    assert peak < 200, f"{peak} MiB"  # tarfile's list would take about 500 MiB
    assert wall < 10, f"{wall:.1f} s"  # and 15 s to build


def test_an_old_gnu_map_too_large_on_a_member_not_read_is_passed_and_counted(tmp_path):
    arc = tmp_path / "run.tar.gz"
    old_gnu_bomb(arc, 200_000, "run/checkpoint.bin")
    result = traceana("info", arc, "--no-cache", "--format", "json")
    assert found(*result) == [f"{arc}!/run/trace.json"]  # the trace beside it is analysed
    assert result[3] < 200, f"{result[3]} MiB"
    with pytest.raises(InputError, match=r"run/checkpoint.bin at byte 0 .* holds 102,400,000"):
        open_archive(arc).read("run/checkpoint.bin")  # never read as the zeros of a hole
    # the map's blocks are inflated to pass them: they count, and stop at the cap
    line = one_line(*traceana("info", arc, "--no-cache", "--max-bytes", "10M"))
    assert line == (f"traceana: error: {arc}: the GNU sparse map at byte 0 of the tar stream "
                    "decompresses to more than 10,000,000 bytes (--max-bytes; raise it if the "
                    "input is genuine)")


def test_a_sparse_10_map_declaring_a_hundred_million_entries_is_refused_on_its_count(tmp_path):
    arc = tmp_path / "run.tar.gz"
    v10_bomb(arc, 10**8, "run/trace.json")  # 400 MB of map: tarfile would read it all
    assert arc.stat().st_size < 1_000_000
    code, out, err, peak, wall = traceana("info", arc, "--no-cache", timeout=30)
    assert one_line(code, out, err) == (
        f"traceana: error: {arc}: the GNU sparse map of run/trace.json at byte 0 of the tar "
        f"stream declares 100,000,000 entries, at least 400,000,000 bytes, {LIMIT}")
    assert peak < 200, f"{peak} MiB"
    assert wall < 10, f"{wall:.1f} s"
    skip = tmp_path / "skip.tar.gz"  # on a member that is not read: skipped, the trace read
    v10_bomb(skip, 10**6, "run/checkpoint.bin")
    assert found(*traceana("info", skip, "--no-cache", "--format", "json")) == [
        f"{skip}!/run/trace.json"]
    with pytest.raises(InputError, match="run/checkpoint.bin at byte 0 .* declares 1,000,000"):
        open_archive(skip).read("run/checkpoint.bin")


def test_a_sparse_map_in_a_pax_global_header_is_refused(tmp_path):
    """tarfile copies a global GNU.sparse.map into each member that has a pax header of its
    own: one map of 250,000 entries, 60 times, from a 4 KB file."""
    arc = tmp_path / "run.tar.gz"
    data = pax({"GNU.sparse.map": map_01(500_000)}, tarfile.XGLTYPE)
    for i in range(60):
        data += pax({"comment": "c"}) + header(f"run/f{i}.bin", 0)
    arc.write_bytes(gzip.compress(data + member("run/trace.json", TRACE) + END))
    code, out, err, peak, _ = traceana("info", arc, "--no-cache")
    assert one_line(code, out, err) == (
        f"traceana: error: {arc}: the pax global header at byte 0 of the tar stream holds GNU "
        "sparse keywords: tar programs write them in one member's header")
    assert peak < 200, f"{peak} MiB"  # 60 maps of 250,000 tuples: about 1 GiB


def test_each_entry_of_a_pax_sparse_map_counts_against_the_cap(tmp_path):
    """A member's own 0.1 map of 1,000,000 bytes (250,000 entries) passes the header limit;
    its entries count 128 bytes each (32 MB), so the second such member passes 40M."""
    one = pax({"GNU.sparse.size": MiB, "GNU.sparse.map": map_01(500_000)}) \
        + header("run/f.bin", 0)
    arc = tmp_path / "run.tar.gz"
    arc.write_bytes(gzip.compress(one * 20 + member("run/trace.json", TRACE) + END))
    line = one_line(*traceana("info", arc, "--no-cache", "--max-bytes", "40M"))
    assert line == (f"traceana: error: {arc}: the GNU sparse map at byte {len(one):,} of the "
                    "tar stream decompresses to more than 40,000,000 bytes (--max-bytes; "
                    "raise it if the input is genuine)")
    assert found(*traceana("info", arc, "--no-cache", "--format", "json", "--max-bytes", "1G"))


# Sparse members a tar program writes: a 64 MiB checkpoint.bin with 30 regions of data
REGIONS = [(i * 2 * MiB + 4096, bytes([65 + i]) * 512) for i in range(30)]
APPARENT = 64 * MiB


def by_hand(path: Path, form: str) -> None:
    """run/checkpoint.bin with REGIONS as old GNU (two extension blocks) or pax 1.0."""
    entries = [(offset, len(data)) for offset, data in REGIONS]
    data = b"".join(d for _, d in REGIONS)
    if form == "old-gnu":
        out = old_gnu_header("run/checkpoint.bin", entries, len(data), APPARENT, True)
        out += extension(entries[4:25], True) + extension(entries[25:], False)
    else:
        text = "".join(f"{n}\n" for e in [(len(entries), )] + entries for n in e).encode()
        out = pax({"GNU.sparse.major": 1, "GNU.sparse.minor": 0,
                   "GNU.sparse.name": "run/checkpoint.bin", "GNU.sparse.realsize": APPARENT})
        out += header("run/GNUSparseFile.0/checkpoint.bin", len(block(text)) + len(data))
        out += block(text)
    path.write_bytes(gzip.compress(out + block(data) + member("run/trace.json", TRACE) + END))


def gnu_tar(path: Path, tmp: Path, form: str) -> None:
    """The same files written by GNU tar --sparse (``form``: gnu, or posix 0.0, 0.1, 1.0)."""
    run = tmp / "src" / "run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "trace.json").write_bytes(TRACE)
    with open(run / "checkpoint.bin", "wb") as f:
        f.truncate(APPARENT)
        for offset, data in REGIONS:
            f.seek(offset)
            f.write(data)
    fmt = ["--format=gnu"] if form == "gnu" else ["--format=posix", f"--sparse-version={form}"]
    subprocess.run(["tar", "--sparse", *fmt, "-czf", str(path), "-C", str(tmp / "src"),
                    "run/checkpoint.bin", "run/trace.json"], check=True)


def has_gnu_tar() -> bool:
    if shutil.which("tar") is None:
        return False
    out = subprocess.run(["tar", "--version"], capture_output=True, text=True).stdout
    return "GNU tar" in out


FORMS = ["old-gnu", "1.0"] + [
    pytest.param(f, marks=pytest.mark.skipif(not has_gnu_tar(), reason="no GNU tar here"))
    for f in ("gnu", "0.0", "0.1", "1.0-gnu-tar")]


@pytest.mark.parametrize("form", FORMS)
def test_a_sparse_member_a_tar_program_writes_still_reads(tmp_path, form):
    arc = tmp_path / "run.tar.gz"
    if form in ("old-gnu", "1.0"):
        by_hand(arc, form)
    else:
        gnu_tar(arc, tmp_path, form.removesuffix("-gnu-tar"))
    with tarfile.open(arc) as t:  # the construction: a sparse member, as tarfile reads it
        sparse = [m for m in t if m.issparse()]
        assert [(m.name, m.size, len(m.sparse)) for m in sparse][0][:2] == (
            "run/checkpoint.bin", APPARENT)
    # its data, not its holes, counts against the cap: 15 KB of 64 MiB
    assert found(*traceana("info", arc, "--no-cache", "--format", "json",
                           "--max-bytes", "1M")) == [f"{arc}!/run/trace.json"]
    data = open_archive(arc).read("run/checkpoint.bin")  # each region where it belongs
    assert len(data) == APPARENT
    assert all(data[o: o + len(d)] == d for o, d in REGIONS)
    assert data.count(0) == APPARENT - sum(len(d) for _, d in REGIONS)
