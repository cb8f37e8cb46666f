"""--max-bytes: a compressed input that inflates past the cap is one clear error, not a hang.

The bombs here are small files (a few KB) that inflate to 5 MB, tried with a 1 MB cap; the
same files pass under the default cap (16 GiB), so the error is the cap's, not the input's.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile

import pytest
from conftest import run_cli

INFLATED = 5_000_000
CAP = "1M"


def kineto_bomb() -> bytes:
    """A valid Kineto trace padded with 5 MB of blanks: it compresses to a few KB."""
    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1,
                            "ts": 1.0, "dur": 2.0}], "baseTimeNanoseconds": 1_000_000_000}
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
