"""A command asked again of unchanged runs is answered from the cache (docs/cache.md,
"Answers"): what it printed, on both streams, and its exit code, written back as they were.

The analysis cache keeps a run's tables and its gaps, but a hit still imports polars and the
analyses (half a second before any work) and reads the tables. The answer is what the user
asked for: the text of ``traceana gaps PATH --format markdown``, say. It is stored once the
command has run (exit 0, or 1 for a gate that held), under a key of everything the text
depends on, and replayed by the console script before any command module is imported:

- the command line as given, the working directory (a relative path is shown as typed), the
  table width (``terminal.terminal_width``), ``TZ`` and traceana's own environment variables;
- each run found under the path: its root, its sources, what discovery passed by, and its
  fingerprint (``inputs/fingerprint.py``: the stat of every file it is made of);
- the code: the stat of every file of the package and of the libraries it renders with
  (polars, orjson, click, networkx), so that a changed traceana or library never replays
  an old answer.

An answer whose text does not show the path as typed (CSV) is kept under a second key, with
the path's real location in place of its spelling and the working directory, and so serves
every spelling of the path (``Question``); one that shows it serves its own spelling only.

Only ``gaps``, ``ops``, ``chain`` and ``info`` without ``-o`` (a file written is not replayed)
are answered, for a folder named, in the analysis cache's folder (cache/where.py); never
under ``--no-cache``, ``--help`` or ``--debug``, for a run in an archive, or for more than
``MAX_ANSWER`` bytes of output (the tables answer those). The files are the cache's own
(``cache.folder.Folder``: no link followed); a damaged or unreadable answer is a miss.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from trace_analyzer._version import __version__
from trace_analyzer.cache.folder import Folder, Linked
from trace_analyzer.cache.spelling import relative
from trace_analyzer.cache.where import cache_place
from trace_analyzer.cli.terminal import EXIT_PIPE, silence_stdout, terminal_width
from trace_analyzer.errors import TraceanaError
from trace_analyzer.inputs.archive import MemberPath
from trace_analyzer.inputs.discover import Run, discover
from trace_analyzer.inputs.fingerprint import fingerprint
from trace_analyzer.questions import QUESTIONS

# the commands whose output may be stored and answered again (the registry says which)
COMMANDS = tuple(q.name for q in QUESTIONS if q.answers)
# The options of those commands that take a value (tests/cli/test_answers.py holds this to
# their definitions), and those that make a command line never answered.
VALUED = {
    "--annotation", "--async", "--by", "--cache-dir", "--factor", "--fail-on", "--format",
    "--fuse", "--jobs", "--lane", "--latency", "--limit", "--max-bytes", "--min-gap", "--op",
    "--output", "--rank", "--remove-copy", "--remove-host", "--run", "--scheduler", "--step",
    "--top", "--window", "-j", "-o",
}  # fmt: skip
NEVER = {"-o", "--output", "--no-cache", "--help", "--debug"}
IN_PROFILE = "TRACEANA_CACHE_IN_PROFILE"  # the variable of --cache-in-profile
LIBRARIES = ("polars", "orjson", "click", "networkx")
MAX_ANSWER = 16 << 20  # characters of output kept as an answer
PREFIX = "answer-"


@dataclass(frozen=True)
class Question:
    """Where the answer to one command line would be kept, and its key. The file is named
    after the command line alone (``asked``), so that a new answer to it, once its runs or
    traceana changed, replaces the old one; the key says which runs and code it answers.

    Each is taken twice: as typed (``asked``, ``key``: the path as spelled, the working
    directory) and whatever the path's spelling (``asked_any``, ``key_any``: the path's
    real location in place of its spelling). An answer that shows the path as typed (a
    table's title, JSON's ``path``) is kept under the first; one that does not (CSV) under
    the second, so that ``./run``, ``/abs/run`` and a link to it find it alike.
    """

    asked: str
    key: str
    folder: Path
    inside: Path | None  # the folder the user named, holding ``folder``; None: --cache-dir
    asked_any: str = ""
    key_any: str = ""
    spelled: tuple[str, ...] = ()  # how the text would show the path, as typed

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.asked[:32]}.json"

    @property
    def name_any(self) -> str:
        return f"{PREFIX}{self.asked_any[:32]}.json"

    def shows_path(self, *texts: str) -> bool:
        """True when one of ``texts`` shows the path (or a run's root) as it was typed."""
        return any(s in t for s in self.spelled for t in texts)


def question(argv: list[str]) -> Question | None:
    """Return the question ``argv`` (the arguments after ``traceana``) asks, or None when it
    is not one to answer from the cache. Never raises: anything odd is for the command."""
    try:
        return _question(argv)
    except (OSError, ValueError, TraceanaError):
        return None


def _question(argv: list[str]) -> Question | None:
    if not argv or argv[0] not in COMMANDS or _truthy(os.environ.get("TRACEANA_NO_CACHE")):
        return None
    paths, cache_dir, at = _positional(argv[1:])
    if paths is None or len(paths) != 1:
        return None
    path = Path(paths[0])
    cache_dir = cache_dir or os.environ.get("TRACEANA_CACHE_DIR") or None
    in_profile = "--cache-in-profile" in argv or _truthy(os.environ.get(IN_PROFILE))
    place = cache_place(path, cache_dir, in_profile)
    if place is None or (place[1] is not None and path.is_symlink()) or not path.is_dir():
        return None  # no cache; or a file or an archive, whose runs no answer stands for
    folder, inside = place
    env = [os.environ.get(v) for v in ("TZ", "TRACEANA_MAX_BYTES", "TRACEANA_CACHE_DIR")]
    width = terminal_width(None)
    h = _digest(__version__, os.getcwd(), *argv, width, *env, in_profile)
    # whatever the spelling: the path's real location and its name as typed in its place
    typed = [*argv[: at + 1], "\0path", *argv[at + 2 :]]
    where = [os.path.realpath(path), os.path.basename(os.path.abspath(path))]
    real_env = [os.path.realpath(e) if e else e for e in (*env[2:], cache_dir)]
    h_any = _digest(__version__, *typed, *where, width, *env, *real_env, in_profile)
    asked, asked_any = h.hexdigest(), h_any.hexdigest()
    code = _code().encode()
    h.update(code)
    h_any.update(code)
    spelled = {paths[0], str(path)}
    for run in discover(path):
        if not _runs_into(h, h_any, run):
            return None
        spelled.add(str(run.root))
    return Question(
        asked, h.hexdigest(), folder, inside, asked_any, h_any.hexdigest(), tuple(spelled)
    )


def _digest(*parts: object) -> Any:
    h = hashlib.sha256()
    for part in parts:
        h.update(f"{part}\0".encode())
    return h


def _runs_into(h: Any, h_any: Any, run: Run) -> bool:
    """Add ``run`` to both keys (as spelled to ``h``, relative to its root to ``h_any``);
    False for a run in an archive (never answered)."""
    fp = fingerprint(run)
    if fp.in_archive or isinstance(run.root, MemberPath):
        return False
    sources = [(str(s.path), s.kind, s.named, s.rank, s.rank_origin) for s in run.sources]
    h.update(repr((str(run.root), sources, run.skipped, run.not_regular)).encode())
    h.update(fp.digest.encode())
    root = str(run.root)
    inside = [(relative(s.path, root), s.kind, s.named, s.rank, s.rank_origin) for s in run.sources]
    passed = [(relative(f, root), why) for f, why in (*run.skipped, *run.not_regular)]
    h_any.update(repr((os.path.realpath(root), inside, passed)).encode())
    h_any.update(fingerprint(run, relative=True).digest.encode())
    return True


def _positional(args: list[str]) -> tuple[list[str] | None, str | None, int]:
    """Return the positional arguments of a command's ``args``, its --cache-dir, and where
    in ``args`` the first positional argument is; None for the first when the command line
    is never answered."""
    positional: list[str] = []
    cache_dir, at = None, -1
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        if a == "--":
            at = i + 1 if at < 0 else at
            positional += args[i + 1 :]
            break
        if name in NEVER or (a.startswith("-o") and a != "-o" and not a.startswith("--")):
            return None, None, at  # -o, --output=..., -oFILE
        if a.startswith("-") and a != "-":
            if name in VALUED and not eq:
                if i + 1 >= len(args):
                    return None, None, at
                value = args[i + 1]
                i += 1
            if name == "--cache-dir":
                cache_dir = value
        else:
            at = i if at < 0 else at
            positional.append(a)
        i += 1
    return positional, cache_dir, at


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "t", "yes", "y", "on")


