"""The CLI's outputs on the fixtures and the corpus, kept as golden files (issue 14).

Written once before a restructuring, then compared byte for byte by tests/golden/
test_golden.py: the restructuring must not change what a user sees. Each case is one
command line; what it prints (stdout, stderr, exit code) and every file it writes with -o
are kept. Paths inside the outputs are the relative ones given on the command line, so the
files hold no machine's folder; the temporary output folder is written as ``<OUT>``.

    python tests/golden/make_golden.py          # (re)write tests/golden/cases/
    python tests/golden/make_golden.py --check  # compare, print the differing cases

Run from the repository root, with ../shared/corpus beside it (cases on the corpus are
skipped when it is absent). Outputs over 64 KiB are kept gzipped (mtime 0, so the bytes
are stable); the comparison is of the uncompressed bytes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import shutil
import sys
import tempfile
from pathlib import Path

import polars as pl
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
CORPUS = Path("../shared/corpus")
BIG = 64 * 1024
# Batch-table columns that depend on the clock or the files' mtimes: left out of the golden.
VOLATILE = ("fingerprint", "modified_time", "analysed_at", "analysis_s")

FIXTURES = ["fixtures/rmsnorm_naive", "fixtures/rmsnorm_fused", "fixtures/rmsnorm_compiled",
            "fixtures/rmsnorm_naive_lnc2"]
CORPUS_TRACES = [
    "real/tracelens/h100_bert", "real/tracelens/mi300_resnet", "real/tracelens/b200_eager",
    "real/tracelens/sglang_decode", "real/tracelens/torch_compile_triton",
    "real/kineto/tb_plugin_resnet50", "real/param/dlrm_kineto",
    "hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "hta/tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz",
    "hta/tests/data/nccl_parser_config/nccl_data.json.gz",
    "hta/tests/data/trace_filter/sampled_rank-0.json.gz",
    "hta/tests/data/triton_example/triton_example.json.gz",
    "hta/tests/data/call_stack/backward_thread.json",
]
REFUSED = ["real/tracelens/rocprof", "real/param/et", "hta/tests/data/execution_trace/benchmark_simple_add_et.json.gz"]
FORMATS = ("table", "markdown", "json", "csv")


def _slug(text: str) -> str:
    keep = "".join(c if c.isalnum() or c in "._-" else "_" for c in text)
    return keep.strip("_")[:90]


def cases() -> list[tuple[str, list[str]]]:
    """Return (name, argv) of every case; ``{OUT}`` in argv is the temporary output folder."""
    out: list[tuple[str, list[str]]] = []
    nc = ["--no-cache"]
    for fx in FIXTURES:
        s = _slug(Path(fx).name)
        for fmt in FORMATS:
            for cmd in ("info", "gaps", "ops", "chain"):
                out.append((f"{s}.{cmd}.{fmt}", [cmd, fx, "--format", fmt, *nc]))
        out += [
            (f"{s}.gaps.by_lane", ["gaps", fx, "--by", "lane", *nc]),
            (f"{s}.gaps.by_op", ["gaps", fx, "--by", "op", "--top", "3", *nc]),
            (f"{s}.gaps.by_op.md", ["gaps", fx, "--by", "op", "--format", "markdown", *nc]),
            (f"{s}.gaps.step3", ["gaps", fx, "--step", "3", "--format", "json", *nc]),
            (f"{s}.gaps.window", ["gaps", fx, "--window", "0.5ms:2ms", *nc]),
            (f"{s}.gaps.min_gap", ["gaps", fx, "--min-gap", "20us", "--format", "json", *nc]),
            (f"{s}.gaps.lane", ["gaps", fx, "--lane", "*NC0*", *nc]),
            (f"{s}.gaps.fail", ["gaps", fx, "--fail-on", "idle_pct>1", "--fail-on",
                                "gap_max_us>1000000", *nc]),
            (f"{s}.ops.limit", ["ops", fx, "--limit", "2", *nc]),
            (f"{s}.chain.by_op", ["chain", fx, "--by", "op", *nc]),
            (f"{s}.chain.op", ["chain", fx, "--op", "aten::mul*", "--limit", "3", *nc]),
            (f"{s}.chain.unlinked", ["chain", fx, "--unlinked", "--format", "json", *nc]),
            (f"{s}.chain.step", ["chain", fx, "--step", "3", "--format", "csv", *nc]),
            (f"{s}.export", ["export", fx, "-o", "{OUT}/export.json", *nc]),
            (f"{s}.graph.graphml", ["graph", fx, "-o", "{OUT}/g.graphml", *nc]),
            (f"{s}.graph.json", ["graph", fx, "-o", "{OUT}/g.json", *nc]),
            (f"{s}.graph.dot", ["graph", fx, "-o", "{OUT}/g.dot", *nc]),
        ]
    base, head = FIXTURES[0], FIXTURES[1]
    for fmt in FORMATS:
        out.append((f"diff.naive_fused.{fmt}", ["diff", base, head, "--format", fmt, *nc]))
    for fx in FIXTURES[:3]:  # the device profiles (engines reads them; it keeps no cache)
        for fmt in FORMATS:
            out.append((f"{_slug(Path(fx).name)}.engines.{fmt}", ["engines", fx, "--format", fmt]))
    out += [
        ("diff.fused_naive", ["diff", head, base, "--top", "2", *nc]),
        ("diff.naive_compiled.md", ["diff", base, FIXTURES[2], "--format", "markdown", *nc]),
        ("diff.fail", ["diff", base, head, "--fail-on", "idle_pct_delta>-200",
                       "--fail-on", "device_time_pct_delta>5", *nc]),
        ("diff.step", ["diff", base, head, "--step", "3", "--format", "json", *nc]),
        ("report.md", ["report", base, "-o", "{OUT}/report.md", *nc]),
        ("report.base.md", ["report", head, "--base", base, "-o", "{OUT}/report.md", *nc]),
        ("report.html", ["report", head, "--base", base, "-o", "{OUT}/report.html", *nc]),
        ("engines.diff", ["engines", FIXTURES[2], "--base", head, "--format", "markdown"]),
        # the one spelling of that comparison (issue 39): the same stdout, no note
        ("diff.engines", ["diff", head, FIXTURES[2], "--engines", "--format", "markdown"]),
        ("fixtures.info", ["info", "fixtures", *nc]),
        ("fixtures.gaps.json", ["gaps", "fixtures", "--format", "json", *nc]),
        ("fixtures.gaps.csv", ["gaps", "fixtures", "--format", "csv", *nc]),
        ("fixtures.ops", ["ops", "fixtures", *nc]),
        ("fixtures.chain.md", ["chain", "fixtures", "--by", "op", "--format", "markdown", *nc]),
        ("batch.fixtures", ["batch", *FIXTURES, "-o", "{OUT}/runs.parquet", "-j", "1"]),
        ("errors.missing", ["gaps", "fixtures/nope", *nc]),
        ("errors.two_runs", ["diff", "fixtures", base, *nc]),
        ("errors.step", ["gaps", base, "--step", "99", *nc]),
        ("errors.window", ["gaps", base, "--window", "2ms:1ms", *nc]),
        ("errors.lane", ["gaps", base, "--lane", "nothing*", *nc]),
        ("errors.fail_on", ["gaps", base, "--fail-on", "nonsense>1", *nc]),
        ("errors.min_gap", ["gaps", base, "--min-gap", "-5us", *nc]),
        ("errors.max_bytes", ["gaps", base, "--max-bytes", "lots", *nc]),
    ]
    if not (ROOT / CORPUS).is_dir():
        return out
    for rel in CORPUS_TRACES:
        path = str(CORPUS / rel)
        s = "corpus." + _slug(rel.replace("tests/data/", "").split(".json")[0])
        for fmt in FORMATS:
            out.append((f"{s}.gaps.{fmt}", ["gaps", path, "--format", fmt, *nc]))
        out += [
            (f"{s}.info", ["info", path, *nc]),
            (f"{s}.info.json", ["info", path, "--format", "json", *nc]),
            (f"{s}.ops", ["ops", path, *nc]),
            (f"{s}.ops.json", ["ops", path, "--format", "json", *nc]),
            (f"{s}.chain", ["chain", path, "--limit", "25", *nc]),
            (f"{s}.chain.by_op.json", ["chain", path, "--by", "op", "--format", "json", *nc]),
            (f"{s}.gaps.by_lane", ["gaps", path, "--by", "lane", "--top", "5", *nc]),
        ]
    for rel in ("real/tracelens/h100_bert", "real/tracelens/sglang_decode",
                "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"):
        s = "corpus." + _slug(rel.replace("tests/data/", "").split(".json")[0])
        out.append((f"{s}.export", ["export", str(CORPUS / rel), "-o", "{OUT}/export.json", *nc]))
    cmp = CORPUS / "hta/tests/data/trace_compare"
    out.append(("corpus.diff.trace_compare", ["diff", str(cmp / "base"), str(cmp / "test"), *nc]))
    out.append(("corpus.diff.trace_compare.json",
                ["diff", str(cmp / "base"), str(cmp / "test"), "--format", "json", *nc]))
    for rel in REFUSED:
        s = "corpus.refused." + _slug(rel.split(".json")[0])
        out.append((s, ["gaps", str(CORPUS / rel), *nc]))
    return out


def trend_cases(table_dir: Path) -> list[tuple[str, list[str]]]:
    """Return the `trend` cases over the batch table kept in ``table_dir``."""
    table = str(table_dir / "runs.parquet")
    return [(f"trend.{fmt}", ["trend", table, "--format", fmt]) for fmt in FORMATS]


def fix_mtimes(table: Path, target: Path) -> None:
    """Copy a batch table with fixed modified_time values: the files' mtimes differ in
    every clone, and trend orders runs by them."""
    runs = pl.read_parquet(table)
    fixed = pl.datetime_range(pl.datetime(2026, 1, 1, time_zone="UTC"),
                              pl.datetime(2026, 1, 31, time_zone="UTC"), "1d",
                              time_unit="us", eager=True).head(runs.height)
    # run_id is the run's real path (docs/batch.md), which differs in every clone: the trend
    # cases show it relative to the repository, as the fixtures are named
    run_id = pl.col("run_id").str.strip_prefix(f"{ROOT}/")
    runs.with_columns(modified_time=fixed, run_id=run_id).write_parquet(target)


def run_case(argv: list[str], out_dir: Path) -> dict[str, bytes]:
    """Run one command line in-process; return its outputs by name."""
    from trace_analyzer.cli import cli

    argv = [a.replace("{OUT}", str(out_dir)) for a in argv]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    got = {"stdout": result.stdout_bytes, "stderr": result.stderr_bytes,
           "exit": f"{result.exit_code}\n".encode()}
    for f in sorted(out_dir.iterdir()):
        if f.suffix == ".parquet":
            df = pl.read_parquet(f).drop(VOLATILE, strict=False)
            got[f"file.{f.name}.csv"] = df.write_csv().encode()
        else:
            got[f"file.{f.name}"] = f.read_bytes()
    return {k: v.replace(str(out_dir).encode(), b"<OUT>").replace(f"{ROOT}/".encode(), b"<REPO>/")
            for k, v in got.items()}


def compute() -> dict[str, dict[str, bytes]]:
    """Return every case's outputs."""
    results: dict[str, dict[str, bytes]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in cases():
            out_dir = Path(tmp) / "out"
            shutil.rmtree(out_dir, ignore_errors=True)
            out_dir.mkdir()
            results[name] = run_case(argv, out_dir)
            if name == "batch.fixtures":
                keep = Path(tmp) / "keep"
                keep.mkdir()
                fix_mtimes(out_dir / "runs.parquet", keep / "runs.parquet")
                for tname, targv in trend_cases(keep):
                    out_dir2 = Path(tmp) / "out2"
                    shutil.rmtree(out_dir2, ignore_errors=True)
                    out_dir2.mkdir()
                    results[tname] = run_case(targv, out_dir2)
                    results[tname] = {k: v.replace(str(keep).encode(), b"<TABLE>")
                                      for k, v in results[tname].items()}
    return results


def stored(name: str, part: str) -> bytes | None:
    """Return a stored golden output (uncompressed), or None."""
    plain = CASES_DIR / name / part
    if plain.is_file():
        return plain.read_bytes()
    packed = plain.with_name(part + ".gz")
    return gzip.decompress(packed.read_bytes()) if packed.is_file() else None


def write(results: dict[str, dict[str, bytes]]) -> None:
    shutil.rmtree(CASES_DIR, ignore_errors=True)
    for name, parts in results.items():
        folder = CASES_DIR / name
        folder.mkdir(parents=True)
        for part, data in parts.items():
            if len(data) > BIG:
                buf = io.BytesIO()
                with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz:
                    gz.write(data)
                (folder / (part + ".gz")).write_bytes(buf.getvalue())
            else:
                (folder / part).write_bytes(data)


def check(results: dict[str, dict[str, bytes]]) -> list[str]:
    """Return one line per case whose outputs differ from the stored ones."""
    bad = []
    for name, parts in results.items():
        if not (CASES_DIR / name).is_dir():
            bad.append(f"{name}: no golden files")
            continue
        stored_parts = {p.name.removesuffix(".gz") for p in (CASES_DIR / name).iterdir()}
        if stored_parts != set(parts):
            bad.append(f"{name}: outputs {sorted(parts)} vs golden {sorted(stored_parts)}")
            continue
        for part, data in parts.items():
            if stored(name, part) != data:
                digest = hashlib.sha256(data).hexdigest()[:12]
                bad.append(f"{name}/{part}: differs (now {len(data)} bytes, sha256 {digest})")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    import os

    os.chdir(ROOT)
    results = compute()
    if args.check:
        bad = check(results)
        print("\n".join(bad) or f"all {len(results)} cases identical")
        return 1 if bad else 0
    write(results)
    print(f"wrote {len(results)} cases to {CASES_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
