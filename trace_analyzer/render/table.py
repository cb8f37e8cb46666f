"""Plain-text tables for people, drawn by polars' table formatter."""

from __future__ import annotations

import polars as pl


def frame_text(df: pl.DataFrame) -> str:
    """Return df as a text table with every row and column shown."""
    with pl.Config(
        tbl_formatting="ASCII_MARKDOWN",
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=400,
        fmt_str_lengths=200,
        fmt_table_cell_list_len=10,
        tbl_cell_numeric_alignment="RIGHT",
    ):
        return str(df)


def render(kind: str, data: dict) -> str:
    """Return the text form of a result."""
    return {"info": _info}[kind](data)


def _ms(ns: int | None, origin: int | None) -> float | None:
    return None if ns is None or origin is None else round((ns - origin) / 1e6, 3)


def _info(data: dict) -> str:
    parts = []
    for run in data["runs"]:
        parts.append(_run(run))
    return "\n\n".join(parts) + "\n"


def _run(run: dict) -> str:
    origin = run["start_ns"]
    span = _ms(run["end_ns"], origin)
    lines = [f"run: {run['root']}  ({run['events']} events, {span} ms, "
             f"{run['hardware_lanes']} hardware lanes; layout: {', '.join(run['layouts']) or 'plain files'})"]
    sources = pl.DataFrame(
        [{"source": s["path"], "format": s["format"], "schema": s["schema_version"] or "",
          "events": s["events"], "read": "yes" if s["read"] else "no"} for s in run["sources"]],
        schema={"source": pl.String, "format": pl.String, "schema": pl.String,
                "events": pl.Int64, "read": pl.String},
    )
    lines += ["", "sources:", frame_text(sources)]
    if run["processes"]:
        procs = pl.DataFrame(
            [{"host": p["host"] or "", "pid": p["pid"], "rank": p["rank"],
              "rank from": p["rank_origin"] or "", "events": p["events"]} for p in run["processes"]]
        )
        lines += ["", "processes:", frame_text(procs)]
    if run["lanes"]:
        lanes = pl.DataFrame(
            [{"lane": l["lane"], "kinds": ", ".join(l["kinds"]), "events": l["events"],
              "start_ms": _ms(l["start_ns"], origin), "span_ms": round(l["span_ns"] / 1e6, 3)}
             for l in run["lanes"]]
        )
        lines += ["", "lanes (times in ms from the first event):", frame_text(lanes)]
    if run["neff_ntff"]:
        pairs = pl.DataFrame(
            [{"ntff": p["ntff"] or "", "neff": p["neff"] or "", "mode": p["mode"] or ""}
             for p in run["neff_ntff"]]
        )
        lines += ["", "NEFF/NTFF files (not decoded):", frame_text(pairs)]
    notes = run["notes"] + [f"{s['path']}: {n}" for s in run["sources"] for n in s["notes"]]
    for label, items in (("warnings", run["warnings"]), ("notes", notes)):
        if items:
            lines += ["", f"{label}:"] + [f"- {w}" for w in items]
    return "\n".join(lines)
