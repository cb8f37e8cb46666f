"""The sentence that says why each gap's cause holds, in words, written for the rows that are
read (``Worded``: a text report lists a few dozen of hundreds of thousands of gaps); the
numbers it cites are the gap row's columns (``evidence.py``, ``host.py``, ``waits.py``;
docs/gaps.md, "Evidence").
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from trace_analyzer.numbers import duration, duration_expr
from trace_analyzer.questions.gaps.evidence import HOST_SPLIT
from trace_analyzer.questions.gaps.host import long_launch


def span(ns: pl.Expr) -> pl.Expr:
    """Return a duration in ns as words, as every text output writes one: ``850 ns``,
    ``12.3 µs``, ``1.73 ms`` (``numbers.duration_expr``)."""
    return duration_expr(ns)


def _texts(latency_ns: int) -> dict[str, pl.Expr]:
    """Return per cause the expression of its gaps' evidence, durations in words."""
    return {**_host_texts(latency_ns), **_device_texts(), **_stream_texts(latency_ns)}


def _host_texts(latency_ns: int) -> dict[str, pl.Expr]:
    """Return the evidence of the causes decided on the host's side (``host.py``)."""
    start, launch = pl.col("start_ns"), pl.col("launch_ns")
    return {
        "host_dispatch": pl.concat_str(
            pl.format(
                "next launched {} after the lane went idle (host: {} in framework ops, {} in "
                "runtime calls, {} in synchronize, {} untraced)",
                span(launch - start),
                *(span(pl.col(c)) for c in HOST_SPLIT),
            ),
            *_held_words(latency_ns),
            ignore_nulls=True,
        ),
        "launch_blocked": pl.concat_str(
            pl.format(
                "{} held the next execution {} of the gap ({} %; a launch call takes {} here "
                "at the median)",
                pl.col("next_runtime").cast(pl.String).fill_null("the launch call"),
                span(pl.col("launch_call_ns")),
                (100 * pl.col("launch_call_ns").cast(pl.Float64) / pl.col("duration_ns"))
                .round(0)
                .cast(pl.Int64),
                span(pl.col("launch_typical_ns")),
            ),
            pl.when(launch > start).then(
                pl.format("; called {} after the lane went idle", span(launch - start))
            ),
            *_held_words(None),
            ignore_nulls=True,
        ),
    }


def _device_texts() -> dict[str, pl.Expr]:
    """Return the evidence of the causes decided on the device's side (``waits.py``)."""
    start, launch, end = pl.col("start_ns"), pl.col("launch_ns"), pl.col("end_ns")
    queued, after = span(start - launch), span(end - start)  # null where no launch is recorded
    return {
        "collective": pl.when(pl.col("comm_lane"))
        .then(pl.lit("a communication lane: it waits for its peers, not for the host"))
        .when(~(2 * pl.col("comm_ns") >= pl.col("device_wait_ns")).fill_null(False))
        .then(pl.format("next is a collective, queued {} before: waiting for peers", queued))
        .otherwise(
            pl.concat_str(
                _queued_then_waited(),
                pl.format(
                    " while {} ran on another lane of this device ({} % of the wait): exposed "
                    "communication",
                    "comm_event",
                    (100 * pl.col("comm_ns").cast(pl.Float64) / pl.col("device_wait_ns"))
                    .round(0)
                    .cast(pl.Int64),
                ),
                pl.when(pl.col("wait_call").is_not_null()).then(
                    pl.concat_str(pl.lit("; after "), _wait_call_words())
                ),
                _meanwhile(),
                ignore_nulls=True,
            )
        ),
        "event_wait": pl.concat_str(
            _queued_then_waited(),
            pl.lit(" behind "),
            _wait_call_words(),
            pl.lit(": the stream waited on an event"),
            _meanwhile(),
            ignore_nulls=True,
        ),
        "uncorrelated": pl.concat_str(
            pl.lit("no launch recorded for the next execution"),
            pl.when(2 * pl.col("comm_ns") >= pl.col("duration_ns")).then(
                pl.format(
                    "; {} ran on another lane of this device over {} of the gap",
                    "comm_event",
                    span(pl.col("comm_ns")),
                )
            ),
            ignore_nulls=True,
        ),
        "runtime": pl.when(launch >= start)
        .then(
            pl.concat_str(
                _queued_then_waited(),
                pl.lit(": nothing the trace records explains the wait"),
                _meanwhile(),
                ignore_nulls=True,
            )
        )
        .otherwise(
            pl.format("launched {} before the lane went idle, started {} after it", queued, after)
        ),
    }


