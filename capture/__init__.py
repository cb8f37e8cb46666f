"""capture: run a workload under torch.profiler and write the profile directory traceana reads.

    import capture
    capture.profile(step_fn, "./profile_out", steps=4, wait=2, warmup=1, active=1)

Importing this package costs nothing when torch is absent: torch is imported when a capture
runs, and a missing torch gives a clear message naming the ``capture`` extra. Nothing here
imports ``trace_analyzer``.
"""

from .core import CaptureInfo, NeuronOptions, Schedule, profile, require_torch

__all__ = ["CaptureInfo", "NeuronOptions", "Schedule", "profile", "require_torch"]
