"""The JSON work of action.yml's scripts (ci/action/*.sh), standard library only.

    report.py report --md F --json F --stderr F --exit-code N --base B --head H [--gate E ...] -o F
        write the report (traceana's Markdown, then the gates' result; or the error) to F and
        print the verdict: better, worse, mixed, unchanged; error when diff could not compare
    report.py pr-number EVENT.json     the pull request's number, nothing when not a PR event
    report.py payload --marker M F     {"body": M + F's text} for the comment APIs
    report.py find-comment --marker M  on stdin the comments (JSON lists, one per page): the id
                                       of the first whose body starts with the marker line
    report.py field NAME               on stdin one JSON object: its NAME, or nothing
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

MAX_BODY = 65_000  # GitHub refuses comments over 65,536 characters
STDERR_LINES = 20


def _read(path: str | None) -> str:
    p = Path(path) if path else None
    return p.read_text(encoding="utf-8", errors="replace") if p and p.is_file() else ""


def _runs(json_path: str | None) -> list[dict]:
    try:
        doc = json.loads(_read(json_path) or "{}")
    except ValueError:
        return []
    runs = doc.get("runs") if isinstance(doc, dict) else None
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def verdict(runs: list[dict], code: int) -> str:
    if code not in (0, 1):
        return "error"
    found = {str(r["verdict"]) for r in runs if r.get("verdict")}
    return found.pop() if len(found) == 1 else "mixed" if found else "unknown"


def _fence(text: str) -> str:
    tick = "````" if "```" in text else "```"
    return f"{tick}\n{text.rstrip()}\n{tick}"


def _gates(runs: list[dict], gates: list[str], stderr: str, code: int) -> str:
    failed = [str(f) for r in runs for f in r.get("failed") or []]
    if not failed and code == 1:  # no JSON: the lines of stderr that name a gate
        failed = [ln.strip() for ln in stderr.splitlines() if "--fail-on" in ln]
    if failed:
        lines = "\n".join(f"- `{f}`" for f in failed)
        return f"**gates: {len(failed)} of {max(len(gates), len(failed))} failed**\n\n{lines}"
    if code == 1:
        return f"**traceana diff exited 1**\n\n{_fence(stderr)}"
    if gates:
        return f"**gates: all {len(gates)} passed** ({', '.join(f'`{g}`' for g in gates)})"
    return ""


def _run_link() -> str:
    server, repo, run = (os.environ.get(k) for k in
                         ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    if not (server and repo and run):
        return ""
    return f"<sub>[the workflow run: log and job summary]({server}/{repo}/actions/runs/{run})</sub>"


def report(a: argparse.Namespace) -> None:
    runs, stderr, md = _runs(a.json), _read(a.stderr), _read(a.md)
    if a.exit_code in (0, 1) and md.strip():
        parts = [md.rstrip(), _gates(runs, a.gate, stderr, a.exit_code)]
    else:
        tail = "\n".join(stderr.strip().splitlines()[-STDERR_LINES:]) or "(nothing on stderr)"
        parts = [f"## diff: {a.base} → {a.head}",
                 f"**traceana diff could not compare the profiles (exit {a.exit_code})**",
                 _fence(tail)]
    parts.append(_run_link())
    Path(a.output).write_text("\n\n".join(p for p in parts if p) + "\n", encoding="utf-8")
    print(verdict(runs, a.exit_code))


def pr_number(a: argparse.Namespace) -> None:
    try:
        event = json.loads(_read(a.event) or "{}")
    except ValueError:
        return
    number = (event.get("pull_request") or {}).get("number") if isinstance(event, dict) else None
    if isinstance(number, int):
        print(number)


def payload(a: argparse.Namespace) -> None:
    body = f"{a.marker}\n{_read(a.file)}"
    if len(body) > MAX_BODY:
        body = body[:MAX_BODY] + "\n\n… (cut at 65,000 characters; the job summary has it all)\n"
    json.dump({"body": body}, sys.stdout)


def _pages(text: str) -> list[object]:
    """The JSON values of ``text`` one after another (`gh api --paginate` writes one per page)."""
    decoder, values, i = json.JSONDecoder(), [], 0
    while (i := len(text) - len(text[i:].lstrip())) < len(text):
        value, i = decoder.raw_decode(text, i)
        values.append(value)
    return values


def find_comment(a: argparse.Namespace) -> None:
    for page in _pages(sys.stdin.read()):
        for c in page if isinstance(page, list) else []:
            body = c.get("body") if isinstance(c, dict) else None
            if isinstance(body, str) and body.lstrip().split("\n", 1)[0].strip() == a.marker:
                print(c["id"])
                return


def field(a: argparse.Namespace) -> None:
    try:
        doc = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        return
    value = doc.get(a.name) if isinstance(doc, dict) else None
    if value is not None:
        print(value)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(required=True)
    p = sub.add_parser("report")
    for opt in ("--md", "--json", "--stderr", "--base", "--head"):
        p.add_argument(opt, default="")
    p.add_argument("--exit-code", type=int, required=True)
    p.add_argument("--gate", action="append", default=[])
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(fn=report)
    p = sub.add_parser("pr-number")
    p.add_argument("event", nargs="?", default="")
    p.set_defaults(fn=pr_number)
    p = sub.add_parser("payload")
    p.add_argument("--marker", required=True)
    p.add_argument("file")
    p.set_defaults(fn=payload)
    p = sub.add_parser("find-comment")
    p.add_argument("--marker", required=True)
    p.set_defaults(fn=find_comment)
    p = sub.add_parser("field")
    p.add_argument("name")
    p.set_defaults(fn=field)
    a = parser.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main()