def _stream_texts(latency_ns: int) -> dict[str, pl.Expr]:
    """Return the evidence of the causes decided on the gap's own stream or core."""
    start, launch, end = pl.col("start_ns"), pl.col("launch_ns"), pl.col("end_ns")
    share = {
        c: 100 * pl.col(c).cast(pl.Float64) / pl.col("duration_ns")
        for c in ("transfer_ns", "sync_ns")
    }  # floats: 100 × ns overflows Int64
    pct, spct = (share[c].round(0).cast(pl.Int64) for c in ("transfer_ns", "sync_ns"))
    queued, after = span(start - launch), span(end - start)  # null where no launch is recorded
    return {
        "transfer": pl.format(
            "{} covers {} % of the gap ({})",
            pl.col("transfer_event").fill_null("a copy"),  # a longer one, started earlier
            pct,
            span(pl.col("transfer_ns")),
        ),
        "graph": pl.lit("between two kernels of one graph replay"),
        "launch_latency": pl.format(
            "queued {} before, started {} after the previous (≤ {})",
            queued,
            after,
            pl.lit(duration(latency_ns)),
        ),
        "sync": pl.format(
            "{} covers {} % of the gap",
            pl.col("sync_event").fill_null("a synchronisation"),  # a longer one, started earlier
            spct,
        ),
    }


def _queued_then_waited() -> pl.Expr:
    """Return the words for when the next execution was queued (its launch call's end) and
    how long it then waited on the device (``waits.py``)."""
    start, end, wait = pl.col("start_ns"), pl.col("end_ns"), pl.col("device_wait_ns")
    queued_at = end - wait  # the later of the call's end and the lane's idle moment
    when = (
        pl.when(pl.col("launch_ns") + pl.col("launch_call_ns") > start)
        .then(pl.format("queued {} after the lane went idle", span(queued_at - start)))
        .otherwise(pl.lit("queued before the lane went idle"))
    )
    return pl.format("{}, then waited {} on the device", when, span(wait))


def _wait_call_words() -> pl.Expr:
    """Return the words for the stream wait called before the launch (``wait_call``)."""
    at = pl.col("wait_call_ns")
    return pl.format(
        "{} (called {})",
        "wait_call",
        pl.when(at >= 0)
        .then(pl.format("{} after the lane went idle", span(at)))
        .otherwise(pl.format("{} before the lane went idle", span(-at))),
    )


def _meanwhile() -> pl.Expr:
    """Return the words for the call that held the launching thread meanwhile, if one did."""
    return pl.when(pl.col("host_call").is_not_null()).then(
        pl.format(
            "; meanwhile the host was in {} for {}", "host_call", span(pl.col("host_call_ns"))
        )
    )


