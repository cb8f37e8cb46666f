"""Run action.yml's steps on this machine, in order, as a GitHub runner runs a composite action.

Each step's `${{ ... }}` expressions are substituted (inputs.*, github.token, github.action_path,
steps.ID.outputs.*; anything else is refused, so an expression the action starts using must be
taught here first); its `run:` goes to `bash --noprofile --norc -eo pipefail`, GitHub's
`shell: bash`, with GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files of its own and the step's env;
a failed step skips the rest (the default `if: success()`). From the command line:

    python tests/ci/run_action.py --input base=fixtures/rmsnorm_naive \\
        --input head=fixtures/rmsnorm_fused --input install=none --input fail-on='idle_pct_delta>2'
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
NAME = re.compile(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*")


@dataclass
class Step:
    id: str
    rc: int | None  # None: skipped
    outputs: dict[str, str] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""


@dataclass
class Result:
    steps: list[Step]
    outputs: dict[str, str]
    summary: str

    @property
    def failed(self) -> bool:
        return any(s.rc for s in self.steps)

    def step(self, step_id: str) -> Step:
        return next(s for s in self.steps if s.id == step_id)

    @property
    def log(self) -> str:
        return "".join(s.stdout + s.stderr for s in self.steps)


def substitute(text: str, ctx: dict) -> str:
    """``text`` with each ``${{ a.b.c }}`` replaced by its value in ``ctx`` (missing: '')."""
    def value(m: re.Match[str]) -> str:
        expr = m.group(1)
        if not NAME.fullmatch(expr):
            raise ValueError(f"expression not supported by run_action.py: {m.group(0)}")
        if expr.split(".")[0] not in ctx:
            raise ValueError(f"context not supported by run_action.py: {m.group(0)}")
        v: object = ctx
        for part in expr.split("."):
            v = v.get(part, "") if isinstance(v, dict) else ""
        return str(v)
    return EXPR.sub(value, text)


def parse_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's ``name=value`` lines and ``name<<DELIM`` blocks."""
    out, lines = {}, iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            block = []
            for inner in lines:
                if inner == delim:
                    break
                block.append(inner)
            out[name] = "\n".join(block)
        elif "=" in line:
            name, v = line.split("=", 1)
            out[name] = v
    return out


def run_action(inputs: dict[str, str], env: dict[str, str], *, action_path: Path = ROOT,
               cwd: Path | None = None, token: str = "test-token") -> Result:
    """Run action_path/action.yml with ``inputs`` under ``env`` (which must hold RUNNER_TEMP)."""
    action = yaml.safe_load((action_path / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    github = {"token": token, "action_path": str(action_path)}
    given = {}
    for name, spec in action["inputs"].items():
        if name in inputs:
            given[name] = inputs[name]
        elif spec.get("required"):
            raise ValueError(f"input {name} is required")
        else:
            given[name] = substitute(str(spec.get("default", "")), {"github": github})
    unknown = set(inputs) - set(given)
    assert not unknown, f"not inputs of action.yml: {unknown}"
    ctx: dict = {"inputs": given, "github": github, "steps": {}}
    temp = Path(env["RUNNER_TEMP"])
    steps: list[Step] = []
    summary = ""
    for i, spec in enumerate(action["runs"]["steps"]):
        step_id = spec.get("id", f"__{i}")
        if any(s.rc for s in steps):
            steps.append(Step(step_id, None))
            continue
        assert "if" not in spec and "uses" not in spec, f"run_action.py runs plain steps: {spec}"
        assert spec.get("shell") == "bash", f"step {step_id}: shell: bash"
        files = {k: temp / f"_step{i}_{k}" for k in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
        for f in files.values():
            f.write_text("")
        script = temp / f"_step{i}.sh"
        script.write_text(substitute(spec["run"], ctx))
        step_env = {**env, **{k: str(f) for k, f in files.items()},
                    "GITHUB_ACTION_PATH": str(action_path),
                    **{k: substitute(str(v), ctx) for k, v in (spec.get("env") or {}).items()}}
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                           cwd=cwd, env=step_env, capture_output=True, text=True, timeout=600)
        outputs = parse_outputs(files["GITHUB_OUTPUT"].read_text())
        summary += files["GITHUB_STEP_SUMMARY"].read_text()
        steps.append(Step(step_id, p.returncode, outputs, p.stdout, p.stderr))
        ctx["steps"][step_id] = {"outputs": outputs}
    outputs = {k: substitute(str(v["value"]), ctx) for k, v in action.get("outputs", {}).items()}
    return Result(steps, outputs, summary)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--event", help="an event JSON (default: a pull_request event, PR 1)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        event = a.event or str(Path(tmp) / "event.json")
        if not a.event:
            Path(event).write_text(json.dumps({"pull_request": {"number": 1}}))
        env = {**os.environ, "RUNNER_TEMP": tmp, "GITHUB_EVENT_PATH": event,
               "GITHUB_REPOSITORY": os.environ.get("GITHUB_REPOSITORY", "owner/repo")}
        r = run_action(dict(i.split("=", 1) for i in a.input), env)
        for s in r.steps:
            print(f"--- step {s.id}: " + ("skipped" if s.rc is None else f"exit {s.rc}"))
            print(s.stdout + s.stderr, end="")
        print("--- outputs: " + json.dumps(r.outputs, indent=1))
        return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
