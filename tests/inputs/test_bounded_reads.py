"""Reads that --max-bytes and discovery bound (issue 18): what a small input may make traceana
read, hold or wait on.

Four ways around the cap, each built here from the formats' own specifications:

- a tar whose pax (or GNU long-name) header declares hundreds of MB: tarfile would read it
  whole into memory; it is refused before, naming the archive and the header's offset;
- a Parquet table of a few KB whose one string inflates to tens of MB (and one whose footer
  understates it): refused from the sizes its footer and page headers declare;
- a 2 GiB member that is not a trace beside one that is: never read, never counted against
  the cap in a plain tar;
- a FIFO and a link to /dev/zero named like traces: never opened (a reader would wait on
  the one, or read the other without end), each a warning; alone, one line.

Processes, files and memory are the subject, so the CLI runs as a real process (with a
timeout: the old behaviour was a hang) and its peak memory is measured with wait4.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import X, kineto, one_error, run_cli, run_process, write_parquet

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.archive import open_archive

NAIVE = Path(__file__).resolve().parents[2] / "fixtures" / "rmsnorm_naive"
MB = 1_000_000
TRACE = json.dumps(kineto([X("kernel", "k", 1.0, 2.0, pid=1, tid=7, device=0, stream=7)],
                          baseTimeNanoseconds=1_000_000_000)).encode()


def traceana(*args: object, timeout: float = 60) -> tuple[int, str, str, int]:
    """Run ``traceana ARGS`` as a process; return (exit code, stdout, stderr, peak RSS MiB)."""
    return run_process(*args, timeout=timeout)[:4]


one_line = one_error


def block(data: bytes) -> bytes:
    """``data`` padded to whole 512-byte tar blocks."""
    return data + b"\0" * (-len(data) % 512)


def header(name: str, size: int, kind: bytes) -> bytes:
    """One ustar header block (POSIX.1-1988): name, size and type; the checksum computed."""
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(tarfile.USTAR_FORMAT)


def member(name: str, data: bytes) -> bytes:
    return header(name, len(data), tarfile.REGTYPE) + block(data)


END = b"\0" * 1024  # two zero blocks end a tar


def pax_bomb(path: Path, value_bytes: int) -> int:
    """A .tar.gz whose first header is a pax header holding one record of ``value_bytes``
    (``comment=xxx…``), followed by a good trace member. The record is written as gzip
    members of 1 MiB each, compressed once: the file stays small (POSIX pax format:
    ``"%d %s=%s\\n"``, the length counting the whole record)."""
    body = value_bytes + len(" comment=\n")
    length = body + len(str(body))
    length += len(str(length)) - len(str(body))
    prefix = f"{length} comment=".encode()
    chunk = 2**20
    xs = value_bytes
    parts = [gzip.compress(header("././@PaxHeader", length, tarfile.XHDTYPE) + prefix)]
    one = gzip.compress(b"x" * chunk, 9)
    parts += [one] * (xs // chunk)
    tail = b"x" * (xs % chunk) + b"\n"
    tail += b"\0" * (-(len(prefix) + xs + 1) % 512)  # the header's content, to whole blocks
    parts.append(gzip.compress(tail + member("run/trace.json", TRACE) + END))
    path.write_bytes(b"".join(parts))
    return length  # the header's declared size


def test_a_pax_header_of_hundreds_of_mb_is_refused_before_it_is_read(tmp_path):
    bomb = tmp_path / "run.tar.gz"
    length = pax_bomb(bomb, 256 * 2**20)
    assert bomb.stat().st_size < 400_000  # the case: a few hundred KB on disk
    code, out, err, peak = traceana("info", bomb, "--no-cache")
    line = one_line(code, out, err)
    assert line == (f"traceana: error: {bomb}: the pax header at byte 0 of the tar stream "
                    f"holds {length:,} bytes, more than the 1,048,576 a header may hold: not "
                    "an archive a tar program wrote"), line
    assert peak < 200, f"{peak} MB"  # tarfile would hold the 256 MiB record, and more


def test_a_pax_header_past_what_is_left_of_the_cap_is_the_caps_error(tmp_path):
    bomb = tmp_path / "run.tar.gz"
    pax_bomb(bomb, 600_000)  # under the limit of a header, over 500K
    with tarfile.open(bomb) as t:  # the construction: a tar Python reads, a trace in it
        assert [(m.name, len(m.pax_headers["comment"])) for m in t] == [
            ("run/trace.json", 600_000)]
    code, out, err = run_cli("info", bomb, "--no-cache", "--max-bytes", "500K")
    line = one_line(code, out, err)
    assert "the pax header at byte 0 of the tar stream decompresses to more than 500,000 " \
           "bytes (--max-bytes" in line, line
    code, out, err = run_cli("info", bomb, "--no-cache", "--format", "json")
    assert code == 0, err  # the same header under the default cap: read, the trace found
    assert json.loads(out)["runs"][0]["sources"][0]["path"] == f"{bomb}!/run/trace.json"
    ok = tmp_path / "ok.tar.gz"  # the pax headers tar programs write read under a small cap
    with tarfile.open(ok, "w:gz", format=tarfile.PAX_FORMAT) as t:
        info = tarfile.TarInfo("run/tracé.json")  # a non-ASCII name: a pax header
        info.size = len(TRACE)
        info.pax_headers = {"comment": "c" * 10_000}
        t.addfile(info, io.BytesIO(TRACE))
    code, out, err = run_cli("info", ok, "--no-cache", "--format", "json", "--max-bytes", "100K")
    assert code == 0, err
    assert len(json.loads(out)["runs"][0]["sources"]) == 1


def test_a_gnu_long_name_header_past_the_limit_is_refused(tmp_path):
    arc = tmp_path / "long.tar"
    name = "run/" + "d" * (2 * 2**20) + ".json"  # a 2 MiB member name: a GNU long-name header
    with tarfile.open(arc, "w", format=tarfile.GNU_FORMAT) as t:
        info = tarfile.TarInfo(name)
        info.size = len(TRACE)
        t.addfile(info, io.BytesIO(TRACE))
    with pytest.raises(InputError, match=r"the GNU long-name header at byte 0 .* holds"):
        open_archive(arc)
    arc2 = tmp_path / "short.tar"  # a long name of a real tar program's size still reads
    with tarfile.open(arc2, "w", format=tarfile.PAX_FORMAT) as t:
        info = tarfile.TarInfo("run/" + "d" * 300 + "/trace.json")
        info.size = len(TRACE)
        t.addfile(info, io.BytesIO(TRACE))
    assert list(open_archive(arc2).files) == ["run/" + "d" * 300 + "/trace.json"]


def sparse_tar(path: Path, junk_bytes: int) -> Path:
    """A plain tar: run/checkpoint.bin of ``junk_bytes`` (a hole on disk), then a trace."""
    with open(path, "wb") as f:
        f.write(header("run/checkpoint.bin", junk_bytes, tarfile.REGTYPE))
        f.seek(junk_bytes + (-junk_bytes % 512), os.SEEK_CUR)  # the member's data: a hole
        f.write(member("run/trace.json", TRACE) + END)
    return path


def test_a_large_member_that_is_not_a_trace_is_never_read(tmp_path):
    arc = sparse_tar(tmp_path / "run.tar", 2 * 2**30)
    if os.stat(arc).st_blocks * 512 > 64 * MB:
        pytest.skip("this file system does not keep holes: the 2 GiB member would be written")
    code, out, err, peak = traceana("info", arc, "--no-cache", "--format", "json", timeout=120)
    assert code == 0, err
    assert json.loads(out)["runs"][0]["sources"][0]["path"] == f"{arc}!/run/trace.json"
    assert peak < 300, f"{peak} MB"  # reading the member would hold 2 GiB
    # nor does it count against the cap: only the trace's bytes are read from a plain tar
    code, out, err = run_cli("gaps", arc, "--no-cache", "--max-bytes", "1M")
    assert code == 0, err
    # a member not held is still read when asked for (batch --hash reads a NEFF)
    small = tmp_path / "neff.tar"
    small.write_bytes(member("run/trace.json", TRACE) + member("run/model.neff", b"NEFF" * 300)
                      + END)
    assert (open_archive(small).root / "run" / "model.neff").read_bytes() == b"NEFF" * 300
    # in a .tar.gz, passing a member inflates its bytes (never held): they count
    packed = tmp_path / "run.tar.gz"
    packed.write_bytes(gzip.compress(member("run/model.bin", b"\0" * 3 * MB)
                                     + member("run/trace.json", TRACE) + END))
    line = one_line(*run_cli("info", packed, "--no-cache", "--max-bytes", "1M"))
    assert line == (f"traceana: error: {packed}: the archive's members decompresses to more "
                    "than 1,000,000 bytes (--max-bytes; raise it if the input is genuine)")
    assert run_cli("info", packed, "--no-cache", "--max-bytes", "4M")[0] == 0


def explorer_rows(name: str) -> list[dict]:
    return [dict(id=1, name=name, start_ts=10**9, end_ts=10**9 + 500, trace_event_source="hw",
                 instance_id="i-1", process_id=42, nc_idx=0, pcore_idx=0)]


def test_a_parquet_table_whose_pages_inflate_past_the_cap_is_refused(tmp_path):
    table = write_parquet(tmp_path / "bomb" / "SystemProfileEvents.parquet",
                          explorer_rows("x" * (5 * MB)))
    assert table.stat().st_size < 10_000  # zstd: a thousandfold
    code, out, err = run_cli("info", table.parent, "--no-cache", "--max-bytes", "1M")
    assert one_line(code, out, err) == (
        f"traceana: error: {table}: the table decompresses to more than 1,000,000 bytes "
        "(--max-bytes; raise it if the input is genuine)")
    # the same table in an archive, under the archive's cap
    arc = tmp_path / "bomb.tar"
    arc.write_bytes(member("run/SystemProfileEvents.parquet", table.read_bytes()) + END)
    code, out, err = run_cli("info", arc, "--no-cache", "--max-bytes", "1M")
    assert "run/SystemProfileEvents.parquet: the table decompresses" in one_line(code, out, err)
    # a genuine export is read under the same cap; the bomb under the default cap
    genuine = NAIVE / "explorer" / "parquet"
    assert run_cli("info", genuine, "--no-cache", "--max-bytes", "1M")[0] == 0
    code, out, err = run_cli("info", table.parent, "--no-cache", "--format", "json")
    assert code == 0, err


def test_an_explorer_metadata_table_that_inflates_past_the_cap_is_refused(tmp_path):
    """The Metadata table beside a genuine export, its schema version a 5 MB string: read
    whole by polars before (exit 0 under --max-bytes 1M), refused like the events table."""
    export = tmp_path / "export"
    shutil.copytree(NAIVE / "explorer" / "parquet", export)
    meta = export / "Metadata.parquet"
    pl.DataFrame({"profile_schema_version": ["7." + "0" * (5 * MB)], "ntff_version": [5]}
                 ).write_parquet(meta)
    assert meta.stat().st_size < 10_000
    code, out, err = run_cli("info", export, "--no-cache", "--max-bytes", "1M")
    assert one_line(code, out, err) == (
        f"traceana: error: {meta}: the table decompresses to more than 1,000,000 bytes "
        "(--max-bytes; raise it if the input is genuine)")


def zigzag_varint(n: int, width: int | None = None) -> bytes:
    """Thrift compact encoding of an i64 (zigzag, then base-128 varint), padded to ``width``
    bytes with continuation bits when asked (a longer encoding of the same number)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        out.append(z & 0x7F)
        z >>= 7
        if not z and (width is None or len(out) >= width):
            break
    for i in range(len(out) - 1):
        out[i] |= 0x80
    return bytes(out)


