"""The legacy JSON export's ``timestamp_unit``, its top-level ``warnings`` and the list form of
``system_profile_metadata`` (docs/formats.md, "Legacy JSON details"; issue 15).

Every export here is written by the test; each expected time is worked out from the numbers
the test wrote, with exact fractions, never read back from traceana.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest
from conftest import info_json, run_cli, write_trace

import trace_analyzer as ta

T = 1_793_620_800_001_000_000  # epoch ns
SCALE = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
# (start offset, duration) in ns of three device executions, chosen so that every unit can
# spell them: the first start in µs is 1793620800001054.75, a float that holds it exactly.
EVENTS = [(54_750, 388_200), (1_203_125, 151_250), (2_450_000, 99_875)]
DROPPED = "System profile events were dropped due to full ring buffer"
HOSTILE = "bad <script>alert(1)</script> | cell \x1b[31mred\x07 [x](http://e.invalid)"


def decimal_text(ns: int, unit: str) -> str:
    """Return ``ns`` as an exact decimal text in ``unit``, by integer arithmetic."""
    whole, frac = divmod(ns, SCALE[unit])
    digits = len(str(SCALE[unit])) - 1
    return f"{whole}.{frac:0{digits}d}" if digits else str(whole)


def record(i: int, start, duration, unit: str | None) -> dict:
    r = {"name": "nc_exec_running", "timestamp": start, "duration": duration, "id": 100 + i,
         "exec_id": i, "instance_id": "i-0abc", "process_id": "42", "lnc_idx": "0", "nc_idx": 0,
         "pcore_idx": 0, "trace_event_source": "neuron_hw"}
    if unit is not None:
        r["timestamp_unit"] = unit
    return r


def spelled(unit: str, i: int) -> tuple[object, object]:
    """Return event ``i``'s start and duration as written in ``unit``: decimal texts, except
    a float start for the first event in µs and plain integers in ns."""
    off, dur = EVENTS[i]
    if unit == "ns":
        return T + off, dur
    if unit == "us" and i == 0:
        start = float(decimal_text(T + off, "us"))
        assert Fraction(start) * 1000 == T + off  # the float holds the time exactly
        return start, decimal_text(dur, unit)
    return decimal_text(T + off, unit), decimal_text(dur, unit)


def ns_of(value, unit: str) -> int:
    """The ns a written value stands for, worked out exactly from what was written."""
    exact = Fraction(value) * SCALE[unit]
    assert exact.denominator == 1
    return int(exact)


def write_export(folder, records, **top):
    return write_trace(folder / "system_profile.json", {**top, "trace_event": records})


def export_in(folder, units: list[str], **top) -> list[tuple[int, int]]:
    """Write the three events, event i in units[i]; return the (start, end) ns they stand for."""
    records, want = [], []
    for i, unit in enumerate(units):
        start, dur = spelled(unit, i)
        records.append(record(i, start, dur, unit))
        want.append((ns_of(start, unit), ns_of(start, unit) + ns_of(dur, unit)))
    write_export(folder, records, **top)
    return want


def spans(folder) -> list[tuple[int, int]]:
    ev = ta.load(folder).events.sort("start_ns")
    return list(zip(ev["start_ns"].to_list(), ev["end_ns"].to_list(), strict=True))


@pytest.mark.parametrize("units", [["us"] * 3, ["ms"] * 3, ["s"] * 3, ["ns", "us", "s"],
                                   ["ms", "ns", "us"]], ids=lambda u: "-".join(u))
def test_every_unit_gives_the_ns_of_the_ns_export(tmp_path, units):
    want_ns = export_in(tmp_path / "ns", ["ns"] * 3)
    want = export_in(tmp_path / "other", units)
    assert want == want_ns == [(T + o, T + o + d) for o, d in EVENTS]  # the test's own sums
    assert spans(tmp_path / "other") == spans(tmp_path / "ns") == want
    run, base = info_json(tmp_path / "other")["runs"][0], info_json(tmp_path / "ns")["runs"][0]
    assert (run["start_ns"], run["end_ns"]) == (base["start_ns"], base["end_ns"])
    assert (run["start_ns"], run["end_ns"]) == (want[0][0], max(e for _, e in want))
    assert run["warnings"] == []


def test_a_top_level_unit_is_the_default_of_records_without_one(tmp_path):
    records = []
    for i, (off, dur) in enumerate(EVENTS):
        records.append(record(i, decimal_text(T + off, "us"), decimal_text(dur, "us"), None))
    records[2]["timestamp_unit"] = "ns"  # a record's own unit wins
    records[2]["timestamp"], records[2]["duration"] = T + EVENTS[2][0], EVENTS[2][1]
    write_export(tmp_path, records, timestamp_unit="us")
    assert spans(tmp_path) == [(T + o, T + o + d) for o, d in EVENTS]


def test_integers_and_texts_beyond_2_53_stay_exact(tmp_path):
    start = T + 1  # 2**60 and more: a float would round it
    write_export(tmp_path, [record(0, str(start), "7", "ns"), record(1, start + 10, 3, None)])
    assert spans(tmp_path) == [(start, start + 7), (start + 10, start + 13)]


def test_an_unknown_unit_drops_its_records_with_one_warning(tmp_path):
    records = [record(i, T + o, d, unit) for i, ((o, d), unit) in
               enumerate(zip(EVENTS, ["ns", "fortnights", "fortnights"], strict=True))]
    records.append(record(3, 5, 1, "ticks"))
    write_export(tmp_path, records)
    run = info_json(tmp_path)["runs"][0]
    assert run["events"] == 1 and run["start_ns"] == T + EVENTS[0][0]
    unit_warnings = [w for w in run["warnings"] if "timestamp_unit" in w]
    assert len(unit_warnings) == 1
    assert "'fortnights' (2)" in unit_warnings[0] and "'ticks' (1)" in unit_warnings[0]
    assert "3 trace_event records" in unit_warnings[0] and "dropped" in unit_warnings[0]


def warned_export(folder, *warnings) -> None:
    start, dur = spelled("ns", 0)
    write_export(folder, [record(0, start, dur, "ns"), record(1, T + EVENTS[1][0], EVENTS[1][1],
                                                               "ns")], warnings=list(warnings))


def test_the_export_warnings_are_in_info_text_and_json(tmp_path):
    warned_export(tmp_path, DROPPED, {"message": "2 device profiles not ingested",
                                      "category": "ingestion"})
    run = info_json(tmp_path)["runs"][0]
    assert any(w.endswith(DROPPED) for w in run["warnings"])
    assert any(w.endswith("ingestion: 2 device profiles not ingested") for w in run["warnings"])
    code, out, _ = run_cli("info", tmp_path, "--no-cache")
    assert code == 0
    loud = [ln for ln in out.splitlines() if DROPPED in ln]
    assert loud == [ln for ln in loud if ln.startswith("- !! ") and
                    ln.endswith("gaps may be missing events")] and len(loud) == 1
    assert "2 device profiles not ingested" in out
    code, out, _ = run_cli("info", tmp_path, "--no-cache", "--format", "markdown")
    assert re.search(rf"^- \*\*.*{DROPPED}.*gaps may be missing events\*\*$", out, re.M), out


@pytest.mark.parametrize("command", ["gaps", "ops", "chain"])
def test_reports_open_with_the_warnings(tmp_path, command):
    warned_export(tmp_path, DROPPED)
    code, out, _ = run_cli(command, tmp_path, "--no-cache", "--format", "markdown")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"## {command}: ")
    assert lines[1:4] == ["", "### warnings", ""]
    assert re.fullmatch(rf"- \*\*.*{DROPPED}; gaps may be missing events\*\*", lines[4]), lines[4]
    code, out, _ = run_cli(command, tmp_path, "--no-cache", "--format", "json")
    warnings = json.loads(out)["runs"][0]["warnings"]
    assert len(warnings) == 1 and warnings[0].endswith(DROPPED)


def test_no_warnings_no_warnings_section(tmp_path):
    export_in(tmp_path, ["ns"] * 3)
    code, out, _ = run_cli("gaps", tmp_path, "--no-cache", "--format", "markdown")
    assert code == 0 and "### warnings" not in out
    code, out, _ = run_cli("gaps", tmp_path, "--no-cache", "--format", "json")
    assert json.loads(out)["runs"][0]["warnings"] == []


def test_the_report_opens_with_the_warnings(tmp_path):
    pytest.importorskip("matplotlib")
    warned_export(tmp_path / "run", DROPPED)
    code, _, err = run_cli("report", tmp_path / "run", "--no-cache", "-o", tmp_path / "r.md")
    assert code == 0, err
    md = (tmp_path / "r.md").read_text()
    top = md.split("## timeline")[0]
    assert re.search(rf"^- \*\*.*{DROPPED}; gaps may be missing events\*\*$", top, re.M), top
    assert md.count(DROPPED) == 1  # once, at the top: not again over the gaps and ops
    code, _, err = run_cli("report", tmp_path / "run", "--no-cache", "-o", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    body = page[page.index("<main>"):page.index('id="summary"')]
    assert re.search(rf"<strong>[^<]*{DROPPED}; gaps may be missing events</strong>", body)


def test_a_hostile_warning_renders_inert(tmp_path):
    pytest.importorskip("matplotlib")
    warned_export(tmp_path / "run", HOSTILE)
    run = tmp_path / "run"
    code, out, _ = run_cli("gaps", run, "--no-cache", "--format", "markdown")
    line = next(ln for ln in out.splitlines() if "alert(1)" in ln)
    assert "<script>" not in out and "\\<script\\>" in line
    assert re.sub(r"\\\|", "", line).count("|") == 0  # every | escaped: no table cell
    assert "](" not in line.replace("\\](", "")  # no link either
    assert "\x1b" not in out and "\x07" not in out
    for fmt in ("table", "markdown"):
        for command in ("gaps", "info", "ops", "chain"):
            code, out, _ = run_cli(command, run, "--no-cache", "--format", fmt)
            assert code == 0 and "\x1b" not in out and "\x07" not in out, (command, fmt)
            assert "<script>" not in out or fmt == "table", (command, fmt)
    code, out, _ = run_cli("gaps", run, "--no-cache", "--format", "json")
    assert json.loads(out)["runs"][0]["warnings"][0].endswith(HOSTILE)  # JSON keeps the data
    code, _, err = run_cli("report", run, "--no-cache", "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert code == 0, err
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\x1b" not in page.split("<script")[0]


@pytest.mark.parametrize("meta", [
    [{"first_ts_ns": "1793620800001000000", "last_ts_ns": "1793620800003752900", "ntff_version": 5},
     {"first_ts_ns": 1793620800004000000, "last_ts_ns": 1793620800005000000, "ntff_version": "6"}],
    [{"first_ts_ns": "1793620800001000000", "last_ts_ns": "1793620800003752900", "ntff_version": 5}],
], ids=["two", "one"])
def test_the_list_form_of_the_metadata_reads(tmp_path, meta):
    export_in(tmp_path, ["ns"] * 3, system_profile_metadata=meta)
    run = info_json(tmp_path)["runs"][0]
    assert run["events"] == 3
    (note,) = [n for s in run["sources"] for n in s["notes"] if "system_profile_metadata" in n]
    for m in meta:
        assert f"first_ts_ns {int(m['first_ts_ns'])}" in note
        assert f"last_ts_ns {int(m['last_ts_ns'])}" in note
        assert f"ntff_version {int(m['ntff_version'])}" in note


@pytest.mark.parametrize("meta", [
    {"first_ts_ns": "1793620800001000000", "ntff_version": 5}, [], "garbage", [7, None], None])
def test_any_metadata_form_reads_without_error(tmp_path, meta):
    export_in(tmp_path, ["ns"] * 3, system_profile_metadata=meta)
    code, out, err = run_cli("info", tmp_path, "--no-cache", "--format", "json")
    assert code == 0, err
    notes = [n for s in json.loads(out)["runs"][0]["sources"] for n in s["notes"]]
    if isinstance(meta, dict):
        assert "system_profile_metadata: first_ts_ns 1793620800001000000, ntff_version 5" in notes


@pytest.mark.parametrize("warnings", ["just one text", 42, [None, 7, {"code": 3}], {"text": "x"}])
def test_odd_warning_forms_never_fail(tmp_path, warnings):
    write_export(tmp_path, [record(0, T, 5, "ns")], warnings=warnings)
    code, out, err = run_cli("info", tmp_path, "--no-cache", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["runs"][0]["events"] == 1
