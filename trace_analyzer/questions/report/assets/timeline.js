/* traceana report: the zoomable timeline (trace_analyzer/render/assets/timeline.js).

   Draws the timeline JSON of each .tl element (data-for: the id of its embedded JSON
   block, analyses/timeline.py) on its canvas: per pixel column,
   each hardware lane's busy time (from the bottom) and its idle time in gaps (in the colour
   of the cause with the most idle there), and the framework ops above. The lanes come as
   buckets, or gap by gap where a run has few; zoomed in past the buckets, a column shows its
   bucket (the note under the canvas says so). Every timeline of the page shares one view:
   the mouse wheel and the +/- buttons zoom, a drag pans, reset shows the whole run. Names
   from the trace are only ever drawn as canvas text or set as textContent. */
(function () {
  "use strict";
  var root = document.documentElement;
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || e));
    root.setAttribute("data-errors", errors.join(" | "));
  });

  // ---- durations and instants as the text outputs write them (trace_analyzer/numbers.py)
  var SCALES = [[1e9, "s"], [1e6, "ms"], [1e3, "\u00b5s"], [1, "ns"]];
  function fixed(v, d) {
    // toFixed rounds an exact tie up; Python's format rounds it to even, as numbers.py does
    var p = Math.pow(10, d), scaled = Math.abs(v) * p, n = Math.floor(scaled);
    if (scaled - n === 0.5 && (n + 0.5) / p === Math.abs(v)) {
      return ((v < 0 ? -1 : 1) * (n % 2 === 0 ? n : n + 1) / p).toFixed(d);
    }
    return v.toFixed(d);
  }
  function digits(v, most) {
    var whole = String(Math.trunc(Math.abs(v))).length;
    var text = fixed(v, Math.min(most, Math.max(0, 4 - whole)));
    if (text.indexOf(".") >= 0) text = text.replace(/0+$/, "").replace(/\.$/, "");
    return text === "-0" || text === "" ? "0" : text;
  }
  function scaled(ns, most) {  // the largest unit that keeps it >= 1; 999.96 us is 1 ms
    var size = Math.abs(ns);
    for (var i = 0; i < SCALES.length; i++) {
      if (size >= SCALES[i][0] || i === SCALES.length - 1) {
        var text = digits(ns / SCALES[i][0], most);
        if (i && Math.abs(parseFloat(text)) >= 1000) return digits(ns / SCALES[i - 1][0], most) + " " + SCALES[i - 1][1];
        return text + " " + SCALES[i][1];
      }
    }
  }
  function duration(ns) { return scaled(ns, 2); }  // 38 ns, 172.1 us, 5.63 ms
  function instant(ns) { return scaled(ns, 3); }  // a time after the window start: 1.809 ms
  function pct(f) { return digits(Math.max(0, Math.min(1, f)) * 100, 2) + " %"; }

  // ---- a name as every text output shows it (render/safe.py, plain): its control
  // characters as the text of their escape (\x1b, \u202e), line breaks as spaces. A browser
  // draws a control as nothing and acts on a bidirectional override (it reorders the text).
  var CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function shown(text) {
    return String(text).replace(/[\t\n\r\u2028\u2029]/g, " ").replace(CONTROL, function (c) {
      var n = c.charCodeAt(0);
      return n < 0x100 ? "\\x" + ("0" + n.toString(16)).slice(-2) : "\\u" + ("000" + n.toString(16)).slice(-4);
    });
  }

  var LABEL = 190, PAD = 12, ROW = 20, BAR = 15, SEP = 8, AXIS = 42, TOP = 6, MIN_SPAN = 50;
  var FONT = "12px system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif";
  var view = {lo: 0, hi: 1, full: {lo: 0, hi: 1}};
  var timelines = [];
  var tip = null, colours = null;

  function Timeline(el) {
    this.el = el;
    this.canvas = el.querySelector("canvas");
    this.note = el.querySelector(".tl-note");
    this.t = JSON.parse(document.getElementById(el.getAttribute("data-for")).textContent).runs[0];
    this.labels = JSON.parse(el.getAttribute("data-labels") || "[]");
    this.draws = 0;
    var t = this.t, rows = [];
    this.empty = t.from_ns === null || !t.lanes.length;
    if (t.op_rows && t.op_rows.length) {
      t.op_rows.forEach(function (r) { rows.push({kind: "ops", buckets: r}); });
    } else {
      var byRow = [];
      (t.framework_ops || []).forEach(function (o) { (byRow[o.row] = byRow[o.row] || []).push(o); });
      byRow.forEach(function (ops) { if (ops) rows.push({kind: "ops", ops: ops}); });
    }
    this.opRows = rows.length;
    var labels = this.labels;
    t.lanes.forEach(function (lane, i) { rows.push({kind: "lane", lane: lane, index: i, label: labels[i] || shown(lane.lane)}); });
    this.details = (t.details || []).map(function (d) {  // gap by gap around the longest gaps
      return {b0: d.b0, b1: d.b1, gaps: d.gaps, lo: t.from_ns + d.b0 * t.bucket_ns, hi: t.from_ns + (d.b1 + 1) * t.bucket_ns};
    });
    this.rows = rows;
    this.rowY = rows.map(function (r, i) { return TOP + i * ROW + (r.kind === "lane" && this.opRows ? SEP : 0); }, this);
  }

  Timeline.prototype.layout = function () {
    var width = Math.max(320, Math.floor(this.el.clientWidth || 800));
    var height = this.empty ? 40 : TOP + this.rows.length * ROW + (this.opRows ? SEP : 0) + AXIS;
    var dpr = window.devicePixelRatio || 1;
    this.w = width;
    this.h = height;
    this.pw = Math.max(10, width - LABEL - PAD);
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.height = height + "px";
    }
    this.dpr = dpr;
  };
  Timeline.prototype.x = function (ns) { return LABEL + (ns - view.lo) / (view.hi - view.lo) * this.pw; };
  Timeline.prototype.at = function (x) { return view.lo + (x - LABEL) / this.pw * (view.hi - view.lo); };

  // add ``density`` × the part of each pixel column that [s, e) covers into acc[col*stride+k]
  function spread(acc, stride, k, s, e, density, nsPx, cols) {
    var a = (s - view.lo) / nsPx, b = (e - view.lo) / nsPx;
    if (b <= a || b <= 0 || a >= cols) return;
    if (a < 0) a = 0;
    if (b > cols) b = cols;
    for (var c = Math.floor(a), last = Math.min(cols - 1, Math.ceil(b) - 1); c <= last; c++) {
      var ov = Math.min(b, c + 1) - Math.max(a, c);
      if (ov > 0) acc[c * stride + k] += ov * density;
    }
  }
  function visibleBuckets(t) {
    var w = t.bucket_ns;
    return [Math.max(0, Math.floor((view.lo - t.from_ns) / w)), Math.min(t.buckets - 1, Math.floor((view.hi - t.from_ns) / w))];
  }

  // column runs of one colour and height merged into one rectangle each
  function Bars(ctx, bottom) { this.ctx = ctx; this.bottom = bottom; this.run = null; }
  Bars.prototype.add = function (x, h, colour, lift) {
    var r = this.run;
    if (r && r.colour === colour && r.h === h && r.lift === lift && r.x + r.w === x) { r.w += 1; return; }
    this.flush();
    if (h > 0) this.run = {x: x, w: 1, h: h, colour: colour, lift: lift};
  };
  Bars.prototype.flush = function () {
    var r = this.run;
    if (r) { this.ctx.fillStyle = r.colour; this.ctx.fillRect(r.x, this.bottom - r.lift - r.h, r.w, r.h); }
    this.run = null;
  };

  Timeline.prototype.drawLane = function (ctx, row, y) {
    var t = this.t, lane = row.lane, cols = this.pw, nc = t.causes.length, stride = nc + 1;
    var nsPx = (view.hi - view.lo) / cols, acc = new Float64Array(cols * stride), i;
    if (lane.exact) {
      if (lane.first_ns !== null) spread(acc, stride, 0, lane.first_ns, lane.last_ns, 1, nsPx, cols);
      lane.gaps.forEach(function (g) {
        spread(acc, stride, 0, g[0], g[0] + g[1], -1, nsPx, cols);
        spread(acc, stride, 1 + g[2], g[0], g[0] + g[1], 1, nsPx, cols);
      });
    } else if (lane.busy.length) {
      var range = visibleBuckets(t), w = t.bucket_ns;
      var shown = this.details.filter(function (d) { return d.lo < view.hi && d.hi > view.lo; });
      shown.forEach(function (d) {
        if (lane.first_ns !== null) spread(acc, stride, 0, Math.max(d.lo, lane.first_ns), Math.min(d.hi, lane.last_ns), 1, nsPx, cols);
        d.gaps[row.index].forEach(function (g) {
          var a = Math.max(d.lo, g[0]), b = Math.min(d.hi, g[0] + g[1]);
          spread(acc, stride, 0, a, b, -1, nsPx, cols);
          spread(acc, stride, 1 + g[2], a, b, 1, nsPx, cols);
        });
      });
      for (i = range[0]; i <= range[1]; i++) {
        if (shown.some(function (d) { return d.b0 <= i && i <= d.b1; })) continue;
        var s = t.from_ns + i * w;
        spread(acc, stride, 0, s, s + w, lane.busy[i] / 1000, nsPx, cols);
        if (lane.cause[i] >= 0) spread(acc, stride, 1 + lane.cause[i], s, s + w, lane.idle[i] / 1000, nsPx, cols);
      }
    }
    var bottom = y + (ROW + BAR) / 2, busy = new Bars(ctx, bottom), idle = new Bars(ctx, bottom);
    for (var c = 0; c < cols; c++) {
      var b = Math.max(0, Math.min(1, acc[c * stride])), sum = 0, best = -1, most = 0;
      for (i = 0; i < nc; i++) {
        var v = acc[c * stride + 1 + i];
        sum += v;
        if (v > most) { most = v; best = i; }
      }
      var bh = Math.round(b * BAR * 2) / 2;
      var ih = sum > 1e-9 ? Math.max(1, Math.round(Math.min(1, sum) * BAR * 2) / 2) : 0;
      busy.add(LABEL + c, bh, colours.busy, 0);
      idle.add(LABEL + c, Math.min(ih, BAR - Math.min(bh, BAR - 1)), best >= 0 ? colours.causes[t.causes[best]] : "#000", Math.min(bh, BAR - 1));
    }
    busy.flush();
    idle.flush();
  };

  Timeline.prototype.drawOps = function (ctx, row, y) {
    var t = this.t, cols = this.pw, nsPx = (view.hi - view.lo) / cols, self = this;
    var acc = new Float64Array(cols), dom = new Int32Array(cols).fill(-1), most = new Float64Array(cols);
    var names = [], labels = [], top = y + (ROW - BAR) / 2;
    function note(c0, c1, idx, weight) {  // the op covering most of each column
      for (var c = Math.max(0, c0); c <= Math.min(cols - 1, c1); c++) {
        if (weight > most[c]) { most[c] = weight; dom[c] = idx; }
      }
    }
    if (row.ops) {
      row.ops.forEach(function (o) {
        if (o.at_ns + o.duration_ns < view.lo || o.at_ns > view.hi) return;
        var x0 = self.x(o.at_ns), x1 = self.x(o.at_ns + o.duration_ns);
        if (x1 - x0 >= 3) {
          var a = Math.max(LABEL, x0), b = Math.min(LABEL + cols, x1);
          ctx.fillStyle = colours.op;
          ctx.fillRect(a, top, b - a, BAR);
          ctx.strokeStyle = colours.op_edge;
          ctx.strokeRect(a + 0.5, top + 0.5, Math.max(0, b - a - 1), BAR - 1);
          labels.push([a, b, o.name]);
        } else {
          spread(acc, 1, 0, o.at_ns, o.at_ns + o.duration_ns, 1, nsPx, cols);
          names.push(o.name);
          note(Math.floor(x0 - LABEL), Math.ceil(x1 - LABEL) - 1, names.length - 1, o.duration_ns);
        }
      });
    } else {
      var b = row.buckets, range = visibleBuckets(t), w = t.bucket_ns;
      names = t.op_names;
      for (var i = range[0]; i <= range[1]; i++) {
        if (b.op[i] < 0) continue;
        var s = t.from_ns + i * w;
        spread(acc, 1, 0, s, s + w, b.cover[i] / 1000, nsPx, cols);
        note(Math.floor(self.x(s) - LABEL), Math.ceil(self.x(s + w) - LABEL) - 1, b.op[i], b.cover[i] * w);
      }
    }
    var bars = new Bars(ctx, top + BAR);
    for (var c = 0; c < cols; c++) {
      bars.add(LABEL + c, Math.round(Math.min(1, acc[c]) * BAR * 2) / 2, colours.op_edge, 0);
    }
    bars.flush();
    for (var start = 0, k = 1; k <= cols; k++) {  // runs of columns mostly under one op
      if (k === cols || dom[k] !== dom[start]) {
        if (dom[start] >= 0) labels.push([LABEL + start, LABEL + k, names[dom[start]]]);
        start = k;
      }
    }
    ctx.fillStyle = "#1b1b1b";
    labels.forEach(function (l) {
      var text = shown(l[2]), width = ctx.measureText(text).width;
      if (l[1] - l[0] > width + 8) ctx.fillText(text, (l[0] + l[1]) / 2 - width / 2, y + ROW / 2);
    });
  };

  function ticks(lo, hi, pw) {
    var raw = (hi - lo) / Math.max(2, Math.floor(pw / 110)), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * mag; }).filter(function (s) { return s >= raw; })[0];
    step = Math.max(1, step);
    var out = [];
    for (var k = Math.ceil(lo / step); k * step <= hi; k++) out.push(k * step);
    return out;
  }

  Timeline.prototype.drawAxis = function (ctx) {
    var y = this.h - AXIS + 2, values = ticks(view.lo, view.hi, this.pw);
    var labels = values.map(instant), offset = null;
    for (var i = 1; i < labels.length; i++) if (labels[i] === labels[i - 1]) offset = values[0];
    if (offset !== null) labels = values.map(function (v) { return v === offset ? "+0" : "+" + duration(v - offset); });
    ctx.strokeStyle = "#999";
    ctx.fillStyle = "#333";
    ctx.beginPath();
    ctx.moveTo(LABEL, y + 0.5);
    ctx.lineTo(LABEL + this.pw, y + 0.5);
    ctx.stroke();
    ctx.textBaseline = "top";
    for (i = 0; i < values.length; i++) {
      var x = Math.round(this.x(values[i])) + 0.5, width = ctx.measureText(labels[i]).width;
      ctx.beginPath();
      ctx.moveTo(x, y);
      ctx.lineTo(x, y + 4);
      ctx.stroke();
      ctx.fillText(labels[i], Math.min(LABEL + this.pw - width, Math.max(LABEL, x - width / 2)), y + 6);
    }
    ctx.fillStyle = "#5b6573";
    ctx.fillText("time after the window start" + (offset === null ? "" : "; ticks: + after " + offset.toLocaleString("en-US") + " ns"), LABEL, y + 22);
    ctx.textBaseline = "middle";
  };

  Timeline.prototype.draw = function () {
    this.layout();
    var ctx = this.canvas.getContext("2d"), t = this.t;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, this.w, this.h);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    if (this.empty) {
      ctx.fillStyle = "#5b6573";
      ctx.fillText(shown(t.root) + ": nothing ran on hardware, no timeline to draw", 8, 20);
      return;
    }
    var plotH = this.h - AXIS, self = this;
    ctx.fillStyle = colours.outside;  // outside the window
    [[view.lo, 0], [t.to_ns, view.hi]].forEach(function (s) {
      if (s[1] > s[0] && s[1] > view.lo && s[0] < view.hi) {
        var a = Math.max(LABEL, self.x(s[0])), b = Math.min(LABEL + self.pw, self.x(s[1]));
        if (b > a) ctx.fillRect(a, 0, b - a, plotH);
      }
    });
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL, 0, this.pw, plotH);
    ctx.clip();
    this.rows.forEach(function (row, i) {
      if (row.kind === "lane") self.drawLane(ctx, row, self.rowY[i]);
      else self.drawOps(ctx, row, self.rowY[i]);
    });
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = "#555";
    [0, t.to_ns].forEach(function (edge) {
      if (edge > view.lo && edge < view.hi) {
        var x = Math.round(self.x(edge)) + 0.5;
        ctx.beginPath();
        ctx.moveTo(x, 0);
        ctx.lineTo(x, plotH);
        ctx.stroke();
      }
    });
    ctx.restore();
    ctx.fillStyle = "#1b1f24";
    this.rows.forEach(function (row, i) {
      var text = row.kind === "lane" ? row.label : (i === 0 ? "framework ops" : "");
      while (text.length > 3 && ctx.measureText(text).width > LABEL - 12) text = "\u2026" + text.slice(2);
      ctx.fillText(text, 4, self.rowY[i] + ROW / 2);
    });
    this.drawAxis(ctx);
    this.draws += 1;
    this.el.setAttribute("data-visible-start-ns", String(Math.round(view.lo)));
    this.el.setAttribute("data-visible-end-ns", String(Math.round(view.hi)));
    this.el.setAttribute("data-draws", String(this.draws));
    var lanesB = t.lanes.some(function (l) { return !l.exact; }), opsB = t.op_rows && t.op_rows.length > 0;
    var size = t.buckets + " buckets of " + duration(t.bucket_ns);
    var nsPx = (view.hi - view.lo) / this.pw;
    this.note.textContent = (lanesB ? "Lanes in " + size + (this.details.length ? "; around the " + this.details.length + " longest gaps, every gap" : "") : "Every gap drawn one by one") +
      (opsB ? (lanesB ? "; framework ops in the same buckets" : "; framework ops in " + size) : "") +
      ((lanesB || opsB) && nsPx < t.bucket_ns ? ". Zoomed in past the buckets: there a column shows its bucket (the longest gaps stay hoverable)." : ".");
  };

  // ---- what the mouse is over
  Timeline.prototype.describe = function (x, y) {
    var t = this.t, i = -1;
    for (var k = 0; k < this.rows.length; k++) if (y >= this.rowY[k] && y < this.rowY[k] + ROW) i = k;
    if (i < 0 || x < LABEL || x > LABEL + this.pw) return null;
    var row = this.rows[i], at = this.at(x), tol = 3 * (view.hi - view.lo) / this.pw;
    var w = t.bucket_ns, b = Math.floor((at - t.from_ns) / w), bs = t.from_ns + b * w;
    var span = "bucket " + instant(bs) + " \u2013 " + instant(bs + w) + " after the window start";
    if (row.kind === "ops") {
      if (row.ops) {
        var hit = null;
        row.ops.forEach(function (o) {
          if (o.at_ns - tol <= at && at <= o.at_ns + o.duration_ns + tol && (!hit || o.duration_ns < hit.duration_ns)) hit = o;
        });
        return hit && [hit.name, "duration " + duration(hit.duration_ns), "at " + instant(hit.at_ns) + " after the window start", "framework op (host), pid " + hit.pid + " tid " + hit.tid];
      }
      var op = row.buckets.op[b];
      return op >= 0 ? [t.op_names[op], "covers " + pct(row.buckets.cover[b] / 1000) + " of the " + span] : null;
    }
    var lane = row.lane, gap = null;
    var detail = this.details.filter(function (d) { return d.lo <= at && at < d.hi; })[0];
    lane.gaps.concat(detail && !lane.exact ? detail.gaps[row.index] : []).forEach(function (g) {
      if (g[0] - tol <= at && at <= g[0] + g[1] + tol && (!gap || g[1] > gap[1])) gap = g;
    });
    if (gap) {
      return ["gap: " + t.causes[gap[2]], "duration " + duration(gap[1]), "at " + instant(gap[0]) + " after the window start",
              "evidence: " + (gap[3] || "\u2013"), "lane " + lane.lane];
    }
    if (lane.first_ns === null || at < lane.first_ns || at > lane.last_ns) return ["idle: before the lane's first execution or after its last", "lane " + lane.lane];
    if (lane.exact || detail) return ["busy", "at " + instant(at) + " after the window start", "lane " + lane.lane];
    var cause = lane.cause[b];
    return ["busy " + pct(lane.busy[b] / 1000) + ", idle in gaps " + pct(lane.idle[b] / 1000) + (cause >= 0 ? ", mostly " + t.causes[cause] : ""), span, "lane " + lane.lane];
  };

  function showTip(lines, cx, cy) {
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    if (!lines) { tip.hidden = true; return; }
    lines.forEach(function (line, i) {
      var div = document.createElement("div");
      if (i === 0) div.className = "tl-tip-head";
      div.textContent = shown(line);
      tip.appendChild(div);
    });
    tip.hidden = false;
    var left = Math.min(cx + 14, window.innerWidth - tip.offsetWidth - 4);
    tip.style.left = Math.max(0, left) + "px";
    tip.style.top = Math.max(0, Math.min(cy + 14, window.innerHeight - tip.offsetHeight - 4)) + "px";
  }

  // ---- the shared view
  function drawAll() {
    timelines.forEach(function (tl) { tl.draw(); });
    var range = document.querySelector(".tl-range");
    if (range) range.textContent = "showing " + instant(view.lo) + " \u2013 " + instant(view.hi) + " after the window start (" + duration(view.hi - view.lo) + ")";
  }
  function clamp() {
    var full = view.full, span = Math.min(full.hi - full.lo, Math.max(MIN_SPAN, view.hi - view.lo));
    var lo = Math.max(full.lo, Math.min(view.lo, full.hi - span));
    view.lo = lo;
    view.hi = lo + span;
  }
  function zoom(factor, at) {
    if (at === undefined) at = (view.lo + view.hi) / 2;
    view.lo = at - (at - view.lo) * factor;
    view.hi = at + (view.hi - at) * factor;
    clamp();
    drawAll();
  }
  function pan(ns) { view.lo += ns; view.hi += ns; clamp(); drawAll(); }
  function reset() { view.lo = view.full.lo; view.hi = view.full.hi; drawAll(); }

  function listen(tl) {
    var c = tl.canvas, drag = null;
    function localX(e) { return e.clientX - c.getBoundingClientRect().left; }
    c.addEventListener("wheel", function (e) {
      e.preventDefault();
      var x = localX(e), dy = e.deltaY * (e.deltaMode === 1 ? 33 : e.deltaMode === 2 ? 400 : 1);
      zoom(Math.pow(1.0015, dy), x >= LABEL && x <= LABEL + tl.pw ? tl.at(x) : undefined);
    }, {passive: false});
    c.addEventListener("mousedown", function (e) {
      if (e.button !== 0) return;
      drag = {x: e.clientX, lo: view.lo, hi: view.hi};
      c.classList.add("dragging");
      showTip(null);
      e.preventDefault();
    });
    window.addEventListener("mousemove", function (e) {
      if (!drag) return;
      var shift = -(e.clientX - drag.x) * (drag.hi - drag.lo) / tl.pw;
      view.lo = drag.lo + shift;
      view.hi = drag.hi + shift;
      clamp();
      drawAll();
    });
    window.addEventListener("mouseup", function () { drag = null; c.classList.remove("dragging"); });
    c.addEventListener("mousemove", function (e) {
      if (drag) return;
      var r = c.getBoundingClientRect();
      showTip(tl.empty ? null : tl.describe(e.clientX - r.left, e.clientY - r.top), e.clientX, e.clientY);
    });
    c.addEventListener("mouseleave", function () { showTip(null); });
    c.addEventListener("keydown", function (e) {
      var step = (view.hi - view.lo) / 10;
      var acts = {"+": function () { zoom(0.5); }, "=": function () { zoom(0.5); }, "-": function () { zoom(2); },
                  "0": reset, "ArrowLeft": function () { pan(-step); }, "ArrowRight": function () { pan(step); }};
      if (acts[e.key]) { acts[e.key](); e.preventDefault(); }
    });
  }

  // ---- a test hook: #test-zoom hovers the longest listed gap, zooms, pans and resets, and
  // writes what it saw on <html> for a headless browser's --dump-dom
  var FORMAT_CASES = [0, 38, 999, 1000, 1125, 100250, 172125, 999960, 999999, 1809250, 5630000, 5630000000, 12345678901, -23000, -0.4];
  function selfTest() {
    var tl = timelines.filter(function (x) { return !x.empty; })[0];
    if (!tl) return;
    var best = null, at = -1, rect = tl.canvas.getBoundingClientRect();
    tl.rows.forEach(function (r, i) {
      if (r.kind === "lane") r.lane.gaps.forEach(function (g) { if (!best || g[1] > best[1]) { best = g; at = i; } });
    });
    if (best) {
      var gx = tl.x(best[0] + best[1] / 2), gy = tl.rowY[at] + ROW / 2;
      tl.canvas.dispatchEvent(new MouseEvent("mousemove", {clientX: rect.left + gx, clientY: rect.top + gy, bubbles: true}));
      root.setAttribute("data-test-tooltip", Array.prototype.map.call(tip.children, function (d) { return d.textContent; }).join(" | "));
      root.setAttribute("data-test-gap", JSON.stringify([best[0], best[1], tl.t.causes[best[2]]]));
    }
    function range() { return [Number(tl.el.getAttribute("data-visible-start-ns")), Number(tl.el.getAttribute("data-visible-end-ns"))]; }
    var ranges = [range()], mid = {clientX: rect.left + LABEL + tl.pw / 2, clientY: rect.top + TOP + 2, bubbles: true};
    tl.canvas.dispatchEvent(new WheelEvent("wheel", Object.assign({deltaY: -400, cancelable: true}, mid)));
    ranges.push(range());
    document.querySelector('.tl-toolbar [data-zoom="in"]').click();
    ranges.push(range());
    tl.canvas.dispatchEvent(new MouseEvent("mousedown", Object.assign({button: 0}, mid)));
    window.dispatchEvent(new MouseEvent("mousemove", {clientX: mid.clientX + 100, clientY: mid.clientY}));
    window.dispatchEvent(new MouseEvent("mouseup", {}));
    ranges.push(range());
    document.querySelector('.tl-toolbar [data-zoom="reset"]').click();
    ranges.push(range());
    root.setAttribute("data-test-ranges", JSON.stringify(ranges));
    root.setAttribute("data-test-format", JSON.stringify({duration: FORMAT_CASES.map(duration), instant: FORMAT_CASES.map(instant)}));
  }

  function start() {
    var bar = document.querySelector(".tl-toolbar");
    if (!bar) return;
    colours = JSON.parse(bar.getAttribute("data-colours"));
    tip = document.querySelector(".tl-tip");
    timelines = Array.prototype.map.call(document.querySelectorAll(".tl[data-for]"), function (el) { return new Timeline(el); });
    var drawn = timelines.filter(function (tl) { return !tl.empty; });
    if (drawn.length) {
      var lo = Math.min.apply(null, drawn.map(function (tl) { return tl.t.from_ns; }));
      var span = Math.max.apply(null, drawn.map(function (tl) { return tl.t.to_ns - tl.t.from_ns; }));
      view.full = {lo: lo, hi: lo + Math.max(span, 1)};
    }
    view.lo = view.full.lo;
    view.hi = view.full.hi;
    var asked = /view=(-?[\d.]+),(-?[\d.]+)/.exec(window.location.hash);  // #view=START,END (ns)
    if (asked && Number(asked[2]) > Number(asked[1])) {
      view.lo = Number(asked[1]);
      view.hi = Number(asked[2]);
      clamp();
    }
    timelines.forEach(listen);
    bar.addEventListener("click", function (e) {
      var what = e.target.getAttribute && e.target.getAttribute("data-zoom");
      if (what === "in") zoom(0.5);
      else if (what === "out") zoom(2);
      else if (what === "reset") reset();
    });
    window.addEventListener("resize", drawAll);
    drawAll();
    root.setAttribute("data-timelines", String(timelines.length));
    if (/test-zoom/.test(window.location.hash)) selfTest();
  }
  window.addEventListener("load", start);
})();
