"""--max-bytes: a compressed input that inflates past the cap is one clear error, not a hang.

The bombs here are small files (a few KB) that inflate to 5 MB, tried with a 1 MB cap; the
same files pass under the default cap (an eighth of the memory, at most 16 GiB), so the error is the cap's, not the input's.
The CLI takes the cap from ``--max-bytes`` or ``TRACEANA_MAX_BYTES``; the library takes it as
the ``max_bytes`` argument only, and an archive's members carry the cap it was opened with
(into another process too: they pickle with it).
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
import tarfile
import zipfile

import pytest
from conftest import run_cli

from trace_analyzer.errors import InputError
from trace_analyzer.inputs import archive
from trace_analyzer.inputs.archive import MemberPath, open_archive
from trace_analyzer.inputs.discover import Source, discover
from trace_analyzer.inputs.limits import default_max_bytes
from trace_analyzer.readers import kineto, read_source
from trace_analyzer.readers.common import load_json

INFLATED = 5_000_000
CAP = "1M"
CAP_BYTES = 1_000_000


def kineto_bomb() -> bytes:
    """A valid Kineto trace padded with 5 MB of blanks: it compresses to a few KB."""
    doc = {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mul",
                "pid": 1,
                "tid": 1,
                "ts": 1.0,
                "dur": 2.0,
            }
        ],
        "baseTimeNanoseconds": 1_000_000_000,
    }
    text = json.dumps(doc).encode()
    return text[:-1] + b" " * INFLATED + b"}"


def one_line_error(err: str, *where: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traceana: error: "), err
    assert "decompresses to more than 1,000,000 bytes" in lines[0] and "--max-bytes" in lines[0]
    for w in where:
        assert w in lines[0]


@pytest.fixture
def bombs(tmp_path):
    data = kineto_bomb()
    out = {}
    out["gz"] = tmp_path / "trace.json.gz"
    out["gz"].write_bytes(gzip.compress(data, 9))
    # not Kineto: the exact path's gzip reading is capped too
    out["gz_other"] = tmp_path / "other.json.gz"
    out["gz_other"].write_bytes(gzip.compress(b'{"trace_events": []' + b" " * INFLATED + b"}", 9))
    tar = tmp_path / "run.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        info = tarfile.TarInfo("run/trace.json")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    out["tar"] = tar
    zp = tmp_path / "run.zip"
    with zipfile.ZipFile(zp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("run/trace.json", data)
    out["zip"] = zp
    for p in out.values():
        assert p.stat().st_size < 100_000  # small on disk
    return out


@pytest.mark.parametrize("kind", ["gz", "gz_other", "tar", "zip"])
def test_an_input_inflating_past_the_cap_is_one_clear_error(bombs, kind):
    path = bombs[kind]
    for cmd in ("info", "gaps"):
        code, out, err = run_cli(cmd, path, "--max-bytes", CAP, "--no-cache")
        assert code == 2, (cmd, out, err)
        one_line_error(err, str(path))


@pytest.mark.parametrize("kind", ["gz", "tar", "zip"])
def test_the_same_inputs_pass_under_the_default_cap(bombs, kind):
    code, out, err = run_cli("info", bombs[kind], "--format", "json", "--no-cache")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert any(s["events"] == 1 for s in run["sources"])


def test_the_cap_comes_from_the_environment_too(bombs, monkeypatch):
    monkeypatch.setenv("TRACEANA_MAX_BYTES", CAP)
    code, _, err = run_cli("info", bombs["gz"], "--no-cache")
    assert code == 2
    one_line_error(err, str(bombs["gz"]))


def test_the_option_does_not_outlive_its_command(bombs):
    assert run_cli("info", bombs["gz"], "--max-bytes", CAP, "--no-cache")[0] == 2
    assert run_cli("info", bombs["gz"], "--no-cache")[0] == 0


@pytest.mark.parametrize("bad", ["lots", "-5", "0", "3 parsecs"])
def test_a_bad_size_is_a_usage_error(bombs, bad):
    code, _, err = run_cli("info", bombs["gz"], "--max-bytes", bad)
    assert code == 2 and "not a size" in err and len(err.strip().splitlines()) == 1


# --- the library: max_bytes is an argument ------------------------------------------------


def library_error(e: pytest.ExceptionInfo[InputError], path: object) -> None:
    """The library's words name the parameter; the CLI's the flag."""
    err = e.value
    assert err.param == "max_bytes"
    assert f"decompresses to more than {CAP_BYTES:,} bytes (max_bytes; raise it" in str(err)
    assert str(err).startswith(str(path))
    assert "(--max-bytes; " in err.worded({"max_bytes": "--max-bytes"})


def read_all(path: object, **cap: int) -> list[object]:
    """Discover ``path`` and read every source, passing ``cap`` to both."""
    return [read_source(s, **cap) for run in discover(path, **cap) for s in run.sources]


@pytest.mark.parametrize("kind", ["gz", "gz_other"])
def test_read_source_takes_the_cap(bombs, kind):
    src = Source(path=bombs[kind], kind="json", named=True)
    with pytest.raises(InputError) as e:
        read_source(src, max_bytes=CAP_BYTES)
    library_error(e, bombs[kind])
    assert read_source(src, max_bytes=2 * INFLATED) is not None


def test_each_reader_takes_the_cap(bombs):
    src = Source(path=bombs["gz"], kind="json", named=True)
    with pytest.raises(InputError) as e:
        kineto.read_fast(src, max_bytes=CAP_BYTES)  # the streaming path
    library_error(e, bombs["gz"])
    with pytest.raises(InputError) as e:
        load_json(bombs["gz"], max_bytes=CAP_BYTES)  # the exact path's parse
    library_error(e, bombs["gz"])
    assert kineto.read_fast(src) is not None  # None: the default cap


def test_an_archive_is_capped_where_it_is_opened(bombs):
    with pytest.raises(InputError) as e:  # tar members are read when the tar is opened
        discover(bombs["tar"], max_bytes=CAP_BYTES)
    library_error(e, bombs["tar"])
    with pytest.raises(InputError) as e:
        open_archive(bombs["tar"], max_bytes=CAP_BYTES)
    library_error(e, bombs["tar"])
    # zip members are read when asked for: under the cap the archive was opened with
    (run,) = discover(bombs["zip"], max_bytes=CAP_BYTES)
    (src,) = run.sources
    assert isinstance(src.path, MemberPath) and src.path.max_bytes == CAP_BYTES
    with pytest.raises(InputError) as e:
        read_source(src)
    library_error(e, f"{bombs['zip']}!/run/trace.json")


@pytest.mark.parametrize("kind", ["gz", "tar", "zip"])
def test_the_library_reads_no_environment(bombs, kind, monkeypatch):
    monkeypatch.setenv("TRACEANA_MAX_BYTES", CAP)
    (result,) = read_all(bombs[kind])
    assert result is not None and result.count == 1
    with pytest.raises(InputError):
        read_all(bombs[kind], max_bytes=CAP_BYTES)


def test_a_member_pickles_with_its_cap(bombs):
    (run,) = discover(bombs["zip"], max_bytes=CAP_BYTES)
    member = run.sources[0].path
    archive._cached.cache_clear()  # as in a fresh worker process: the archive is reopened
    again = pickle.loads(pickle.dumps(member))
    assert again == member and again.max_bytes == CAP_BYTES
    with pytest.raises(InputError) as e:
        read_source(Source(path=again, kind="json"))
    library_error(e, f"{bombs['zip']}!/run/trace.json")
    assert pickle.loads(pickle.dumps(open_archive(bombs["zip"]).root)).max_bytes == (
        default_max_bytes()
    )


def test_opened_archives_are_cached_per_cap(bombs):
    zp = bombs["zip"]
    assert open_archive(zp) is open_archive(zp, max_bytes=default_max_bytes())
    small = open_archive(zp, max_bytes=CAP_BYTES)
    assert small is not open_archive(zp) and small is open_archive(zp, max_bytes=CAP_BYTES)
    assert (small.cap, open_archive(zp).cap) == (CAP_BYTES, default_max_bytes())


def test_an_archive_keeps_the_cap_it_was_opened_with(bombs):
    """read_source's cap is for decompressing a .gz file; an archive's members are read
    under the cap given to discover (or open_archive)."""
    (run,) = discover(bombs["zip"], max_bytes=CAP_BYTES)
    with pytest.raises(InputError):
        read_source(run.sources[0], max_bytes=2 * INFLATED)
    (run,) = discover(bombs["zip"])
    assert read_source(run.sources[0], max_bytes=CAP_BYTES) is not None


def test_a_gzipped_member_inflates_under_its_archives_cap(bombs, tmp_path):
    packed = tmp_path / "gz.tar"
    with tarfile.open(packed, "w") as t:
        t.add(bombs["gz"], arcname="run/trace.json.gz")  # small in the tar, 5 MB inflated
    (run,) = discover(packed, max_bytes=CAP_BYTES)
    with pytest.raises(InputError) as e:
        read_source(run.sources[0])
    library_error(e, f"{packed}!/run/trace.json.gz")
    (run,) = discover(packed)
    assert read_source(run.sources[0]) is not None
