"""The one compiled part of traceana, optional: its absence costs only the one-line message
when native code aborts the process (trace_analyzer/cli/fault.py). Everything else of the
build is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("trace_analyzer.cli._fault", ["trace_analyzer/cli/_fault.c"], optional=True)
    ]
)
