"""action.yml run here, step by step (tests/ci/run_action.py), against a stub `gh`.

The action's install step is `install: none` (the traceana of this .venv on PATH) except in the
slow tests, which pip-install the repository's source, and a built wheel, into a fresh venv.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path

import pytest
import yaml
from run_action import ROOT, Result, run_action

MARKER = "<!-- traceana-diff -->"
GATES = "idle_pct_delta>2, device_time_pct_delta>5"
REPO = "octo/proj"
PR = 17
VENV_BIN = Path(sys.executable).parent
SCRIPTS = sorted((ROOT / "ci" / "action").glob("*.sh"))

# `slow`: a venv and a real pip install (~6 s each); `-m 'not slow'` leaves them out. The mark
# is not registered (pyproject.toml is not this file's to edit, and a tests/ci/conftest.py
# would shadow the `conftest` that other tests import from), hence the hushed warning.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
    slow = pytest.mark.slow

# gh: records each call (argv, GH_TOKEN, the --input body) in $STUB_STATE, and keeps the
# comments there: `gh api --paginate` lists them two to a page (one JSON list per page, as
# gh prints them), POST adds one, PATCH edits one; STUB_REFUSE=1 answers writes with a 403.
GH = '''#!PYTHON
import json, os, sys
from pathlib import Path
state = Path(os.environ["STUB_STATE"])
doc = json.loads(state.read_text())
args = sys.argv[1:]
method = args[args.index("--method") + 1] if "--method" in args else "GET"
path = next(a for a in args if a.startswith("repos/"))
call = {"argv": args, "method": method, "path": path, "token": os.environ.get("GH_TOKEN")}
if "--input" in args:
    call["input"] = json.loads(Path(args[args.index("--input") + 1]).read_text())
doc["calls"].append(call)
state.write_text(json.dumps(doc))
comments = doc["comments"]
if method == "GET":
    pages = [comments[i:i + 2] for i in range(0, len(comments), 2)] or [[]]
    print("".join(json.dumps(p) for p in pages))
    sys.exit(0)
if os.environ.get("STUB_REFUSE"):
    print("HTTP 403: Resource not accessible by integration", file=sys.stderr)
    sys.exit(1)
if method == "POST":
    comment = {"id": 1000 + len(comments), "user": {"login": "github-actions[bot]"}}
    comments.append(comment)
else:
    cid = int(path.rsplit("/", 1)[1])
    comment = next(c for c in comments if c["id"] == cid)
comment["body"] = call["input"]["body"]
state.write_text(json.dumps(doc))
print(json.dumps({**comment, "html_url": f"https://github.com/x/pull/1#issuecomment-{comment['id']}"}))
'''

# traceana for the argument tests: records its argv, writes what -o names.
TRACEANA = '''#!PYTHON
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("traceana, version stub"); sys.exit(0)
with open(os.environ["STUB_ARGV"], "a") as f:
    f.write(json.dumps(args) + "\\n")
out = args[args.index("-o") + 1]
fmt = args[args.index("--format") + 1]
doc = {"runs": [{"verdict": "unchanged", "failed": []}]}
open(out, "w").write(json.dumps(doc) if fmt == "json" else "## diff\\n")
'''


def stub(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text.replace("PYTHON", sys.executable, 1))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def profiles(tmp_path_factory) -> Path:
    """Copies of the naive and fused fixtures (the analysis cache goes into the copies)."""
    root = tmp_path_factory.mktemp("profiles")
    for name in ("rmsnorm_naive", "rmsnorm_fused"):
        shutil.copytree(ROOT / "fixtures" / name, root / name,
                        ignore=shutil.ignore_patterns(".traceana-cache"))
    return root


class Runner:
    """Runs the action with a fresh $RUNNER_TEMP each time; the stub gh's state persists."""

    def __init__(self, tmp: Path, event: dict | None):
        self.tmp, self.runs = tmp, 0
        self.state = tmp / "gh-state.json"
        self.state.write_text(json.dumps({"comments": [], "calls": []}))
        self.bin = tmp / "bin"
        stub(self.bin, "gh", GH)
        self.event = tmp / "event.json"
        self.event.write_text(json.dumps(event or {"ref": "refs/heads/main"}))
        self.event_name = "pull_request" if event else "push"
        self.extra: dict[str, str] = {}

    def env(self, temp: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
        return {**env, "PATH": f"{self.bin}:{VENV_BIN}:{os.environ['PATH']}",
                "RUNNER_TEMP": str(temp), "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": REPO,
                "GITHUB_EVENT_NAME": self.event_name, "GITHUB_EVENT_PATH": str(self.event),
                "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "4242",
                "STUB_STATE": str(self.state), **self.extra}

    def __call__(self, **inputs: str) -> Result:
        self.runs += 1
        temp = self.tmp / f"runner-temp-{self.runs}"
        temp.mkdir()
        self.temp = temp
        return run_action({"install": "none", **inputs}, self.env(temp), cwd=self.tmp)

    @property
    def calls(self) -> list[dict]:
        return json.loads(self.state.read_text())["calls"]

    @property
    def comments(self) -> list[dict]:
        return json.loads(self.state.read_text())["comments"]


@pytest.fixture
def pr(tmp_path) -> Runner:
    return Runner(tmp_path, {"action": "synchronize", "pull_request": {"number": PR}})


def test_action_yml_is_a_composite_of_scripts():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert {"base", "head", "fail-on", "min-runs", "allow-empty", "allow-empty-gate",
            "allow-mismatch", "comment", "github-token", "python", "install"} <= set(
        action["inputs"])
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert {"verdict", "exit-code"} <= set(action["outputs"])
    for step in action["runs"]["steps"]:
        assert step["shell"] == "bash"
        script = re.fullmatch(r'bash "\$GITHUB_ACTION_PATH/(ci/action/\w+\.sh)"', step["run"])
        assert script and (ROOT / script.group(1)).is_file(), step["run"]


def test_naive_to_fused_posts_one_comment_then_edits_it(pr, profiles):
    inputs = dict(base=str(profiles / "rmsnorm_naive"), head=str(profiles / "rmsnorm_fused"),
                  **{"fail-on": GATES})
    r = pr(**inputs)
    assert not r.failed, r.log
    assert r.outputs["verdict"] == "better" and r.outputs["exit-code"] == "0"
    md = (pr.temp / "traceana-diff.md").read_text()
    assert md.startswith("## diff: ") and "better" in md

    get, post = pr.calls
    assert get["method"] == "GET" and "--paginate" in get["argv"]
    assert get["path"] == f"repos/{REPO}/issues/{PR}/comments?per_page=100"
    assert post["method"] == "POST" and post["path"] == f"repos/{REPO}/issues/{PR}/comments"
    assert post["token"] == "test-token"  # github-token's default, ${{ github.token }}
    body = post["input"]["body"]
    assert body.startswith(MARKER + "\n") and md.rstrip() in body
    assert "**gates: all 2 passed** (`idle_pct_delta>2`, `device_time_pct_delta>5`)" in body
    assert "/actions/runs/4242" in body
    assert md.rstrip() in r.summary and MARKER not in r.summary
    assert r.outputs["comment-url"].endswith("#issuecomment-1000")

    # other comments, one quoting the marker, on the pages before and after ours
    state = json.loads(pr.state.read_text())
    others = [{"id": 1, "body": "LGTM"}, {"id": 2, "body": f"> {MARKER}\n> quoted"}]
    state["comments"] = others + state["comments"] + [{"id": 3, "body": "another bot"}]
    state["calls"] = []
    pr.state.write_text(json.dumps(state))
    r = pr(**inputs)
    assert not r.failed, r.log
    assert [c["method"] for c in pr.calls] == ["GET", "PATCH"]
    assert pr.calls[1]["path"] == f"repos/{REPO}/issues/comments/1000"
    assert sum(c["body"].startswith(MARKER) for c in pr.comments) == 1


def test_fused_to_naive_fails_the_job_after_commenting(pr, profiles):
    r = pr(base=str(profiles / "rmsnorm_fused"), head=str(profiles / "rmsnorm_naive"),
           **{"fail-on": "idle_pct_delta>2\n\n  device_time_pct_delta>5  \n"})
    assert r.failed
    assert [s.rc for s in r.steps] == [0, 0, 0, 1]  # the last step fails the job
    assert r.outputs["verdict"] == "worse" and r.outputs["exit-code"] == "1"
    body = pr.comments[0]["body"]
    assert body.startswith(MARKER) and "**gates: 2 of 2 failed**" in body
    assert "`--fail-on 'idle_pct_delta>2' failed: idle_pct_delta = 11.92`" in body
    assert r.step("gate").stdout.startswith("::error::traceana diff: a gate failed%0A")


def test_unusable_input_fails_with_2_and_says_so(pr, profiles):
    r = pr(base=str(profiles / "no_such_run"), head=str(profiles / "rmsnorm_naive"))
    assert r.failed and r.steps[-1].rc == 2
    assert r.outputs["verdict"] == "error" and r.outputs["exit-code"] == "2"
    body = pr.comments[0]["body"]
    assert "could not compare the profiles (exit 2)" in body and "no_such_run" in body
    assert "::error::traceana diff could not compare base and head (exit 2)" in r.log


def test_not_a_pull_request_does_not_call_gh(tmp_path, profiles):
    run = Runner(tmp_path, None)
    r = run(base=str(profiles / "rmsnorm_naive"), head=str(profiles / "rmsnorm_fused"))
    assert not r.failed and r.outputs["verdict"] == "better"
    assert run.calls == []
    assert "::notice::not a pull request (event push)" in r.step("comment").stdout
    assert (run.temp / "traceana-diff.md").read_text().rstrip() in r.summary


def test_comment_false_and_a_refused_comment_leave_the_result_to_the_gate(pr, profiles):
    inputs = dict(base=str(profiles / "rmsnorm_naive"), head=str(profiles / "rmsnorm_fused"))
    r = pr(**inputs, comment="false")
    assert not r.failed and pr.calls == []
    pr.extra["STUB_REFUSE"] = "1"
    r = pr(**inputs)
    assert not r.failed, r.log
    assert "::warning::could not comment on #17" in r.step("comment").stdout
    r = pr(base=inputs["head"], head=inputs["base"], **{"fail-on": "idle_pct_delta>2"})
    assert r.failed and r.steps[-1].rc == 1


def test_options_are_passed_only_when_set(pr, tmp_path):
    stub(pr.bin, "traceana", TRACEANA)
    pr.extra["STUB_ARGV"] = str(tmp_path / "argv.jsonl")

    def argv(**inputs: str) -> list[list[str]]:
        Path(pr.extra["STUB_ARGV"]).write_text("")
        r = pr(base="runs/main/*", head="summary.json", comment="false", **inputs)
        assert not r.failed, r.log
        return [json.loads(ln) for ln in Path(pr.extra["STUB_ARGV"]).read_text().splitlines()]

    md, js = argv()
    assert md == ["diff", "runs/main/*", "summary.json", "--format", "markdown",
                  "-o", str(pr.temp / "traceana-diff.md")]
    assert js[:5] == ["diff", "runs/main/*", "summary.json", "--format", "json"]
    md, _ = argv(**{"fail-on": " a>1 ,b<2\nc>=3", "min-runs": "3", "allow-empty": "True"})
    assert md[7:] == ["--fail-on", "a>1", "--fail-on", "b<2", "--fail-on", "c>=3",
                      "--min-runs", "3", "--allow-empty"]
    md, _ = argv(**{"fail-on": "a>1", "allow-empty-gate": "yes", "allow-mismatch": "1"})
    assert md[7:] == ["--fail-on", "a>1", "--allow-empty-gate", "--allow-mismatch"]
    r = pr(base="a", head="b", **{"allow-empty": "maybe"})
    assert r.failed and r.step("diff").rc == 2
    assert "allow-empty: 'maybe' is neither true nor false" in r.log


def test_an_install_path_must_name_one_file(pr, tmp_path):
    (tmp_path / "dist").mkdir()
    for name in ("traceana-0.1-py3-none-any.whl", "traceana-0.2-py3-none-any.whl"):
        (tmp_path / "dist" / name).write_text("")
    for install, n in (("dist/nothing-*.whl", 0), ("dist/traceana-*.whl", 2)):
        r = pr(base="a", head="b", install=install)
        assert r.failed and r.step("install").rc == 2 and r.step("diff").rc is None
        assert f"::error::install: '{install}' names {n} files" in r.log


def test_scripts_parse_and_pass_shellcheck():
    for script in SCRIPTS:
        subprocess.run(["bash", "-n", str(script)], check=True)
    if not shutil.which("shellcheck"):
        pytest.skip("no shellcheck here (apt-get install shellcheck)")
    subprocess.run(["shellcheck", "-x", *map(str, SCRIPTS)], check=True, cwd=ROOT)


# curl for gitlab-note.sh: the notes two to a page with X-Next-Page, POST/PUT recorded.
CURL = '''#!PYTHON
import json, os, sys
from pathlib import Path
state = Path(os.environ["STUB_STATE"])
doc = json.loads(state.read_text())
args = sys.argv[1:]
method = args[args.index("--request") + 1] if "--request" in args else "GET"
url = args[-1]
headers = [args[i + 1] for i, a in enumerate(args) if a == "--header"]
call = {"method": method, "url": url, "headers": headers}
if "--data-binary" in args:
    call["input"] = json.loads(Path(args[args.index("--data-binary") + 1][1:]).read_text())
doc["calls"].append(call)
notes = doc["comments"]
if method == "GET":
    page = int(url.rsplit("page=", 1)[1])
    more = len(notes) > 2 * page
    Path(args[args.index("--dump-header") + 1]).write_text(
        "HTTP/2 200\\r\\nx-next-page: " + (str(page + 1) if more else "") + "\\r\\n\\r\\n")
    print(json.dumps(notes[2 * page - 2:2 * page]))
elif method == "POST":
    notes.append({"id": 500 + len(notes), "body": call["input"]["body"]})
else:
    next(n for n in notes if n["id"] == int(url.rsplit("/", 1)[1]))["body"] = call["input"]["body"]
state.write_text(json.dumps(doc))
'''


def test_gitlab_note_posts_then_edits(tmp_path):
    run = Runner(tmp_path, None)
    stub(run.bin, "curl", CURL)
    report = tmp_path / "traceana-report.md"
    report.write_text("## diff: a → b\n")
    env = {**run.env(tmp_path), "REPORT": str(report), "TRACEANA_BOT_TOKEN": "glpat-x",
           "CI_API_V4_URL": "https://gitlab.example/api/v4", "CI_PROJECT_ID": "7",
           "CI_MERGE_REQUEST_IID": "3", "GITHUB_ACTIONS": ""}
    note = str(ROOT / "ci" / "action" / "gitlab-note.sh")
    subprocess.run(["bash", note], env=env, check=True)
    state = json.loads(run.state.read_text())
    notes = "https://gitlab.example/api/v4/projects/7/merge_requests/3/notes"
    assert [c["method"] for c in state["calls"]] == ["GET", "POST"]
    assert state["calls"][1]["url"] == notes
    assert "PRIVATE-TOKEN: glpat-x" in state["calls"][1]["headers"]
    assert state["comments"][0]["body"] == MARKER + "\n## diff: a → b\n"
    state["comments"] = [{"id": 1, "body": "a"}, {"id": 2, "body": "b"}, *state["comments"]]
    state["calls"] = []
    run.state.write_text(json.dumps(state))
    subprocess.run(["bash", note], env=env, check=True)
    calls = json.loads(run.state.read_text())["calls"]
    assert [c["method"] for c in calls] == ["GET", "GET", "PUT"]
    assert calls[-1]["url"] == f"{notes}/500"


def test_docs_ci_shows_the_action_and_installs_only_what_exists():
    text = (ROOT / "docs" / "ci.md").read_text()
    ours = text[text.index("## GitHub Actions"):]
    blocks = re.findall(r"```yaml\n(.*?)```", ours, re.S)
    inputs = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
    uses = []
    for block in blocks:
        doc = yaml.safe_load(block)
        if isinstance(doc, list):  # a workflow's steps, without the workflow around them
            doc = {"jobs": {"fragment": {"steps": doc}}}
        for job in doc.get("jobs", {}).values():
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith(("./", "<owner>/traceana")):
                    uses.append(step)
                    assert set(step["with"]) <= inputs, step["with"]
                    assert {"base", "head"} <= set(step["with"])
                if "run" in step:
                    subprocess.run(["bash", "-n"], input=step["run"], text=True, check=True)
        for job in doc.values():
            if isinstance(job, dict) and "script" in job:  # GitLab: the lines are one script
                lines = [*job.get("before_script", []), *job["script"]]
                subprocess.run(["bash", "-n"], input="\n".join(lines), text=True, check=True)
    assert uses, "docs/ci.md shows no step that uses the action"
    for cmd in re.findall(r"pip install ([^\n`]*)", ours):
        words = cmd.split("#", 1)[0].split()
        targets = [a for i, a in enumerate(words) if not a.startswith("-")
                   and (i == 0 or words[i - 1] not in ("-r", "-c"))]  # -r FILE: not a target
        assert targets or "-r" in words, cmd
        assert all(re.match(r"(\.|\./|dist/|\"\$|\$)", t) for t in targets), cmd


def _source_copy(dest: Path) -> Path:
    """The files a checkout of the action holds that pip needs, and the action itself."""
    skip = shutil.ignore_patterns("__pycache__", ".traceana-cache", "*.egg-info", "build")
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "action.yml"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("trace_analyzer", "capture", "ci"):
        shutil.copytree(ROOT / name, dest / name, ignore=skip)
    return dest


def _install_env(temp: Path) -> dict[str, str]:
    """pip without an index, build isolation or dependencies: the build backend (setuptools)
    and traceana's dependencies come from this .venv through PYTHONPATH, so that the test
    proves the install step's commands in seconds, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    return {**env, "RUNNER_TEMP": str(temp), "PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1",
            "PIP_NO_BUILD_ISOLATION": "0",  # pip's inverted spelling of --no-build-isolation
            "PYTHONPATH": sysconfig.get_paths()["purelib"], "PATH": os.environ["PATH"]}


@slow
@pytest.mark.parametrize("route", ["source", "wheel"])
def test_install_step_pip_installs_into_a_venv(tmp_path, route):
    src = _source_copy(tmp_path / "action")
    env = {**_install_env(tmp_path / "temp"), "GITHUB_ACTION_PATH": str(src),
           "INPUT_PYTHON": sys.executable, "GITHUB_OUTPUT": str(tmp_path / "out")}
    env["INPUT_INSTALL"] = "source"
    if route == "wheel":
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--no-build-isolation", "--no-index", "-w", str(tmp_path / "dist"),
                        str(src)], check=True, env=env, timeout=120)
        env["INPUT_INSTALL"] = "dist/traceana-*.whl"  # a glob, relative to the workspace
    p = subprocess.run(["bash", str(src / "ci" / "action" / "install.sh")], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    venv = tmp_path / "temp" / "traceana-venv"
    out = dict(ln.split("=", 1) for ln in (tmp_path / "out").read_text().splitlines())
    assert out == {"traceana": str(venv / "bin" / "traceana"),
                   "python": str(venv / "bin" / "python")}
    assert "traceana, version" in p.stdout
    where = subprocess.run([out["python"], "-c", "import trace_analyzer as t; print(t.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True,
                           check=True).stdout
    assert where.startswith(str(venv)), where
