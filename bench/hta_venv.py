"""What every script that runs HTA in its own venv puts first in the code it runs there.

HTA is published on PyPI as ``HolisticTraceAnalysis`` up to 0.5 and as ``traceinsight`` since
0.6; ``hta_version()`` (defined by ``PRELUDE``, in the HTA venv's process) names whichever is
installed, with its version.
"""

PRELUDE = r"""
from importlib.metadata import PackageNotFoundError, version

def hta_version():
    for name in ("traceinsight", "HolisticTraceAnalysis"):
        try:
            return name + " " + version(name)
        except PackageNotFoundError:
            pass
    return "unknown"
"""
