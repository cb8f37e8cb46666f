"""Presentation choices of the text renderers: options, never part of a result."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class View:
    """``by``: the table a gaps report leads with (device, lane or op); ``top``: how many
    gaps, ops or changed ops the text reports show."""

    by: str = "device"
    top: int = 10
