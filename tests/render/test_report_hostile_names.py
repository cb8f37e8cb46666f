"""Names with matplotlib mathtext in them (`$...$`, an unclosed `$\\frac{`) are data: the
report draws them, it does not die parsing them (issue 18)."""

from __future__ import annotations

import pytest
from conftest import X, kineto, run_cli, write_trace

NAMES = ["aten::$x_1$ cost", "op $\\frac{1}{0", "lane$"]


@pytest.mark.parametrize("output", ["r.md", "r.html"])
def test_a_report_of_names_with_dollars_is_written(tmp_path, output):
    pytest.importorskip("matplotlib")
    events = []
    for i, name in enumerate(NAMES):
        t = 1000 + 100 * i
        events.append(X("cpu_op", name, t, 20, **{"External id": i + 1}))
        events.append(X("cuda_runtime", "cudaLaunchKernel", t + 5, 5, correlation=i + 1))
        events.append(X("kernel", f"k$_{i}", t + 30, 40, pid=0, tid=7, device=0, stream=7,
                        correlation=i + 1))
    write_trace(tmp_path / "run" / "trace.json", kineto(events))
    code, out, err = run_cli("report", tmp_path / "run", "-o", tmp_path / output, "--no-cache")
    assert code == 0, err
    page = (tmp_path / output).read_text()
    assert "internal error" not in err
    assert "x_1" in page  # the name is there, as text
