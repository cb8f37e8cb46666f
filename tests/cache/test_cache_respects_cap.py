"""``--max-bytes`` holds on a cache hit as on a read (issue 37: a run cached without a cap was
answered, exit 0, under a cap its read refuses, exit 2), as real processes: a gzipped trace and
an Explorer export, each analysed and cached, then asked again under a cap they inflate past:
refused by every command, as uncached; then answered again without it."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from conftest import run_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def gzipped(tmp_path: Path) -> Path:
    run = tmp_path / "gz"
    run.mkdir()
    trace = next((FIXTURES / "rmsnorm_naive").rglob("trace.json"))
    (run / "trace.json.gz").write_bytes(gzip.compress(trace.read_bytes()))
    return run


def explorer(tmp_path: Path) -> Path:
    run = tmp_path / "parquet"
    shutil.copytree(FIXTURES / "rmsnorm_naive" / "explorer" / "parquet", run)
    return run


@pytest.mark.parametrize("make", [gzipped, explorer])
def test_a_cached_run_is_refused_under_a_cap_it_inflates_past(tmp_path, monkeypatch, make):
    monkeypatch.delenv("TRACEANA_CACHE_DIR", raising=False)  # the run's own cache folder,
    monkeypatch.setenv("TRACEANA_CACHE_IN_PROFILE", "1")  # as asked
    run = make(tmp_path)
    code, _, err, *_ = run_process("gaps", run)
    assert code == 0, err
    assert (run / ".traceana-cache").is_dir()  # cached
    for command in ("gaps", "ops", "info"):
        code, out, err, *_ = run_process(command, run, "--max-bytes", "1K")
        assert code == 2 and out == "", (command, code, err)
        assert "decompresses to more than 1,000 bytes" in err, err
    code, _, err, *_ = run_process("gaps", run)
    assert code == 0, err
