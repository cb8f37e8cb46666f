"""Every command that reads runs takes the same loading options, with the same meaning
(issue 39; docs/output.md, "Conventions"): walked over the group's commands, so that a new
command that reads runs without them fails here.

``engines`` reads device-profile exports: its options are the same flags, applied where they
reach an export (``Loading.device``): --run NAME the exports below PATH/NAME, --rank the
profiles of those ranks' processes (the system profile beside them gives the ranks),
--max-bytes the cap on an export's Parquet tables and on a .json.gz export, --verbose what
the search passed by; the cache options reach the system profile beside the exports.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import click
import pytest
from conftest import one_line_error, run_cli

from trace_analyzer.cli import cli
from trace_analyzer.cli.loading import LOAD_OPTIONS, load_options

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
NAIVE = FIXTURES / "rmsnorm_naive"

# The arguments that name runs to read (a table of `batch`, read by `trend`, is not a run).
RUN_ARGUMENTS = {"path", "base", "head", "roots"}
# What a command that reads runs takes, by flag, with the help it has everywhere.
LOADING = ("--no-cache", "--cache-dir", "--cache-in-profile", "--strict", "--rank", "--run",
           "--verbose", "--max-bytes")  # fmt: skip
# `batch` writes a table that is its own cache (a run's fingerprint: an unchanged run is not
# read again), of every rank and every run of its roots (a table of some would be skipped as
# unchanged by the next batch): it takes --max-bytes and --verbose, and its --strict keeps
# its own meaning, exit 1 when a run failed (docs/reliability.md, "--strict").
BATCH = {"--max-bytes", "--verbose", "--strict"}


def commands() -> list[tuple[str, click.Command]]:
    """Every command of the group, a group's subcommands as ``group sub``."""
    out = []

    def walk(group: click.Group, prefix: str) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, name
            if isinstance(command, click.Group):
                walk(command, f"{prefix}{name} ")
            else:
                out.append((f"{prefix}{name}", command))

    walk(cli, "")
    return out


def reads_runs(command: click.Command) -> bool:
    return any(isinstance(p, click.Argument) and p.name in RUN_ARGUMENTS for p in command.params)


def flags(command: click.Command) -> dict[str, click.Option]:
    return {o: p for p in command.params if isinstance(p, click.Option) for o in p.opts}


def test_the_walk_finds_every_command_that_reads_runs():
    names = [name for name, command in commands() if reads_runs(command)]
    assert {"gaps", "ops", "chain", "diff", "engines", "baseline save", "baseline compare",
            "report", "tables", "graph", "export", "info", "kernels", "ranks", "launches",
            "critical", "batch"} <= set(names)  # fmt: skip
    assert "trend" not in names  # it reads a batch table


@pytest.mark.parametrize("name,command", [c for c in commands() if reads_runs(c[1])],
                         ids=[n for n, c in commands() if reads_runs(c)])  # fmt: skip
def test_every_command_that_reads_runs_takes_every_loading_option(name, command):
    have = flags(command)
    if name == "batch":
        assert BATCH <= set(have) and not (set(LOADING) - BATCH) & set(have), sorted(have)
        return
    missing = [f for f in LOADING if f not in have]
    assert not missing, f"{name} lacks {missing}"
    # the same option everywhere: its help is load_options' own (one meaning)
    fn = load_options(lambda **kw: None)  # type: ignore[arg-type]
    shown = {o: p for p in getattr(fn, "__click_params__", []) for o in p.opts}
    for flag in LOADING:
        assert have[flag].help == shown[flag].help, (name, flag)


def test_loading_is_the_options_load_options_adds():
    fn = load_options(lambda **kw: None)  # type: ignore[arg-type]
    added = {o for p in getattr(fn, "__click_params__", []) for o in p.opts}
    assert added == set(LOADING) | {"-v"}
    assert len(LOAD_OPTIONS) == len(LOADING) - 1  # and --max-bytes, limit_options's


