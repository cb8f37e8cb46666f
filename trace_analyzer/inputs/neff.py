"""NEFF/NTFF files of a run: paired by name, listed, never decoded (docs/formats.md).

Model-mode NTFFs (``<hash>_instid_<i>_vnc_<v>.ntff``) pair with ``neff_<hash>.neff`` by the
numeric hash (docs/neuron-formats.md §1.4); session-mode NTFFs
(``profile_nc_<n>_session_<s>.ntff``) hold every execution on a core and have no 1:1 NEFF;
any other name (``neuron-explorer capture -s profile.ntff``) pairs with the one NEFF beside it.
"""

from __future__ import annotations

import re

from trace_analyzer.inputs.archive import AnyPath
from trace_analyzer.inputs.discover import Run, pb_hint

MODEL_NTFF = re.compile(r"^(\d+)_instid_(\d+)_vnc_(\d+)\.ntff$")
MODEL_NEFF = re.compile(r"^neff_(\d+)\.neff$")
SESSION_NTFF = re.compile(r"^profile_nc_(\d+)_session_(\d+)\.ntff$")

Pair = dict[str, str | None]  # {"ntff": path, "neff": path, "mode": model|session|capture}


def neff_pairs(run: Run, warnings: list[str]) -> list[Pair]:
    """Return the NEFF/NTFF files of a run, paired; a model NTFF without its NEFF warns."""
    neffs = {m[1]: p for p in run.neffs if (m := MODEL_NEFF.match(p.name))}
    pairs: list[Pair] = []
    for ntff in run.ntffs:
        m = MODEL_NTFF.match(ntff.name)
        if m is None:
            pairs.append(_unhashed(ntff, run))
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


def _unhashed(ntff: AnyPath, run: Run) -> Pair:
    """Return the entry of an NTFF whose name carries no NEFF hash."""
    if SESSION_NTFF.match(ntff.name):
        return {"ntff": str(ntff), "neff": None, "mode": "session"}
    beside = [n for n in run.neffs if n.parent == ntff.parent]
    neff = str(beside[0]) if len(beside) == 1 else None
    return {"ntff": str(ntff), "neff": neff, "mode": "capture"}


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
