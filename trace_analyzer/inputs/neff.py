"""NEFF/NTFF files of a run: paired by name, listed, never decoded (docs/formats.md).

Model-mode NTFFs (``<hash>_instid_<i>_vnc_<v>.ntff``) pair with ``neff_<hash>.neff`` by the
numeric hash (docs/neuron-formats.md §1.4), as do a model-mode capture's (``<id>_vnc_<v>.ntff``
with ``neff_<id>_vnc_<v>.neff``, or ``neff_<id>.neff``); session-mode NTFFs
(``profile_nc_<n>_session_<s>.ntff``) hold every execution on a core and have no 1:1 NEFF.
Any other NTFF pairs, in this order, with the NEFF whose name it records (the runtime writes
the NEFF's file name near its start: ``recorded_neff``; mode ``recorded``), the NEFF of its
stem in its folder (``X.ntff`` with ``X.neff``; mode ``stem``), the NEFF of its stem less an
execution number (``X_exec_2.ntff`` with ``X.neff``, as ``nki.benchmark`` writes them; mode
``exec``), else the one NEFF beside it (``neuron-explorer capture -s profile.ntff``, and
``--profile-nth-exec=N``'s ``profile_exec_N.ntff``; mode ``capture``). ``unpaired`` lists
what is left over, ``device_export`` the Explorer commands that export each pair.
"""

from __future__ import annotations

import os
import re
import shlex

from trace_analyzer.inputs.archive import AnyPath, MemberPath
from trace_analyzer.inputs.discover import Run, pb_hint

MODEL_NTFF = re.compile(r"^(\d+)_instid_(\d+)_vnc_(\d+)\.ntff$")
MODEL_NEFF = re.compile(r"^neff_(\d+)(?:_vnc_(\d+))?\.neff$")
VNC_NTFF = re.compile(r"^(\d+)_vnc_(\d+)\.ntff$")  # a model-mode capture's: no instid
SESSION_NTFF = re.compile(r"^profile_nc_(\d+)_session_(\d+)\.ntff$")
EXEC_NTFF = re.compile(r"^(.+)_exec_\d+\.ntff$")  # X_exec_N.ntff: X.neff's N-th execution
# The NEFF's file name as an NTFF records it (observed in Trainium2 NTFFs of profiler 2.28): a
# protobuf string field (tag 0x0a, a one-byte length) near the start of the file.
RECORDED_NAME = re.compile(rb"\x0a([\x06-\x7f])([^\x00-\x1f/\\]+?\.neff)")
HEAD_BYTES = 4096

Pair = dict[str, str | None]  # {"ntff": path, "neff": path, "mode": see the module's text}


def neff_pairs(run: Run, warnings: list[str]) -> list[Pair]:
    """Return the NEFF/NTFF files of a run, paired; a model NTFF without its NEFF warns."""
    neffs = {m[1]: p for p in run.neffs if (m := MODEL_NEFF.match(p.name)) and not m[2]}
    pairs: list[Pair] = []
    for ntff in run.ntffs:
        m = MODEL_NTFF.match(ntff.name)
        if m is None:
            pairs.append(_vnc(ntff, run) or _unhashed(ntff, run))
            continue
        neff = neffs.get(m[1])
        pairs.append({"ntff": str(ntff), "neff": str(neff) if neff else None, "mode": "model"})
        if neff is None:
            warnings.append(
                f"{ntff}: no neff_{m[1]}.neff beside it; model-mode NTFF and NEFF "
                "must share the numeric hash"
            )
    paired = {p["neff"] for p in pairs}
    pairs += [
        {"ntff": None, "neff": str(p), "mode": None} for p in run.neffs if str(p) not in paired
    ]
    return pairs


def _vnc(ntff: AnyPath, run: Run) -> Pair | None:
    """Return the entry of a model-mode capture's NTFF (``<id>_vnc_<v>.ntff``): with
    ``neff_<id>_vnc_<v>.neff``, else ``neff_<id>.neff``; None for another name."""
    m = VNC_NTFF.match(ntff.name)
    if m is None:
        return None
    names = (f"neff_{m[1]}_vnc_{m[2]}.neff", f"neff_{m[1]}.neff")
    found = [n for name in names for n in run.neffs if n.name == name]
    return {"ntff": str(ntff), "neff": str(found[0]) if found else None, "mode": "model"}


def _unhashed(ntff: AnyPath, run: Run) -> Pair:
    """Return the entry of an NTFF whose name carries no NEFF hash."""
    if SESSION_NTFF.match(ntff.name):
        return {"ntff": str(ntff), "neff": None, "mode": "session"}
    beside = [n for n in run.neffs if n.parent == ntff.parent]
    recorded = recorded_neff(ntff)
    named = [n for n in beside if n.name == recorded] or [
        n for n in run.neffs if n.name == recorded
    ]
    if named:
        return {"ntff": str(ntff), "neff": str(named[0]), "mode": "recorded"}
    for mode, stem in (("stem", ntff.stem), ("exec", _exec_stem(ntff.name))):
        same = [n for n in beside if stem is not None and n.name == f"{stem}.neff"]
        if same:
            return {"ntff": str(ntff), "neff": str(same[0]), "mode": mode}
    neff = str(beside[0]) if len(beside) == 1 else None
    return {"ntff": str(ntff), "neff": neff, "mode": "capture"}


