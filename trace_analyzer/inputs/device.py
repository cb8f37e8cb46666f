"""Find device-profile exports: the folders of Explorer tables for one NTFF (docs/formats.md).

A device-profile export is a folder holding ``Instruction.parquet`` (or its split parts
``Instruction_0.parquet``, ...) and the other tables of ``neuron-explorer view -n X.neff -s
X.ntff --output-format parquet``. A system profile lists its device profiles in
``DeviceProfileList.parquet``; Explorer names a device profile
``<display>_<instance>_pid_<pid>_nc_<n>_session_<s>`` (docs/neuron-formats.md §1.4).

A ``neuron-profile view --output-format json`` export is one JSON file (any name: users
choose it with ``--output-file``), found by the first key of its top-level object, one of the
keys that export writes (``DEVICE_JSON_KEYS``; the key order varies from file to file), read
from the file's first bytes; readers/device_json.py parses and sniffs it in full. This
module looks at names and those first bytes only; the readers read the tables.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

from trace_analyzer.errors import InputError
from trace_analyzer.inputs.discover import PID_DIR, discover, folders
from trace_analyzer.inputs.limits import not_regular
from trace_analyzer.inputs.neff import SESSION_NTFF, device_export, neff_pairs, shell_word

DEVICE_LIST = "DeviceProfileList"
# ``..._<instance>_pid_<pid>_nc_<n>_session_<s>``; the display part is optional.
PROFILE_NAME = re.compile(
    r"(?:^|_)(?P<instance>[^_]+)_pid_(?P<pid>\d+)_nc_(?P<nc>\d+)(?:_session_(?P<session>\d+))?$"
)


def table_pattern(table: str) -> re.Pattern[str]:
    """``<table>.parquet`` or a split part ``<table>_<n>.parquet``."""
    return re.compile(rf"^{re.escape(table)}(?:_(\d+))?\.parquet$")


def table_files(folder: Path, table: str) -> list[Path]:
    """Return the files of ``table`` in ``folder``: the whole table, then its split parts in
    part order (a table is either whole or split; both are read, concatenated)."""
    pattern = table_pattern(table)
    found = [(m[1], p) for p in folder.iterdir() if (m := pattern.match(p.name)) and p.is_file()]
    return [p for _, p in sorted(found, key=lambda x: -1 if x[0] is None else int(x[0]))]


def find_exports(top: Path, odd: list[tuple[Path, str]] | None = None) -> list[Path]:
    """Return the device-profile export folders under ``top`` (or ``top`` itself), in path
    order: each folder that holds an Instruction table; what the walk passed by (a folder it
    cannot read) added to ``odd``."""
    instruction = table_pattern("Instruction")
    return [d for d, names in folders(top, odd) if any(instruction.match(n) for n in names)]


# The top-level keys of a neuron-profile JSON export (profiler 2.28, observed in
# ../shared/corpus/real3/allenkchau/): the first one in its file is any of them.
DEVICE_JSON_KEYS = frozenset(
    ("instruction", "dma", "active_time", "summary", "metadata", "profile_info", "neff_header",
     "neff_node", "layer_summary", "model_info", "dma_queues_info", "pending_dma",
     "summary_groups", "summary_group_order", "warnings", "terminology", "dma_throughput",
     "nc_mem_usage", "semaphore_update", "ham", "instruction_usage")
)  # fmt: skip
FIRST_KEY = re.compile(rb'^(?:\xef\xbb\xbf)?\s*\{\s*"([A-Za-z_]{1,64})"\s*:')
JSON_NAME = re.compile(r"\.json(\.gz)?$")


def first_key(path: Path, peek: int = 256) -> str | None:
    """Return the first key of the JSON object in ``path`` (a ``.json`` or ``.json.gz``
    file), from its first ``peek`` bytes; None when they hold none, or it cannot be read, or
    it is not a regular file (a FIFO would block the read: ``limits.not_regular``)."""
    if not_regular(path) is not None:
        return None
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as f:
            head = f.read(peek)
    except (OSError, EOFError):
        return None
    m = FIRST_KEY.match(head)
    return m[1].decode() if m else None


def find_json_exports(top: Path) -> list[Path]:
    """Return the neuron-profile JSON exports under ``top``, in path order: each ``.json``
    (or ``.json.gz``) file whose first key is one the export writes (``DEVICE_JSON_KEYS``)."""
    return [
        d / n
        for d, names in folders(top)
        for n in names
        if JSON_NAME.search(n) and first_key(d / n) in DEVICE_JSON_KEYS
    ]


def find_lists(top: Path) -> list[Path]:
    """Return the DeviceProfileList tables under ``top``, in path order."""
    pattern = table_pattern(DEVICE_LIST)
    return [d / n for d, names in folders(top) for n in names if pattern.match(n)]


# Explorer keeps a processed profile in ``<data-path>/profiles/global/<name>@latest/``
# (docs/neuron-formats.md §7): the folder is the profile ``<name>``, as DeviceProfileList names it.
VERSION_TAG = re.compile(r"@[^@/]*$")


def profile_name(folder: str) -> str:
    """Return the device profile a folder of that name holds: its name less an ``@latest``."""
    return VERSION_TAG.sub("", folder)


def parse_name(name: str) -> dict[str, str | int | None] | None:
    """Return instance_id, process_id, nc_id and session_id spelled in a device profile's
    name (Explorer's ``..._<instance>_pid_<pid>_nc_<n>_session_<s>``, its folder's ``@latest``
    aside), or None."""
    m = PROFILE_NAME.search(profile_name(name))
    if m is None:
        return None
    session = m["session"]
    return {
        "instance_id": m["instance"],
        "process_id": int(m["pid"]),
        "nc_id": int(m["nc"]),
        "session_id": int(session) if session is not None else None,
    }


def neffs_near(folder: Path) -> list[str]:
    """Return the NEFF file names in ``folder``, else in its parent: the neighbourhood that
    names the NEFF of an export without ExecutionInfo."""
    for where in (folder, folder.parent):
        names = sorted(p.name for p in where.iterdir() if p.suffix == ".neff" and p.is_file())
        if names:
            return names
    return []


def unexported(
    top: Path, keys: set[tuple[Any, Any, Any]], stems: set[str], *, max_bytes: int | None = None
) -> list[dict[str, str | None]]:
    """Return the NTFFs under ``top`` that no export read here covers, each with its NEFF and
    the Explorer command exporting it. A session NTFF (``profile_nc_<n>_session_<s>.ntff``
    in ``<instance>_pid_<pid>/``) is covered by a profile of that process, core and session;
    any NTFF by an export named as its stem (``stems``: the exports' names).

    ``keys``: the (process_id, nc_id, session_id) of the exports read; ``max_bytes``: the
    cap discovery opens an archive with."""
    try:
        runs = discover(top, max_bytes=max_bytes)
    except InputError:  # no system profile, trace or capture: no NEFF/NTFF either
        return []
    out: list[dict[str, str | None]] = []
    for run in runs:
        for pair in neff_pairs(run, []):
            ntff = pair["ntff"]
            if ntff is None or Path(ntff).stem in stems or _session_key(Path(ntff)) in keys:
                continue
            commands = device_export(run, [pair], False)
            command = (
                commands[0]
                if commands
                else f"neuron-explorer view -d {shell_word(Path(ntff).parent)} "
                "--output-format parquet"
            )
            out.append({"ntff": ntff, "neff": pair["neff"], "command": command})
    return out


def _session_key(ntff: Path) -> tuple[Any, Any, Any] | None:
    """(pid, core, session) of a session NTFF: the pid of its ``<instance>_pid_<pid>`` folder."""
    m = SESSION_NTFF.match(ntff.name)
    if m is None:
        return None
    pids = [int(d["pid"]) for part in ntff.parts[:-1] if (d := PID_DIR.match(part))]
    return (pids[-1] if pids else None), int(m[1]), int(m[2])
