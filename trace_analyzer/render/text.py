"""Text for people: plain tables for a terminal and Markdown for pull requests.

Tables are drawn by polars' own formatter. Times are shown in ms or µs, as the headers say.
"""

from __future__ import annotations

from typing import Callable

import polars as pl

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
    ):
        return str(df)


def render_table(kind: str, data: dict) -> str:
    """Return the terminal text of a result."""
    return _render(kind, data, TABLE)


def render_markdown(kind: str, data: dict) -> str:
    """Return the Markdown of a result, fit to paste into a pull request."""
    return _render(kind, data, MARKDOWN)


def _render(kind: str, data: dict, style: str) -> str:
    layout: Callable[[dict, str], list[str]] = LAYOUTS[kind]
    return "\n\n".join("\n".join(layout(run, style)) for run in data["runs"]) + "\n"


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
    lines = [_heading(f"run: {run['root']}", style),
             f"{run['events']} events over {_ms(run['end_ns'], origin)} ms; "
             f"{run['hardware_lanes']} hardware lanes; layout: {', '.join(run['layouts']) or 'plain files'}"]
    if cov.get("hardware_executions"):
        lines.append(_coverage_line(cov))
    sources = pl.DataFrame(
        [{"source": s["path"], "format": s["format"], "schema": s["schema_version"] or "",
          "events": s["events"], "read": "yes" if s["read"] else "no"} for s in run["sources"]],
        schema={"source": pl.String, "format": pl.String, "schema": pl.String,
                "events": pl.Int64, "read": pl.String},
    )
    lines += _section("sources", sources, style)
    if run["processes"]:
        procs = pl.DataFrame(
            [{"host": p["host"] or "", "pid": p["pid"], "rank": "" if p["rank"] is None else str(p["rank"]),
              "rank from": p["rank_origin"] or "", "events": p["events"]} for p in run["processes"]]
        )
        lines += _section("processes", procs, style)
    if run["lanes"]:
        lanes = pl.DataFrame(
            [{"lane": l["lane"], "kinds": ", ".join(l["kinds"]), "events": l["events"],
              "start_ms": _ms(l["start_ns"], origin), "span_ms": round(l["span_ns"] / 1e6, 3)}
             for l in run["lanes"]]
        )
        lines += _section("lanes (ms from the first event)", lanes, style)
    if run["neff_ntff"]:
        pairs = pl.DataFrame(
            [{"ntff": p["ntff"] or "", "neff": p["neff"] or "", "mode": p["mode"] or ""}
             for p in run["neff_ntff"]]
        )
        lines += _section("NEFF/NTFF files (not decoded)", pairs, style)
    notes = run["notes"] + [f"{s['path']}: {n}" for s in run["sources"] for n in s["notes"]]
    return lines + _bullets("warnings", run["warnings"], style) + _bullets("notes", notes, style)


def _coverage_line(cov: dict) -> str:
    if not cov["hardware_executions"]:
        return "no hardware executions: nothing ran on a device lane"
    methods = ", ".join(f"{m} {n}" for m, n in cov["by_method"].items()) or "none"
    return (f"{cov['linked']} of {cov['hardware_executions']} hardware executions "
            f"({cov['linked_pct']} %) link to a framework op (by {methods}); "
            f"{cov['unlinked']} unlinked")


def _ops(run: dict, style: str) -> list[str]:
    summary = _coverage_line(run["coverage"])
    if run["executions"]:
        summary = f"device time {run['total_device_us']} µs in {run['executions']} executions; {summary}"
    lines = [_heading(f"ops: {run['root']}", style), summary]
    if run["rows"]:
        lines += ["", frame_text(pl.DataFrame(run["rows"], infer_schema_length=None), style)]
    return lines


CHAIN_SHOWN = {
    "op": "op", "hw_name": "hardware", "lane": "lane", "link_method": "link",
    "dispatch_to_schedule_us": "dispatch→schedule µs", "schedule_to_hw_us": "schedule→hw µs",
    "dispatch_to_hw_us": "dispatch→hw µs", "hw_duration_us": "hw µs", "hw_start_ms": "hw start ms",
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


LAYOUTS = {"info": _info, "ops": _ops, "chain": _chain}