def _code() -> str:
    """The stat of every file of the package and of the libraries it renders with."""
    roots = [Path(__file__).resolve().parents[1]]
    for lib in LIBRARIES:
        spec = importlib.util.find_spec(lib)  # found, not imported
        if spec is not None and spec.origin:
            roots.append(Path(spec.origin).parent)
    out = []
    for root in roots:
        if root.name != "trace_analyzer":  # a library: its package's own files, as installed
            out += [f"{f}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in root.glob("*")]
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                st = os.stat(os.path.join(folder, f))
                out.append(f"{folder}/{f}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(out)


def _stored(q: Question) -> dict[str, Any] | None:
    """Return the answer stored for ``q`` whatever the path's spelling, else as typed."""
    try:
        with Folder(q.folder, q.inside, create=False) as folder:
            for name, key in ((q.name_any, q.key_any), (q.name, q.key)):
                try:
                    stored = json.loads(folder.read(name))
                except (OSError, ValueError):
                    continue
                if isinstance(stored, dict) and stored.get("key") == key:
                    return stored
    except (OSError, Linked):
        pass
    return None


def replay(q: Question) -> int | None:
    """Write the stored answer to ``q`` to standard output and error; return its exit code,
    or None when there is none (or it cannot be written: the command runs instead)."""
    stored = _stored(q)
    if stored is None:
        return None
    out, err, code = stored.get("stdout"), stored.get("stderr"), stored.get("exit")
    if not isinstance(out, str) or not isinstance(err, str) or code not in (0, 1):
        return None
    if sys.stdout is None:
        return None  # standard output closed: the command says so
    try:  # as the command writes it: UTF-8 bytes, whatever the stream's encoding
        buffer = getattr(sys.stdout, "buffer", None)
        sys.stdout.flush()
        if buffer is not None:
            buffer.write(out.encode("utf-8", "surrogateescape"))
            buffer.flush()
        else:
            sys.stdout.write(out)
            sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        return EXIT_PIPE
    except OSError:
        silence_stdout()
        return None  # a full disk: the command says so
    if sys.stderr is not None:
        sys.stderr.write(err)
        sys.stderr.flush()
    return int(code)


class Heard:
    """A text stream that passes everything to ``stream`` and keeps a copy of it (what
    click needs of a stream: ``write``, ``flush``, ``isatty``, ``fileno``, ``encoding``).
    ``raw``: written as UTF-8 bytes to the stream's binary buffer, as a command writes its
    output (standard output), whatever the stream's encoding (``PYTHONIOENCODING=ascii``)."""

    def __init__(self, stream: TextIO, *, raw: bool = False) -> None:
        self.stream, self.size = stream, 0
        self.raw = getattr(stream, "buffer", None) if raw else None
        self.parts: list[str] = []
        self.encoding, self.errors = stream.encoding, stream.errors

    def write(self, text: Any) -> int:
        if not isinstance(text, str):
            raise TypeError("a text stream")  # click asks, writing b"": so it treats it as text
        if self.raw is not None:
            self.raw.write(text.encode("utf-8", "surrogateescape"))
            n = len(text)
        else:
            n = self.stream.write(text)
        if self.size <= MAX_ANSWER:
            self.parts.append(text)
            self.size += len(text)
        return n

    def flush(self) -> None:
        self.stream.flush()
        if self.raw is not None:
            self.raw.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def text(self) -> str | None:
        """What was written, or None when it was more than ``MAX_ANSWER``."""
        return "".join(self.parts) if self.size <= MAX_ANSWER else None


def listen() -> tuple[Heard, Heard] | None:
    """Put ``Heard`` streams in place of standard output and error; None if either is closed."""
    if sys.stdout is None or sys.stderr is None:
        return None
    heard = Heard(sys.stdout, raw=True), Heard(sys.stderr)
    sys.stdout, sys.stderr = heard
    return heard


def keep(q: Question, heard: tuple[Heard, Heard], code: object) -> None:
    """Store what a command printed (``heard``) as the answer to ``q``, if it answered: exit
    0, or 1 (a gate that held). Quietly nothing when it cannot be stored."""
    sys.stdout, sys.stderr = heard[0].stream, heard[1].stream
    out, err = heard[0].text(), heard[1].text()
    if code not in (0, 1, None) or out is None or err is None:
        return
    # shown as typed: kept for that spelling only; not shown: for every spelling of the path
    name, key = (q.name, q.key) if q.shows_path(out, err) else (q.name_any, q.key_any)
    data = json.dumps({"key": key, "stdout": out, "stderr": err, "exit": code or 0})
    try:
        with Folder(q.folder, q.inside, create=True) as folder:
            folder.write(name, lambda file: file.write(data.encode()))
    except (OSError, Linked):
        pass
