"""Text for people: plain tables for a terminal and Markdown for pull requests.

Tables are drawn by polars' own formatter. Times are shown in ms or µs, as the headers say.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from trace_analyzer.analyses.gaps import CAUSES
from trace_analyzer.analyses.rows import Rows

TABLE, MARKDOWN = "ASCII_MARKDOWN", "MARKDOWN"


def frame_text(df: pl.DataFrame, style: str = TABLE) -> str:
    """Return df as a text table with every row and column shown."""
    with pl.Config(
        tbl_formatting=style,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=1000,
        fmt_str_lengths=200,
        fmt_table_cell_list_len=10,
        tbl_cell_numeric_alignment="RIGHT",
        float_precision=None,
        fmt_float="full",
    ):
        return str(df)


def render_table(kind: str, data: dict) -> str:
    """Return the terminal text of a result."""
    return _render(kind, data, TABLE)


def render_markdown(kind: str, data: dict) -> str:
    """Return the Markdown of a result, fit to paste into a pull request."""
    return _render(kind, data, MARKDOWN)


def _render(kind: str, data: dict, style: str) -> str:
    layout: Callable[..., list[str]] = LAYOUTS[kind]
    view = data.get("view", {})  # presentation choices (--by, --top), not results
    return "\n\n".join("\n".join(layout(run, style, **view)) for run in data["runs"]) + "\n"


def _heading(text: str, style: str, level: int = 2) -> str:
    return f"{'#' * level} {text}" if style == MARKDOWN else text


def _section(title: str, df: pl.DataFrame, style: str) -> list[str]:
    return ["", _heading(title, style, 3), "", frame_text(df, style)]


def _bullets(title: str, items: list[str], style: str) -> list[str]:
    return ["", _heading(title, style, 3), ""] + [f"- {i}" for i in items] if items else []


def _ms(ns: int | None, origin: int | None) -> float | None:
    return None if ns is None or origin is None else round((ns - origin) / 1e6, 3)


def _info(run: dict, style: str) -> list[str]:
    origin = run["start_ns"]
    cov = run.get("links") or {}
    lines = [
        _heading(f"run: {run['root']}", style),
        f"{run['events']} events over {_ms(run['end_ns'], origin)} ms; "
        f"{run['hardware_lanes']} hardware lanes; layout: {', '.join(run['layouts']) or 'plain files'}",
    ]
    if cov.get("hardware_executions"):
        lines.append(_coverage_line(cov))
    sources = pl.DataFrame(
        [
            {
                "source": s["path"],
                "format": s["format"],
                "schema": s["schema_version"] or "",
                "events": s["events"],
                "read": "yes" if s["read"] else "no",
            }
            for s in run["sources"]
        ],
        schema={
            "source": pl.String,
            "format": pl.String,
            "schema": pl.String,
            "events": pl.Int64,
            "read": pl.String,
        },
    )
    lines += _section("sources", sources, style)
    if run["processes"]:
        procs = pl.DataFrame(
            [
                {
                    "host": p["host"] or "",
                    "pid": p["pid"],
                    "rank": "" if p["rank"] is None else str(p["rank"]),
                    "rank from": p["rank_origin"] or "",
                    "events": p["events"],
                }
                for p in run["processes"]
            ]
        )
        lines += _section("processes", procs, style)
    if run["lanes"]:
        lanes = pl.DataFrame(
            [
                {
                    "lane": l["lane"],
                    "kinds": ", ".join(l["kinds"]),
                    "events": l["events"],
                    "start_ms": _ms(l["start_ns"], origin),
                    "span_ms": round(l["span_ns"] / 1e6, 3),
                }
                for l in run["lanes"]
            ]
        )
        lines += _section("lanes (ms from the first event)", lanes, style)
    if run.get("captures"):
        caps = pl.DataFrame(
            [
                {
                    k: str(c.get(k) or "")
                    for k in (
                        "backend",
                        "device",
                        "workload",
                        "variant",
                        "torch_version",
                        "started_at",
                        "path",
                    )
                }
                for c in run["captures"]
            ]
        )
        lines += _section("captures (capture.json)", caps, style)
    if run["neff_ntff"]:
        pairs = pl.DataFrame(
            [
                {"ntff": p["ntff"] or "", "neff": p["neff"] or "", "mode": p["mode"] or ""}
                for p in run["neff_ntff"]
            ]
        )
        lines += _section("NEFF/NTFF files (not decoded)", pairs, style)
    notes = run["notes"] + [f"{s['path']}: {n}" for s in run["sources"] for n in s["notes"]]
    return lines + _bullets("warnings", run["warnings"], style) + _bullets("notes", notes, style)


def _coverage_line(cov: dict) -> str:
    if not cov["hardware_executions"]:
        return "no hardware executions: nothing ran on a device lane"
    methods = ", ".join(f"{m} {n}" for m, n in cov["by_method"].items()) or "none"
    return (
        f"{cov['linked']} of {cov['hardware_executions']} hardware executions "
        f"({cov['linked_pct']} %) link to a framework op (by {methods}); "
        f"{cov['unlinked']} unlinked"
    )


def _ops(run: dict, style: str) -> list[str]:
    summary = _coverage_line(run["coverage"])
    if run["executions"]:
        summary = (
            f"device time {run['total_device_us']} µs in {run['executions']} executions; {summary}"
        )
    lines = [_heading(f"ops: {run['root']}", style), summary]
    if run["rows"]:
        lines += ["", frame_text(pl.DataFrame(run["rows"], infer_schema_length=None), style)]
    return lines


CHAIN_SHOWN = {
    "op": "op",
    "hw_name": "hardware",
    "lane": "lane",
    "link_method": "link",
    "dispatch_to_schedule_us": "dispatch→schedule µs",
    "schedule_to_hw_us": "schedule→hw µs",
    "dispatch_to_hw_us": "dispatch→hw µs",
    "hw_duration_us": "hw µs",
    "hw_start_ms": "hw start ms",
}


def _chain(run: dict, style: str) -> list[str]:
    lines = [_heading(f"chain: {run['root']}", style), _coverage_line(run["coverage"])]
    if not run["rows"]:
        return lines
    df = pl.DataFrame(run["rows"], infer_schema_length=None)
    if "hw_start_ns" in df.columns:  # per execution: show when, relative to the first one
        df = df.with_columns(hw_start_ms=((pl.col("hw_start_ns") - run["start_ns"]) / 1e6).round(3))
    shown = [c for c in CHAIN_SHOWN if c in df.columns]
    rest = [c for c in df.columns if c.endswith("_us") and c not in shown or c in ("executions",)]
    df = df.select(shown + rest).rename({c: CHAIN_SHOWN[c] for c in shown})
    return lines + ["", frame_text(df, style)]


def _us(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1000, 1)


def _verdict(run: dict) -> str:
    s, w = run["summary"], run["window"]
    if not s["lanes"]:
        return "no hardware lanes: this profile records host activity only (no hardware executions)"
    if not s["executions"]:
        return "no hardware executions in the window: nothing to measure"
    causes = {c: ns for c, ns in s["idle_by_cause_ns"].items() if ns}
    top = max(causes, key=causes.get) if causes else None
    longest = f", longest {_us(s['gap_max_ns'])} µs" if s["gap_count"] else ""
    text = (
        f"{s['devices']} device(s) idle {s['idle_pct']} % of the {w['origin']} "
        f"({_us(s['idle_ns'])} µs in {s['gap_count']} gaps{longest})"
    )
    if top:
        text += f"; top cause {top}: {_us(causes[top])} µs"
    return ("FAILED " + "; ".join(run["failed"]) + ". " if run["failed"] else "") + text


AGGREGATE = {  # --by: which table, and its first column
    "device": ("devices", "device"),
    "lane": ("lanes", "lane"),
    "op": ("ops", "op"),
}


def _aggregate(run: dict, by: str, top: int) -> pl.DataFrame:
    rows = run[AGGREGATE[by][0]]
    if by == "op":
        return _ops_idle(rows[:top])
    return pl.DataFrame(
        [
            {
                AGGREGATE[by][1]: r[AGGREGATE[by][1]],
                "busy µs": _us(r["busy_ns"]),
                "idle µs": _us(r["idle_ns"]),
                "idle %": r["idle_pct"],
                "leading µs": _us(r["leading_ns"]),
                "trailing µs": _us(r["trailing_ns"]),
                "executions": r["executions"],
                "gaps": r["gap_count"],
                "p50 µs": _us(r["gap_p50_ns"]),
                "p90 µs": _us(r["gap_p90_ns"]),
                "p99 µs": _us(r["gap_p99_ns"]),
                "max µs": _us(r["gap_max_ns"]),
            }
            for r in rows
        ]
    )


def _ops_idle(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "op": r["op"],
                "idle before µs": _us(r["idle_before_ns"]),
                "gaps": r["gaps"],
                **{c: _us(r[f"{c}_ns"]) for c in CAUSES},
                "transfers": r["transfers"] or "",
            }
            for r in rows
        ]
    )


def _gap_rows(gaps: list[dict], where: str, origin: int) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                where: g[where],
                "at ms": round((g["start_ns"] - origin) / 1e6, 3),
                "gap µs": _us(g["duration_ns"]),
                "cause": g["cause"],
                "after op": g["prev_op"] or f"({g['prev_name']})",
                "next op": g["next_op"] or "(unlinked)",
                "evidence": g.get(f"{g['cause']}_event") or "",
            }
            for g in gaps
        ]
    )


def _gaps(run: dict, style: str, by: str = "device", top: int = 10) -> list[str]:
    lines = [
        _heading(f"gaps: {run['root']}", style),
        "",
        f"**{_verdict(run)}**" if style == MARKDOWN else _verdict(run),
    ]
    if not run["summary"]["executions"]:
        return lines
    origin = run["window"]["start_ns"]
    table = _aggregate(run, by, top)
    if table.height:
        lines += _section(f"by {by} (µs)", table, style)
    dg = run["device_gaps"]
    longest = (
        dg.top(top, "duration_ns")
        if isinstance(dg, Rows)
        else sorted(dg, key=lambda g: -g["duration_ns"])[:top]
    )
    if longest:
        lines += _section(
            f"top {len(longest)} gaps (device idle; at = ms from the window start)",
            _gap_rows(longest, "device", origin),
            style,
        )
    if by != "op" and run["ops"]:
        ops = run["ops"]
        lines += _section("idle before each op (µs, by cause)", _ops_idle(ops[:top]), style)
        if len(ops) > top:
            lines.append(f"... and {len(ops) - top} more ops (--top to show more)")
    if style == MARKDOWN and run["gaps"]:
        lines += [
            "",
            f"<details><summary>all {len(run['gaps'])} gaps, per lane</summary>",
            "",
            frame_text(_gap_rows(run["gaps"], "lane", origin), style),
            "",
            "</details>",
        ]
    return lines


def _diff(run: dict, style: str, top: int = 10) -> list[str]:
    verdict = ("FAILED " + "; ".join(run["failed"]) + ". " if run["failed"] else "") + run[
        "verdict_text"
    ]
    lines = [
        _heading(f"diff: {run['root']}", style),
        "",
        f"**{verdict}**" if style == MARKDOWN else verdict,
    ]
    shown = [m for m in run["metrics"] if m["base"] or m["head"]]
    metrics = pl.DataFrame(
        [
            {
                "metric": m["what"],
                "base": _num(m["base"]),
                "head": _num(m["head"]),
                "change": _signed(m["delta"]),
                "change %": _signed(m["pct_delta"]),
            }
            for m in shown
        ]
    )
    lines += _section("key numbers (head − base)", metrics, style)
    changed = [
        o
        for o in run["ops"]
        if o["device_us_delta"] or o["calls_delta"] or o["idle_before_us_delta"]
    ][:top]
    if changed:
        lines += _section(
            f"ops that changed most (device µs; top {len(changed)})", _op_changes(changed), style
        )
    for title, ops in (
        ("ops added in head", run["added"]),
        ("ops removed in head", run["removed"]),
    ):
        if ops:
            names = ", ".join(
                f"{o['name']} ({_num(_first(o['device_us_head'], o['device_us_base']))} µs)"
                for o in ops[:top]
            )
            more = f", and {len(ops) - top} more" if len(ops) > top else ""
            lines += ["", f"{title}: {names}{more}"]
    return lines


def _first(*values):
    return next((v for v in values if v is not None), None)


def _num(v) -> str:
    return "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def _signed(v) -> str:
    return "" if v is None else f"{v:+g}"


def _op_changes(ops: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "op": o["name"],
                "calls": f"{_num(o['calls_base'])} → {_num(o['calls_head'])}",
                "device base": _num(o["device_us_base"]),
                "device head": _num(o["device_us_head"]),
                "device Δ": _signed(o["device_us_delta"]),
                "idle before Δ": _signed(o["idle_before_us_delta"]),
            }
            for o in ops
        ]
    )


def _trend(run: dict, style: str) -> list[str]:
    rows = pl.DataFrame(
        run["rows"],
        schema={
            "group": pl.String,
            "time": pl.String,
            "run_id": pl.String,
            "idle_pct": pl.Float64,
            "device_time_ms": pl.Float64,
            "executions": pl.Int64,
            "devices": pl.Int64,
        },
    )
    lines = [
        _heading(f"trend: {run['root']}", style),
        f"{rows.height} runs in {rows['group'].n_unique()} groups"
        + (f"; {run['failed_runs']} failed runs left out" if run["failed_runs"] else ""),
    ]
    return lines + _section("idle % and device time over time", rows.drop("devices"), style)


LAYOUTS = {
    "info": _info,
    "ops": _ops,
    "chain": _chain,
    "gaps": _gaps,
    "diff": _diff,
    "trend": _trend,
}
