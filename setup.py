"""The compiled parts of traceana, all optional: a machine without a compiler installs and
runs without them. Without _fault, native code that aborts the process loses its one-line
message (trace_analyzer/cli/fault.py); without _kscan, Kineto traces are read by the polars
path (trace_analyzer/readers/kineto_native.py); without _ekeys, an Explorer export's link keys
are lifted by polars alone (trace_analyzer/readers/explorer_keys.py); without _replay, the
critical path's what-ifs are replayed by Python (trace_analyzer/questions/critical/replay.py).
Everything else of the
build is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("trace_analyzer.cli._fault", ["trace_analyzer/cli/_fault.c"], optional=True),
        Extension(
            "trace_analyzer.readers._kscan",
            ["trace_analyzer/readers/_kscan.c"],
            depends=["trace_analyzer/readers/_arrow.h", "trace_analyzer/readers/_arrow_abi.h"],
            optional=True,
        ),
        Extension(
            "trace_analyzer.questions.critical._replay",
            ["trace_analyzer/questions/critical/_replay.c"],
            depends=["trace_analyzer/readers/_arrow.h", "trace_analyzer/readers/_arrow_abi.h"],
            optional=True,
        ),
        Extension(
            "trace_analyzer.readers._ekeys",
            ["trace_analyzer/readers/_ekeys.c"],
            depends=["trace_analyzer/readers/_arrow.h", "trace_analyzer/readers/_arrow_abi.h"],
            optional=True,
        ),
    ]
)