def test_a_footer_that_understates_its_pages_is_caught_by_the_page_headers(tmp_path):
    good = write_parquet(tmp_path / "t.parquet", explorer_rows("x" * (5 * MB)))
    meta = pq.ParquetFile(good).metadata.row_group(0)
    name = next(meta.column(i) for i in range(meta.num_columns)
                if meta.column(i).path_in_schema == "name")
    data = good.read_bytes()
    end = len(data) - 8
    start = end - int.from_bytes(data[end : end + 4], "little")
    old = zigzag_varint(name.total_uncompressed_size)
    assert data.count(old, start, end) == 1
    at = data.index(old, start, end)
    data = data[:at] + zigzag_varint(100, len(old)) + data[at + len(old):]
    lie = tmp_path / "lie" / "SystemProfileEvents.parquet"
    lie.parent.mkdir()
    lie.write_bytes(data)
    lied = pq.ParquetFile(lie).metadata.row_group(0)
    assert sum(lied.column(i).total_uncompressed_size for i in range(lied.num_columns)) < 2_000
    code, out, err = run_cli("info", lie.parent, "--no-cache", "--max-bytes", "1M")
    assert "the table decompresses to more than 1,000,000 bytes" in one_line(code, out, err)


def test_a_fifo_and_a_link_to_a_device_are_skipped_with_a_warning(tmp_path):
    top = tmp_path / "top"
    (top / "a").mkdir(parents=True)
    (top / "a" / "trace.json").write_bytes(TRACE)
    os.mkfifo(top / "a" / "rank1.json")  # a reader would wait on it for ever
    (top / "b").mkdir()
    (top / "b" / "trace.json").symlink_to("/dev/zero")  # and read this without end
    code, out, err, peak = traceana("gaps", top, "--no-cache", "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert [r["root"] for r in runs] == [str(top / "a")]
    assert runs[0]["warnings"] == [
        f"{top / 'a' / 'rank1.json'}: a named pipe (FIFO), not a regular file: not read",
        f"{top / 'b' / 'trace.json'}: a link to a character device (/dev/zero), not a regular "
        "file: not read",
    ]
    assert runs[0]["summary"]["executions"] == 1  # the good trace, analysed


def test_a_fifo_added_after_the_run_was_cached_is_said(tmp_path):
    """The run was analysed, and cached, before a FIFO appeared beside its trace: the cache
    answered with the warnings of the first read, so the FIFO was said only once the trace
    itself changed."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.json").write_bytes(TRACE)
    def warnings() -> list[str]:
        code, out, err = run_cli("gaps", run, "--format", "json")  # through the cache
        assert code == 0, err
        return json.loads(out)["runs"][0]["warnings"]

    assert warnings() == []
    os.mkfifo(run / "rank1.json")
    said = f"{run / 'rank1.json'}: a named pipe (FIFO), not a regular file: not read"
    assert warnings() == [said]
    assert warnings() == [said]  # cached again, with it
    (run / "rank1.json").unlink()
    assert warnings() == []


def test_a_fifo_or_device_alone_is_one_line(tmp_path):
    os.mkfifo(tmp_path / "trace.json")
    line = one_line(*traceana("info", tmp_path, "--no-cache")[:3])
    assert line == (f"traceana: error: {tmp_path}: no profile found (no trace JSON, Explorer "
                    "export or Neuron capture); trace.json: a named pipe (FIFO), not a regular "
                    "file: not read")
    assert one_line(*traceana("gaps", tmp_path / "trace.json", "--no-cache")[:3]) == (
        f"traceana: error: {tmp_path / 'trace.json'}: a named pipe (FIFO), not a regular file: "
        "traceana reads files")
    zero = tmp_path / "zero" / "trace.json"
    zero.parent.mkdir()
    zero.symlink_to("/dev/zero")
    assert "a link to a character device (/dev/zero)" in one_line(
        *traceana("info", zero, "--no-cache")[:3])
    # in process too (the library's discover): the same refusal, no read attempted
    code, out, err = run_cli("info", str(zero.parent), "--no-cache")
    assert code == 2 and "no profile found" in err and "/dev/zero" in err


