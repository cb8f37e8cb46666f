"""Stand-in for torch_neuronx.profiling: NeuronConfig, ProfileMode, NeuronProfiler (recording)."""

import enum
import json
import os
from pathlib import Path

from . import CALLS


class ProfileMode(enum.Enum):
    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


class NeuronConfig:
    def __init__(self, **kwargs):
        CALLS.append(("NeuronConfig", kwargs))
        self.kwargs = kwargs


class NeuronProfiler:
    def __init__(self, config):
        CALLS.append(("NeuronProfiler", config))
        self.config = config

    def export_trace(self, prof):
        """Write what torch-neuronx writes, in its session layout, with a tiny trace."""
        CALLS.append(("export_trace", prof))
        out = Path(self.config.kwargs["profile_output_dir"])
        session = out / f"i-0stub_pid_{os.getpid()}" / "20261129_120000_000"
        session.mkdir(parents=True, exist_ok=True)
        (session / "ntrace.pb").write_bytes(b"stub")
        doc = {"baseTimeNanoseconds": 1_793_620_800_000_000_000, "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": os.getpid(),
             "tid": 1, "ts": 1.0, "dur": 2.0, "args": {"External id": 1}}]}
        (session / "trace.json").write_text(json.dumps(doc))