# --- engines: each option where it reaches a device-profile export ----------------------------


def engines_json(*args: object) -> dict:
    code, out, err = run_cli("engines", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_engines_rank_keeps_the_profiles_of_that_rank_s_processes():
    every = engines_json(NAIVE, "--no-cache")
    assert engines_json(NAIVE, "--rank", "0", "--no-cache") == every  # pid 4242 is rank 0
    line = one_line_error(*run_cli("engines", NAIVE, "--rank", "1", "--no-cache"))
    assert line.endswith("--rank 1: no device profile under "
                         f"{NAIVE} is of a rank it names; their ranks: 0")
    # an export without a system profile beside it names no rank
    alone = NAIVE / "device_profiles"
    line = one_line_error(*run_cli("engines", alone, "--rank", "0"))
    assert "have no rank numbers" in line and "leave --rank out" in line


def test_engines_run_is_the_exports_below_path_slash_name():
    one = engines_json(FIXTURES, "--run", "rmsnorm_fused")
    assert [r["root"] for r in one["runs"]] == [str(FIXTURES / "rmsnorm_fused")]
    assert one["runs"][0]["profiles"] == engines_json(FIXTURES / "rmsnorm_fused")["runs"][0][
        "profiles"]
    line = one_line_error(*run_cli("engines", FIXTURES, "--run", "nope"))
    assert "--run nope: nothing is named so below" in line and "rmsnorm_naive/device_profiles" in line


def test_engines_max_bytes_caps_the_export_s_parquet_tables():
    line = one_line_error(*run_cli("engines", NAIVE, "--max-bytes", "1k"))
    assert "Instruction.parquet: the table decompresses to more than 1,000 bytes (--max-bytes" in line
    assert engines_json(NAIVE, "--max-bytes", "1G")["runs"][0]["profiles"]


def test_engines_max_bytes_caps_a_gzipped_json_export(tmp_path):
    real = ROOT.parent / "shared/corpus/real3/allenkchau/fused_attention/json_reports"
    if not real.is_dir():
        pytest.skip(f"{real} is absent: the shared corpus is not checked out beside the repo")
    path = tmp_path / "e.json.gz"  # a neuron-profile JSON export, gzipped
    path.write_bytes(gzip.compress((real / "fused_exec_2_profile_full.json").read_bytes()))
    assert engines_json(path)["runs"][0]["profiles"]
    line = one_line_error(*run_cli("engines", path, "--max-bytes", "100"))
    assert "more than 100 bytes (--max-bytes" in line


def test_engines_verbose_names_what_the_search_passed_by(tmp_path):
    top = tmp_path / "d"
    shutil.copytree(NAIVE / "device_profiles", top)
    links = [top / n for n in ("up", "again")]
    for link in links:  # links back to a folder already read: passed by, as discovery does
        link.symlink_to(top, target_is_directory=True)
    code, _, err = run_cli("engines", top)
    assert code == 0, err
    said = [line for line in err.splitlines() if line.startswith("traceana: warning:")]
    assert len(said) == 1 and " 2 links to a folder already read" in said[0], err
    assert "--verbose" in said[0]
    code, _, err = run_cli("engines", top, "--verbose")
    assert code == 0, err
    for link in links:
        assert any(line.startswith(f"traceana: warning: {link}: ") for line in err.splitlines())


def test_engines_takes_the_cache_options_and_strict(tmp_path):
    # nothing of an export is cached, nothing in it dropped: the same output with them
    plain = engines_json(NAIVE, "--base", FIXTURES / "rmsnorm_fused")
    cached = engines_json(NAIVE, "--base", FIXTURES / "rmsnorm_fused", "--strict",
                          "--cache-dir", tmp_path / "cache")  # fmt: skip
    assert cached == plain
    assert any((tmp_path / "cache").rglob("*"))  # the system profiles beside, matched by op
    assert engines_json(NAIVE, "--base", FIXTURES / "rmsnorm_fused", "--no-cache") == plain