def _exec_stem(name: str) -> str | None:
    m = EXEC_NTFF.match(name)
    return m[1] if m else None


def recorded_neff(ntff: AnyPath) -> str | None:
    """Return the file name of the NEFF an NTFF records near its start (``RECORDED_NAME``:
    observed, not documented), or None: not found, not readable, or inside an archive (whose
    NTFFs are never read)."""
    if isinstance(ntff, MemberPath):
        return None
    try:
        with open(ntff, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return None
    for m in RECORDED_NAME.finditer(head):
        if m[1][0] == len(m[2]):  # the length byte is the name's: a field, not a chance match
            return m[2].decode("utf-8", "replace")
    return None


def unpaired(pairs: list[Pair]) -> dict[str, list[str]]:
    """Return the NTFFs that no NEFF pairs with, and the NEFFs that no NTFF pairs with.

    Session-mode NTFFs have no 1:1 NEFF (each execution finds its NEFF by time), so they are
    not unpaired, and neither are the NEFFs of a run that holds one; nor the NEFFs of a run
    with no NTFF (a system profile only).
    """
    ntffs = [p["ntff"] for p in pairs if p["ntff"] and not p["neff"] and p["mode"] != "session"]
    by_name = any(p["ntff"] for p in pairs) and not any(p["mode"] == "session" for p in pairs)
    neffs = [p["neff"] for p in pairs if p["neff"] and not p["ntff"]] if by_name else []
    return {"ntff": [n for n in ntffs if n], "neff": [n for n in neffs if n]}


def device_export(run: Run, pairs: list[Pair], has_export: bool) -> list[str]:
    """Return the Neuron Explorer command that exports each NTFF+NEFF pair of ``pairs`` (the
    run's), when the run has no Explorer export. Names are quoted for a POSIX shell; an
    archive member is named by its path inside the archive (where extracting puts it)."""
    if has_export:
        return []
    files = {str(f): f for f in (*run.ntffs, *run.neffs)}
    return [
        f"neuron-explorer view -n {_shell(files.get(neff, neff))} "
        f"-s {_shell(files.get(ntff, ntff))} --output-format parquet"
        for p in pairs
        if (ntff := p["ntff"]) and (neff := p["neff"])
    ]


def shell_word(path: AnyPath | str) -> str:
    """Return ``path`` as one word for bash, safe to print (``_shell``)."""
    return _shell(path)


def _shell(path: AnyPath | str) -> str:
    """Return ``path`` as one word for bash that names it exactly and is safe to print: with
    ``shlex.quote``, or, when the path holds a character a terminal would act on or the text
    outputs would change (``SHELL_UNSAFE``), in bash's ANSI-C quoting (``ansi_c_quoted``)."""
    text = path.member if isinstance(path, MemberPath) else str(path)
    return ansi_c_quoted(text) if SHELL_UNSAFE.search(text) else shlex.quote(text)


# What a printed command must not hold raw: C0 controls (tab, line feed and carriage return
# too: the text outputs show them as spaces, so they would no longer name the file), DEL,
# C1, the bidirectional controls, U+2028/9, and the lone surrogates that stand for the bytes
# of a file name that is not UTF-8 (os.fsdecode).
SHELL_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)


def ansi_c_quoted(text: str) -> str:
    """Return ``text`` as bash's ANSI-C quoted word (``$'...'``): each ``SHELL_UNSAFE``
    character as the ``\\xNN`` escapes of its bytes in the file system's encoding (bash reads
    them back as those bytes, whatever the locale), the backslash and the quote escaped, and
    ``!`` as ``\\x21`` (an interactive bash may take it for history expansion). Nothing else
    is special inside it, so the rest is as it is."""
    out = []
    for char in text:
        if char in "\\'":
            out.append("\\" + char)
        elif char == "!" or SHELL_UNSAFE.match(char):
            out.append("".join(f"\\x{b:02x}" for b in os.fsencode(char)))
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


def undecoded_hardware(run: Run, has_export: bool) -> bool:
    """Return True when a run's hardware activity sits only in files traceana does not decode."""
    return not has_export and bool(run.ntffs or any(f.name == "ntrace.pb" for f in run.raw))


def raw_without_export(run: Run, has_export: bool) -> list[str]:
    """Return the warnings for raw system traces that have no Explorer export beside them."""
    if has_export:
        return []
    return [
        pb_hint(folder) for folder in sorted({p.parent for p in run.raw if p.name == "ntrace.pb"})
    ]