def _held_words(latency_ns: int | None) -> list[pl.Expr]:
    """Return the clauses that name what held the host (``host.held``) and, with
    ``latency_ns``, a launch call that then took long (``host.long_launch``): each null where
    there is nothing to say."""
    words: list[pl.Expr] = [
        pl.when(pl.col("host_data_loader_ns") > 0).then(
            pl.format("; {} inside the DataLoader's __next__", span(pl.col("host_data_loader_ns")))
        ),
        pl.when(pl.col("host_compiled_ns") > 0).then(
            pl.format("; {} inside a Torch-Compiled Region", span(pl.col("host_compiled_ns")))
        ),
        pl.when(pl.col("host_call").is_not_null()).then(
            pl.format("; {} in {}", span(pl.col("host_call_ns")), "host_call")
        ),
        pl.when(pl.col("host_frame").is_not_null()).then(
            pl.concat_str(
                pl.format(
                    "; {} in the Python frame {}", span(pl.col("host_frame_ns")), "host_frame"
                ),
                pl.when(pl.col("host_caller").is_not_null()).then(
                    pl.format(" (called from {})", "host_caller")
                ),
                ignore_nulls=True,
            )
        ),
    ]
    if latency_ns is not None:
        words.append(
            pl.when(long_launch(latency_ns)).then(
                pl.format(
                    "; then {} itself took {}",
                    pl.col("next_runtime").cast(pl.String).fill_null("the launch call"),
                    span(pl.col("launch_call_ns")),
                )
            )
        )
    return words


def sentence(gaps: pl.DataFrame, latency_ns: int) -> pl.DataFrame:
    """Return ``gaps`` with ``evidence``: the numbers that decided each cause, in words.

    Each cause's sentences are made from its own gaps only: a ``when`` chain builds every
    cause's sentence for every gap before it chooses one (at 750,000 gaps, 0.15 GB more at
    the peak, and twice the time); a cause no gap has is not planned (on a few gaps, planning
    the eleven causes' sentences was most of the time)."""
    rows = gaps.lazy().with_row_index("_r")
    present = set(gaps["cause"].drop_nulls().unique().to_list())  # planning a cause costs
    found = pl.concat(
        [
            rows.filter(pl.col("cause") == cause).select("_r", evidence=text)
            for cause, text in _texts(latency_ns).items()
            if cause in present
        ]
        or [rows.select("_r", evidence=pl.lit(None, pl.String)).clear()]
    ).collect()
    order = pl.DataFrame({"_r": pl.int_range(gaps.height, dtype=pl.UInt32, eager=True)})
    evidence = order.join(found, on="_r", how="left", maintain_order="left")["evidence"]
    return gaps.with_columns(evidence=evidence)


Made = Callable[[], pl.DataFrame]  # what makes a table
Shape = Callable[[pl.DataFrame], pl.DataFrame]  # a table made of another


class Worded:
    """A gaps table whose ``evidence`` is written when it is read (``analyses.results.Later``):
    ``bare``, the table with that column null (``causes.attribute``), and the --latency the
    sentences cite. With ``source`` (what makes a table, a function) the table is the function
    of the source's (the devices' gaps, the lanes' renamed: ``lanes_are_devices``), its sentences
    the source's, written once for both. ``pick`` words the rows it chooses only: a text
    report lists a few dozen of hundreds of thousands of gaps."""

    def __init__(
        self,
        bare: pl.DataFrame,
        latency_ns: int,
        source: tuple[Made, Shape] | None = None,
    ) -> None:
        self.bare, self.latency_ns, self.source = bare, latency_ns, source
        self.made: pl.DataFrame | None = None

    @property
    def height(self) -> int:
        """The table's rows (the bare table's)."""
        return self.bare.height

    def __call__(self) -> pl.DataFrame:
        """Return the whole table, its evidence written (once)."""
        if self.made is None:
            if self.source is None:
                self.made = sentence(self.bare, self.latency_ns)
            else:
                of, shaped = self.source
                self.made = shaped(of())
        return self.made

    def pick(self, choose: Shape) -> pl.DataFrame:
        """Return ``choose`` of the table (rows chosen by columns other than ``evidence``),
        the evidence written for those rows only where the whole is not written yet."""
        if self.made is not None:
            return choose(self.made)
        return sentence(choose(self.bare), self.latency_ns)
