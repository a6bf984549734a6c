/* nsighttk HTML report: draws the charts of one self-contained page as inline SVG.
 * No dependencies, no network.  Every chart element (<div class="chart" data-chart=KIND
 * data-spec=N>) gets data-drawn = the number of marks it drew (bars, events, points), which is
 * what the headless-browser test reads back from the DOM. */
(function () {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const specs = JSON.parse(document.getElementById("nsighttk-specs").textContent);
  const COLORS = {kernel: "#4e79a7", memcpy: "#f28e2b", memset: "#e15759", nvtx: "#76b7b2", other: "#9c9c9c",
                  fp64: "#af7aa1", fp32: "#4e79a7", fp16: "#59a14f", slower: "#d62728", faster: "#2ca02c",
                  same: "#9c9c9c", "new": "#17becf", vanished: "#bcbd22"};
  const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                   "#9c755f", "#bab0ac"];

  function el(tag, attrs, parent, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function tip(node, text) { el("title", {}, node, text); return node; }
  function svgIn(div, width, height) {
    div.textContent = "";
    return el("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img"}, div);
  }
  function fmtNs(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(2) + " us";
    return Math.round(ns) + " ns";
  }
  function fmtSi(v, unit) {
    const a = Math.abs(v);
    const steps = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [f, p] of steps) if (a >= f) return (v / f).toPrecision(3) + " " + p + unit;
    return v.toPrecision(3) + " " + unit;
  }
  function fmtPow2(n) {
    const e = Math.log2(n);
    return Number.isInteger(e) && e >= 10 ? "2^" + e : n.toLocaleString("en-US");
  }
  /* Put ``text`` into an SVG text node, cut with an ellipsis to at most ``px`` pixels as drawn. */
  function fit(node, text, px) {
    node.textContent = text;
    if (node.getComputedTextLength() <= px) return node;
    let lo = 1, hi = text.length;
    while (lo < hi) {  // the longest prefix that fits
      const mid = Math.ceil((lo + hi) / 2);
      node.textContent = text.slice(0, mid) + "…";
      if (node.getComputedTextLength() <= px) lo = mid; else hi = mid - 1;
    }
    node.textContent = text.slice(0, lo) + "…";
    return node;
  }
  function width(div) { return Math.max(480, Math.floor(div.getBoundingClientRect().width || 900)); }

  /* Nice round ticks for a linear axis. */
  function ticks(lo, hi, n) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    const raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw) || 10 * mag;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(t);
    return out;
  }
  function logTicks(lo, hi, base) {
    const out = [];
    const b = base || 10;
    for (let e = Math.floor(Math.log(lo) / Math.log(b)); Math.pow(b, e) <= hi * 1.0001; e++) {
      const v = Math.pow(b, e);
      if (v >= lo * 0.9999) out.push(v);
    }
    return out;
  }
  function logScale(lo, hi, a, b) {
    const l0 = Math.log(lo), l1 = Math.log(hi);
    return v => a + (Math.log(v) - l0) / (l1 - l0) * (b - a);
  }

  /* ---------------------------------------------------------------- horizontal bars */
  function bars(div, spec) {
    const items = spec.items, W = width(div), labelW = Math.min(360, Math.floor(W * 0.4)), row = 22;
    const H = items.length * row + 10;
    const svg = svgIn(div, W, H);
    const max = Math.max(...items.map(d => d.value), 1), plotW = W - labelW - 150;
    let drawn = 0;
    items.forEach((d, i) => {
      const y = 5 + i * row, w = Math.max(1, d.value / max * plotW);
      tip(fit(el("text", {x: labelW - 6, y: y + 15, "text-anchor": "end", class: "lbl"}, svg), d.short || d.label,
              labelW - 10), d.label);
      tip(el("rect", {x: labelW, y: y + 3, width: w, height: row - 6, fill: COLORS[d.kind] || COLORS.other,
                      class: "mark"}, svg),
          d.label + "\n" + fmtNs(d.value) + " (" + (d.value / spec.total * 100).toFixed(1) + "% of GPU time)"
          + (d.count ? "\n" + d.count.toLocaleString("en-US") + " instances" : ""));
      el("text", {x: labelW + w + 6, y: y + 15, class: "val"}, svg,
         fmtNs(d.value) + "  " + (d.value / spec.total * 100).toFixed(1) + "%");
      drawn++;
    });
    return drawn;
  }

  /* ---------------------------------------------------------------- timeline */
  function timeline(div, spec) {
    const lanes = spec.lanes, ev = spec.events, labelW = 190, laneH = 20, axisH = 26;
    const W = width(div), plotW = W - labelW - 10, H = axisH + lanes.length * laneH + 6;
    const byLane = lanes.map(() => []);
    ev.forEach(e => byLane[e[0]].push(e));
    byLane.forEach(l => l.sort((a, b) => a[1] - b[1]));
    const pad = Math.max(1, (spec.focus[1] - spec.focus[0]) * 0.02);
    let view = [Math.max(0, spec.focus[0] - pad), spec.focus[1] + pad];
    if (!(view[1] > view[0])) view = [0, Math.max(1, spec.window)];
    const bar = div.parentNode.querySelector(".tl-tools");
    const svg = svgIn(div, W, H);
    const gAxis = el("g", {}, svg), gLanes = el("g", {}, svg), gEv = el("g", {}, svg);
    lanes.forEach((name, i) => {
      const y = axisH + i * laneH;
      el("rect", {x: 0, y: y, width: W, height: laneH, fill: i % 2 ? "#fafafa" : "#f1f3f6"}, gLanes);
      tip(el("text", {x: 4, y: y + 14, class: "lbl"}, gLanes, name.length > 30 ? name.slice(0, 29) + "…" : name),
          name);
    });
    function draw() {
      gAxis.textContent = ""; gEv.textContent = "";
      const [v0, v1] = view, k = plotW / (v1 - v0), X = t => labelW + (t - v0) * k;
      ticks(v0, v1, Math.max(2, Math.floor(plotW / 110))).forEach(t => {
        el("line", {x1: X(t), x2: X(t), y1: axisH - 4, y2: H, stroke: "#ddd"}, gAxis);
        el("text", {x: X(t), y: axisH - 8, "text-anchor": "middle", class: "tick"}, gAxis, fmtNs(t));
      });
      let drawn = 0, inView = 0;
      byLane.forEach((list, li) => {
        const y = axisH + li * laneH + 2;
        let cur = null;
        const flush = () => {
          if (!cur) return;
          const r = el("rect", {x: cur.x0, y: y, width: Math.max(1, cur.x1 - cur.x0), height: laneH - 4,
                                fill: COLORS[spec.kinds[cur.e[4]]] || COLORS.other, class: "mark"}, gEv);
          const e = cur.e;
          tip(r, cur.n > 1 ? cur.n + " events (zoom in), first: " + spec.names[e[3]]
                 : spec.names[e[3]] + "\n" + fmtNs(e[2]) + " at " + fmtNs(e[1])
                   + (spec.details[e[5]] ? "\n" + spec.details[e[5]] : ""));
          if (cur.n === 1 && cur.x1 - cur.x0 > 40) {
            const name = spec.names[e[3]], fit = Math.floor((cur.x1 - cur.x0 - 6) / 6.2);
            el("text", {x: cur.x0 + 3, y: y + 12, class: "evlbl"}, gEv,
               name.length > fit ? name.slice(0, Math.max(1, fit - 1)) + "…" : name);
          }
          drawn++; cur = null;
        };
        for (const e of list) {
          const s = e[1], f = e[1] + e[2];
          if (f < v0 || s > v1) continue;
          inView++;
          const x0 = Math.max(labelW, X(s)), x1 = Math.min(labelW + plotW, X(f));
          if (cur && x0 - cur.x1 < 1 && (x1 - x0 < 2 || cur.x1 - cur.x0 < 2) && cur.e[4] === e[4]) {
            cur.x1 = Math.max(cur.x1, x1); cur.n++; continue;  // sub-pixel neighbours: one mark
          }
          flush();
          cur = {x0: x0, x1: x1, e: e, n: 1};
        }
        flush();
      });
      div.dataset.drawn = String(drawn);
      div.dataset.inView = String(inView);
      if (bar) bar.querySelector(".tl-range").textContent =
        fmtNs(v0) + " – " + fmtNs(v1) + " (" + inView.toLocaleString("en-US") + " events in view)";
      return drawn;
    }
    function zoom(factor, at) {
      const [v0, v1] = view, c = v0 + (at - labelW) / plotW * (v1 - v0);
      const span = Math.max(100, (v1 - v0) * factor);
      view = [Math.max(0, c - (c - v0) * span / (v1 - v0)), 0];
      view[1] = view[0] + span;
      draw();
    }
    svg.addEventListener("wheel", ev2 => {
      ev2.preventDefault();
      zoom(ev2.deltaY > 0 ? 1.25 : 0.8, ev2.offsetX);
    }, {passive: false});
    let drag = null;
    svg.addEventListener("mousedown", e => { drag = {x: e.clientX, view: view.slice()}; });
    window.addEventListener("mouseup", () => { drag = null; });
    window.addEventListener("mousemove", e => {
      if (!drag) return;
      const dt = (e.clientX - drag.x) / plotW * (drag.view[1] - drag.view[0]);
      view = [drag.view[0] - dt, drag.view[1] - dt];
      draw();
    });
    if (bar) {
      bar.querySelector(".tl-fit").addEventListener("click", () => {
        view = [Math.max(0, spec.focus[0] - pad), spec.focus[1] + pad]; draw();
      });
      bar.querySelector(".tl-all").addEventListener("click", () => { view = [0, spec.window]; draw(); });
      bar.querySelector(".tl-in").addEventListener("click", () => zoom(0.5, labelW + plotW / 2));
      bar.querySelector(".tl-out").addEventListener("click", () => zoom(2, labelW + plotW / 2));
    }
    return draw();
  }

  /* ---------------------------------------------------------------- log-log axes */
  function logAxes(svg, box, xr, yr, xlabel, ylabel, xbase) {
    const X = logScale(xr[0], xr[1], box.x0, box.x1), Y = logScale(yr[0], yr[1], box.y1, box.y0);
    const g = el("g", {}, svg);
    el("rect", {x: box.x0, y: box.y0, width: box.x1 - box.x0, height: box.y1 - box.y0, fill: "none",
                stroke: "#bbb"}, g);
    logTicks(xr[0], xr[1], xbase).forEach(t => {
      el("line", {x1: X(t), x2: X(t), y1: box.y0, y2: box.y1, stroke: "#eee"}, g);
      el("text", {x: X(t), y: box.y1 + 16, "text-anchor": "middle", class: "tick"}, g,
         xbase === 2 ? fmtPow2(t) : (t >= 1e4 || t < 1e-2 ? t.toExponential(0) : String(t)));
    });
    logTicks(yr[0], yr[1], 10).forEach(t => {
      el("line", {x1: box.x0, x2: box.x1, y1: Y(t), y2: Y(t), stroke: "#eee"}, g);
      el("text", {x: box.x0 - 6, y: Y(t) + 4, "text-anchor": "end", class: "tick"}, g, fmtSi(t, ""));
    });
    el("text", {x: (box.x0 + box.x1) / 2, y: box.y1 + 36, "text-anchor": "middle", class: "axis"}, g, xlabel);
    el("text", {x: 14, y: (box.y0 + box.y1) / 2, "text-anchor": "middle", class: "axis",
                transform: "rotate(-90 14 " + (box.y0 + box.y1) / 2 + ")"}, g, ylabel);
    return [X, Y];
  }
  function legend(svg, x, y, entries) {
    entries.forEach((en, i) => {
      el("rect", {x: x, y: y + i * 18 - 9, width: 12, height: 10, fill: en.color}, svg);
      el("text", {x: x + 18, y: y + i * 18, class: "lbl"}, svg, en.label);
    });
  }

  /* ---------------------------------------------------------------- roofline */
  function roofline(div, spec) {
    const W = Math.min(width(div), 980), H = 420, box = {x0: 80, x1: W - 230, y0: 14, y1: H - 50};
    const svg = svgIn(div, W, H), pts = spec.points, peaks = spec.peaks, bw = peaks.dram_bytes_per_s;
    const precisions = ["fp64", "fp32", "fp16"].filter(p => peaks[p]);
    const ridges = precisions.map(p => peaks[p] / bw);
    const xs = pts.map(p => p.intensity).filter(v => v > 0 && Number.isFinite(v)).concat(ridges);
    const ys = pts.map(p => p.flops).filter(v => v > 0).concat(precisions.map(p => peaks[p]));
    const xr = [Math.pow(10, Math.floor(Math.log10(Math.min(...xs) / 3))),
                Math.pow(10, Math.ceil(Math.log10(Math.max(...xs) * 3)))];
    if (!precisions.length) ys.push(Math.min(bw * xr[1], Math.max(...ys) * 10));  // the memory roof alone
    const yr = [Math.pow(10, Math.floor(Math.log10(Math.min(...ys, bw * xr[0]) / 2))),
                Math.pow(10, Math.ceil(Math.log10(Math.max(...ys) * 2)))];
    const [X, Y] = logAxes(svg, box, xr, yr, "arithmetic intensity (FLOP per DRAM byte)", "FLOP/s", 10);
    const entries = [];
    precisions.forEach(p => {
      const ridge = peaks[p] / bw, x0 = Math.max(xr[0], yr[0] / bw);
      const path = "M" + X(x0) + "," + Y(bw * x0) + " L" + X(ridge) + "," + Y(peaks[p]) + " L" + X(xr[1]) + ","
        + Y(peaks[p]);
      tip(el("path", {d: path, fill: "none", stroke: COLORS[p], "stroke-width": 2}, svg),
          p + " roof: " + fmtSi(peaks[p], "FLOP/s") + ", DRAM " + fmtSi(bw, "B/s") + ", ridge "
          + ridge.toFixed(1) + " FLOP/byte");
      entries.push({color: COLORS[p], label: p + " peak " + fmtSi(peaks[p], "FLOP/s")});
    });
    if (spec.copy_bytes_per_s) {
      const c = spec.copy_bytes_per_s, x1 = Math.min(xr[1], Math.max(...precisions.map(p => peaks[p])) / c);
      el("path", {d: "M" + X(xr[0]) + "," + Y(c * xr[0]) + " L" + X(x1) + "," + Y(c * x1), fill: "none",
                  stroke: "#555", "stroke-dasharray": "5 4"}, svg);
      entries.push({color: "#555", label: "measured copy " + fmtSi(c, "B/s")});
    }
    if (!precisions.length) {  // no FLOP roof measured: the bandwidth roof across the plot
      const x1 = Math.min(xr[1], yr[1] / bw);
      tip(el("path", {d: "M" + X(xr[0]) + "," + Y(bw * xr[0]) + " L" + X(x1) + "," + Y(bw * x1), fill: "none",
                      stroke: "#333", "stroke-width": 2}, svg), (spec.bw_label || "DRAM") + " " + fmtSi(bw, "B/s"));
    }
    entries.push({color: "#333", label: (spec.bw_label || "DRAM") + " " + fmtSi(bw, "B/s")});
    let drawn = 0;
    pts.forEach((p, i) => {
      if (!(p.flops > 0 && p.intensity > 0 && Number.isFinite(p.intensity))) return;
      const cx = X(p.intensity), cy = Y(p.flops);
      tip(el("circle", {cx: cx, cy: cy, r: 6, fill: COLORS[p.precision] || PALETTE[i % 10], stroke: "#222",
                        class: "mark"}, svg),
          p.label + " (" + p.precision + ")\n" + fmtSi(p.flops, "FLOP/s") + " = " + p.pct.toFixed(1)
          + "% of peak\nintensity " + p.intensity.toPrecision(3) + " FLOP/byte, " + p.bound + "-bound");
      el("text", {x: cx + 8, y: cy - 6, class: "ptlbl"}, svg, p.short);
      drawn++;
    });
    legend(svg, box.x1 + 16, 30, entries);
    return drawn;
  }

  /* ---------------------------------------------------------------- lines (bench) */
  function lines(div, spec) {
    const W = Math.min(width(div), 980), H = 400, box = {x0: 80, x1: W - 210, y0: 14, y1: H - 50};
    const svg = svgIn(div, W, H);
    const all = spec.series.flatMap(s => s.points);
    const xsv = all.map(p => p[0]), ysv = all.map(p => p[1]).concat(spec.hline ? [spec.hline.value] : []);
    const xr = [Math.pow(2, Math.floor(Math.log2(Math.min(...xsv)))), Math.pow(2, Math.ceil(Math.log2(Math.max(...xsv))))];
    if (xr[0] === xr[1]) { xr[0] /= 2; xr[1] *= 2; }
    const yr = [Math.pow(10, Math.floor(Math.log10(Math.min(...ysv)))),
                Math.pow(10, Math.ceil(Math.log10(Math.max(...ysv) * 1.05)))];
    const [X, Y] = logAxes(svg, box, xr, yr, spec.xlabel, spec.ylabel, 2);
    const entries = [];
    let drawn = 0;
    spec.series.forEach((s, i) => {
      const c = PALETTE[i % 10], pts = s.points.slice().sort((a, b) => a[0] - b[0]);
      el("path", {d: pts.map((p, j) => (j ? "L" : "M") + X(p[0]) + "," + Y(p[1])).join(" "), fill: "none",
                  stroke: c, "stroke-width": 2}, svg);
      pts.forEach(p => {
        tip(el("circle", {cx: X(p[0]), cy: Y(p[1]), r: 4, fill: c, class: "mark"}, svg),
            s.name + " @ " + p[0].toLocaleString("en-US") + ": " + p[1].toPrecision(4) + " " + spec.yunit);
        drawn++;
      });
      entries.push({color: c, label: s.name});
    });
    if (spec.hline) {
      el("line", {x1: box.x0, x2: box.x1, y1: Y(spec.hline.value), y2: Y(spec.hline.value), stroke: "#555",
                  "stroke-dasharray": "5 4"}, svg);
      entries.push({color: "#555", label: spec.hline.label});
    }
    legend(svg, box.x1 + 16, 30, entries);
    return drawn;
  }

  /* ---------------------------------------------------------------- comparison (diverging) */
  function delta(div, spec) {
    const items = spec.items, W = width(div), labelW = Math.min(360, Math.floor(W * 0.4)), row = 22;
    const H = items.length * row + 40, svg = svgIn(div, W, H);
    const lim = Math.max(5, ...items.map(d => Math.abs(Number.isFinite(d.hi) ? Math.max(Math.abs(d.lo), Math.abs(d.hi))
                                                                          : Math.abs(d.pct))));
    const plot0 = labelW + 10, plotW = W - plot0 - 20, X = v => plot0 + (v + lim) / (2 * lim) * plotW;
    ticks(-lim, lim, 6).forEach(t => {
      el("line", {x1: X(t), x2: X(t), y1: 18, y2: H, stroke: t === 0 ? "#888" : "#eee"}, svg);
      el("text", {x: X(t), y: 12, "text-anchor": "middle", class: "tick"}, svg, (t > 0 ? "+" : "") + t + "%");
    });
    let drawn = 0;
    items.forEach((d, i) => {
      const y = 24 + i * row;
      tip(fit(el("text", {x: labelW, y: y + 14, "text-anchor": "end", class: "lbl"}, svg), d.label, labelW - 10),
          d.label);
      const a = X(Math.min(0, d.pct)), b = X(Math.max(0, d.pct));
      tip(el("rect", {x: a, y: y + 3, width: Math.max(1, b - a), height: row - 8, fill: COLORS[d.change] || "#999",
                      class: "mark"}, svg),
          d.label + "\n" + d.change + ": " + (d.pct > 0 ? "+" : "") + d.pct.toFixed(1) + "%"
          + (Number.isFinite(d.lo) ? " (95% interval " + d.lo.toFixed(1) + "% .. " + d.hi.toFixed(1) + "%)" : ""));
      if (Number.isFinite(d.lo)) {
        const cy = y + (row - 2) / 2;
        el("line", {x1: X(Math.max(-lim, d.lo)), x2: X(Math.min(lim, d.hi)), y1: cy, y2: cy, stroke: "#222"}, svg);
      }
      drawn++;
    });
    return drawn;
  }

  /* ---------------------------------------------------------------- iterations (columns) */
  /* One column per iteration: its wall time (grey; warm-up orange) with the GPU-busy part of it in
   * blue from the bottom.  The axis stops a little above the slowest steady iteration: a warm-up
   * column taller than that is cut and carries its value.  Marks drawn = iterations. */
  function iterations(div, spec) {
    const items = spec.items, W = width(div), H = 280, box = {x0: 78, x1: W - 170, y0: 22, y1: H - 46};
    const svg = svgIn(div, W, H);
    const top = spec.cap > 0 ? spec.cap : Math.max(...items.map(d => d.wall), 1);
    const Y = v => box.y1 - Math.min(v, top) / top * (box.y1 - box.y0);
    ticks(0, top, 5).forEach(t => {
      el("line", {x1: box.x0, x2: box.x1, y1: Y(t), y2: Y(t), stroke: "#eee"}, svg);
      el("text", {x: box.x0 - 6, y: Y(t) + 4, "text-anchor": "end", class: "tick"}, svg, fmtNs(t));
    });
    const step = (box.x1 - box.x0) / Math.max(items.length, 1), bw = Math.max(1, step * 0.78);
    const every = Math.max(1, Math.ceil(items.length / Math.max(1, Math.floor((box.x1 - box.x0) / 60))));
    let drawn = 0;
    items.forEach((d, i) => {
      const x = box.x0 + i * step + (step - bw) / 2, cut = d.wall > top;
      const busy = d.busy === null ? "not measured" : fmtNs(d.busy) + " ("
                   + (d.wall > 0 ? (d.busy / d.wall * 100).toFixed(1) : "0") + "%)";
      const text = d.label + "\nwall " + fmtNs(d.wall) + "\nGPU busy " + busy
                   + (d.warmup ? "\nwarm-up" : d.outlier ? "\noutlier: " + d.outlier : "");
      tip(el("rect", {x: x, y: Y(d.wall), width: bw, height: box.y1 - Y(d.wall),
                      fill: d.warmup ? "#f1b77e" : "#c9d3e0", class: "mark"}, svg), text);
      if (d.busy !== null)
        tip(el("rect", {x: x, y: Y(d.busy), width: bw, height: box.y1 - Y(d.busy), fill: COLORS.kernel}, svg), text);
      if (cut) el("text", {x: x + bw / 2, y: box.y0 - 6, "text-anchor": "middle", class: "val"}, svg,
                  "\u2191 " + fmtNs(d.wall));
      if (i % every === 0)
        tip(fit(el("text", {x: x + bw / 2, y: box.y1 + 15, "text-anchor": "middle", class: "tick"}, svg), d.label,
                Math.max(step * every - 4, 8)), d.label);
      drawn++;
    });
    if (spec.median > 0) {
      el("line", {x1: box.x0, x2: box.x1, y1: Y(spec.median), y2: Y(spec.median), stroke: "#555",
                  "stroke-dasharray": "5 4"}, svg);
    }
    el("line", {x1: box.x0, x2: box.x1, y1: box.y1, y2: box.y1, stroke: "#888"}, svg);
    legend(svg, box.x1 + 16, 34, [{color: "#c9d3e0", label: "wall time"}, {color: COLORS.kernel, label: "GPU busy"},
                                  {color: "#f1b77e", label: "warm-up"}, {color: "#555", label: "steady median"}]);
    return drawn;
  }

  /* ---------------------------------------------------------------- heatmap: ranks x iterations */
  function heatmap(div, spec) {
    const ranks = spec.ranks, its = spec.iterations, vals = spec.values, W = width(div);
    const box = {x0: 64, x1: W - 150, y0: 10};
    const ch = Math.max(1, Math.min(16, Math.floor(640 / Math.max(ranks.length, 1))));
    const cw = (box.x1 - box.x0) / Math.max(its.length, 1), H = box.y0 + ranks.length * ch + 40;
    const svg = svgIn(div, W, H);
    // colour: the cell against its iteration's median over ranks (white: at or below it, red: the slowest)
    const med = its.map((_, j) => { const c = vals.map(r => r[j]).sort((a, b) => a - b);
                                    return c.length ? c[Math.floor((c.length - 1) / 2)] : 0; });
    let top = 0;
    vals.forEach(r => r.forEach((v, j) => { if (!spec.warmup[j] && med[j] > 0) top = Math.max(top, v / med[j] - 1); }));
    top = top > 0 ? top : 1;
    let drawn = 0;
    const readout = el("text", {x: box.x0, y: H - 8, class: "tick"}, svg, "");
    vals.forEach((r, i) => {
      r.forEach((v, j) => {
        const f = med[j] > 0 ? Math.max(0, Math.min(1, (v / med[j] - 1) / top)) : 0;
        const c = Math.round(255 - 200 * f), g = Math.round(255 - 220 * f);
        const cell = el("rect", {x: box.x0 + j * cw, y: box.y0 + i * ch, width: Math.max(cw - 0.5, 0.5),
                                 height: Math.max(ch - (ch > 3 ? 0.5 : 0), 0.5),
                                 fill: spec.warmup[j] ? "rgb(" + c + "," + c + "," + c + ")" : "rgb(255," + g + "," + g + ")",
                                 class: "mark"}, svg);
        cell.addEventListener("mouseenter", () => {
          readout.textContent = "rank " + ranks[i] + ", " + its[j] + ": " + fmtNs(v) + " ("
            + (med[j] > 0 ? ((v / med[j] - 1) * 100).toFixed(1) : "0") + "% vs median)" + (spec.warmup[j] ? ", start-up" : "");
        });
        drawn++;
      });
      if (ch >= 10 || i % Math.ceil(12 / ch) === 0)
        el("text", {x: box.x0 - 6, y: box.y0 + i * ch + Math.min(ch, 12) - 1, "text-anchor": "end", class: "tick"},
           svg, "rank " + ranks[i]);
    });
    const every = Math.max(1, Math.ceil(its.length / Math.max(1, Math.floor((box.x1 - box.x0) / 60))));
    its.forEach((t, j) => { if (j % every === 0)
      fit(el("text", {x: box.x0 + j * cw + cw / 2, y: box.y0 + ranks.length * ch + 14, "text-anchor": "middle",
                      class: "tick"}, svg), t, Math.max(cw * every - 4, 8)); });
    legend(svg, box.x1 + 16, 24, [{color: "rgb(255,35,35)", label: "+" + (top * 100).toFixed(0) + "% vs median"},
                                  {color: "rgb(255,255,255)", label: "at the median"},
                                  {color: "rgb(120,120,120)", label: "start-up"}]);
    return drawn;
  }

  /* ---------------------------------------------------------------- sortable tables */
  function sortable(table) {
    table.querySelectorAll("th").forEach((th, col) => {
      th.addEventListener("click", () => {
        const body = table.tBodies[0], rows = Array.from(body.rows);
        const dir = th.dataset.dir === "desc" ? 1 : -1;
        table.querySelectorAll("th").forEach(h => delete h.dataset.dir);
        th.dataset.dir = dir === 1 ? "asc" : "desc";
        const key = r => {
          const c = r.cells[col], v = c.dataset.v;
          return v !== undefined && v !== "" ? parseFloat(v) : c.textContent;
        };
        rows.sort((a, b) => {
          const x = key(a), y = key(b);
          return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
        });
        rows.forEach(r => body.appendChild(r));
      });
    });
  }

  const KINDS = {bars: bars, timeline: timeline, roofline: roofline, lines: lines, delta: delta,
                 iterations: iterations, heatmap: heatmap};
  document.querySelectorAll("table.data").forEach(sortable);
  document.querySelectorAll("div.chart").forEach(div => {
    const kind = div.dataset.chart, draw = KINDS[kind];
    if (!draw) throw new Error("unknown chart kind " + kind);
    const n = draw(div, specs[Number(div.dataset.spec)]);
    div.dataset.drawn = String(n);
  });
  document.body.dataset.charts = String(document.querySelectorAll("div.chart").length);
  document.body.dataset.ready = "1";
})();
