/*
 * model.js - the web console's model page (GET /model.js; the page's
 * #model-page, shown for location.hash "#model/NAME"): one model's
 * metadata laid out for people (kernel, params, training figures,
 * preprocessing, the search's table), its actions (delete, roll back to a
 * kept version, score rows of a CSV, add rows of a CSV to a version the
 * server can update), its drift (GET .../drift, and the
 * answers this browser has seen over time) and the plots that fit it,
 * drawn by Chart.js (GET /chart.min.js, the global Chart).
 *
 * Which plot suits which model is the one table PLOTS below; whether a
 * model answers what a plot needs comes from the server's own description
 * (GET /v1's capabilities.outputs, through KM.capabilities()), and the
 * rows plotted from the model's coefficients (GET .../coefficients) or a
 * CSV the user gives. Everything shown is set as text; no inline script
 * or style (the page's Content-Security-Policy): sizes come from
 * console.css's "model page" rules. Helpers shared with console.js are
 * window.KM's.
 *
 * window.KMModel.show(name) renders the page for a model; it also follows
 * location.hash itself ("#model/NAME"), and a second call for the same
 * name while one loads is the same load.
 */
"use strict";

(function () {
  const KM = window.KM;
  const el = KM.el;
  const $ = (id) => document.getElementById(id);

  /* How many rows the plots of training rows read at most (one page of
   * coefficients), and the decision regions' grid. */
  const MAX_ROWS = 2000;
  const GRID = 60;
  const BAND_POINTS = 200;

  const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  /* viridis, five stops: low scores dark, high scores bright. */
  const RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

  /* ------------------------------------------------------------ helpers */

  function ramp(t) {
    const u = Math.max(0, Math.min(1, isFinite(t) ? t : 0)) * (RAMP.length - 1);
    const i = Math.min(RAMP.length - 2, Math.floor(u)), f = u - i;
    const c = RAMP[i].map((a, k) => Math.round(a + (RAMP[i + 1][k] - a) * f));
    return "rgb(" + c.join(",") + ")";
  }

  /* color ("#rrggbb") at alpha over white, as an opaque colour. */
  function tint(color, alpha) {
    const n = parseInt(color.slice(1), 16);
    const mix = (c) => Math.round(c * alpha + 255 * (1 - alpha));
    return "rgb(" + mix(n >> 16) + "," + mix(n >> 8 & 255) + "," + mix(n & 255) + ")";
  }

  const colorOf = (k) => PALETTE[k % PALETTE.length];

  function modelPath(name, tail) {
    return "/v1/models/" + encodeURIComponent(name) + (tail || "");
  }

  /* A value of the metadata as an element: numbers as KM.numberEl (4
   * significant digits, exact on hover), lists of numbers likewise,
   * objects as a nested list, null as "not a number" (what the server
   * writes for a figure that is not finite). */
  function valueEl(v) {
    if (typeof v === "number") return KM.numberEl("span", v, {className: "num"});
    if (v === null || v === undefined) return el("span", {className: "muted"}, "null (not a finite number)");
    if (typeof v !== "object") return el("span", {}, String(v));
    if (Array.isArray(v)) {
      const shown = v.slice(0, 24);
      const span = el("span", {className: "list"}, "[");
      shown.forEach((x, i) => {
        if (i) span.appendChild(document.createTextNode(", "));
        span.appendChild(valueEl(x));
      });
      if (v.length > shown.length) span.appendChild(document.createTextNode(", … (" + v.length + " in all)"));
      span.appendChild(document.createTextNode("]"));
      return span;
    }
    return defList(v);
  }

  function defList(obj, className) {
    const items = [];
    for (const [k, v] of Object.entries(obj || {}))
      items.push(el("dt", {}, k), el("dd", {}, valueEl(v)));
    return el("dl", {className: className || "kv"}, ...items);
  }

  function card(title, ...body) {
    return el("div", {className: "mcard"}, el("h3", {}, title), ...body);
  }

  function state(node, text, bad) {
    node.textContent = text || "";
    node.classList.toggle("bad", !!bad);
  }

  /* What GET /v1 says a model may answer: the outputs (capabilities)
   * whose algorithms hold the model's and whose fit param it has. */
  function offers(ctx, name) {
    return ctx.outputs.some((o) => o.name === name &&
      (o.algorithms || []).includes(ctx.m.algorithm) && !KM.lacks(ctx.m.params || {}, o.needs));
  }

  function algorithmOf(ctx) {
    return ctx.algorithms.find((a) => a.name === ctx.m.algorithm) || {};
  }

  /* ------------------------------------------------------------ rows */

  /* Where a model's coefficients hold rows of input space, by array name
   * (docs/api.md#coefficients): the first one present is used. */
  const ROW_ARRAYS = [
    {array: "X_fit_", what: "training rows"},
    {array: "X_train_", what: "training rows"},
    {array: "support_vectors_", what: "support vectors (the training rows the model keeps)"},
    {array: "centres_", what: "Nyström centres (not training rows)"},
  ];

  /* The labels of the rows an algorithm's coefficients hold, where they
   * can be read from them (each returns null when not). */
  const ROW_LABELS = {
    // LIBSVM groups support vectors by class, n_support_ of each in order
    svc: (c, m) => {
      const ns = c.n_support_ && c.n_support_.values;
      if (!ns || !c.support_vectors_) return null;
      const out = [];
      ns.forEach((n, k) => { for (let i = 0; i < n; i++) out.push(m.classes[k]); });
      return {labels: out, how: "their classes (n_support_ groups the support vectors by class)"};
    },
    // at klr's optimum dual_coef_ = (Y - P) / lambda: a row's own class is
    // the one column that is positive (two classes: positive = second)
    klr: (c, m) => {
      const d = c.dual_coef_ && c.X_fit_ && c.dual_coef_.values;
      if (!d) return null;
      const labels = d.map((r) => {
        const v = Array.isArray(r) ? r : [r];
        if (v.length === 1) return m.classes[v[0] > 0 ? 1 : 0];
        let best = 0;
        v.forEach((x, k) => { if (x > v[best]) best = k; });
        return m.classes[best];
      });
      return {labels, how: "their classes, read from the signs of dual_coef_ " +
        "(at the optimum (y - p) / lambda; the targets themselves are not kept)"};
    },
  };

  /* The rows a model holds, in raw input space: {rows, what, total,
   * coefficients}. null when none (a string or precomputed model). */
  async function trainingRows(ctx) {
    if (ctx.rowsCache) return ctx.rowsCache;
    const r = await KM.api("GET", modelPath(ctx.m.name, "/coefficients?limit=" + MAX_ROWS));
    if (!r.ok) throw new Error("GET coefficients: " + KM.why(r));
    const c = r.data.coefficients || {};
    const pick = ROW_ARRAYS.find((a) => c[a.array] && c[a.array].dtype === "float64" &&
      c[a.array].shape.length === 2 && c[a.array].shape[1] === ctx.m.n_features);
    if (!pick) return null;
    let rows = c[pick.array].values;
    const p = r.data.preprocess;
    if (r.data.input_space === "scaled" && p && p.x_shift && p.x_scale)
      rows = rows.map((row) => row.map((v, j) => v * p.x_scale[j] + p.x_shift[j]));
    ctx.rowsCache = {rows, what: pick.what, array: pick.array, total: c[pick.array].shape[0],
      coefficients: c};
    return ctx.rowsCache;
  }

  async function ask(ctx, route, body) {
    /* the plots' rows (a grid, the training rows) are not what the model is
     * asked: kept out of its drift reservoir */
    const r = await KM.api("POST", modelPath(ctx.m.name, "/" + route), body,
      {"Kmserve-Drift": "skip"});
    if (!r.ok) throw new Error("POST " + route + ": " + KM.why(r));
    return r.data;
  }

  /* ------------------------------------------------------------ charts */

  /* Cells under the points: a dataset with kmCells {dx, dy, color(point),
   * text(point), mark(point)} is drawn as rectangles dx by dy (data units)
   * centred on its points; the points themselves are not drawn. */
  const cellsPlugin = {
    id: "kmCells",
    beforeDatasetsDraw(chart) {
      const {ctx, scales: {x, y}, chartArea: area} = chart;
      ctx.save();
      ctx.beginPath();
      ctx.rect(area.left, area.top, area.right - area.left, area.bottom - area.top);
      ctx.clip();
      for (const ds of chart.data.datasets) {
        const c = ds.kmCells;
        if (!c) continue;
        const marks = [];
        for (const p of ds.data) {
          const x0 = x.getPixelForValue(p.x - c.dx / 2), x1 = x.getPixelForValue(p.x + c.dx / 2);
          const y0 = y.getPixelForValue(p.y + c.dy / 2), y1 = y.getPixelForValue(p.y - c.dy / 2);
          const l = Math.min(x0, x1), t = Math.min(y0, y1);
          const w = Math.abs(x1 - x0) + 0.5, h = Math.abs(y1 - y0) + 0.5;
          ctx.fillStyle = c.color(p);
          ctx.fillRect(l, t, w, h);
          if (c.text && w > 44 && h > 16) {
            ctx.fillStyle = c.textColor(p);
            ctx.font = "12px system-ui, sans-serif";
            ctx.textAlign = "center";
            ctx.textBaseline = "middle";
            ctx.fillText(c.text(p), l + w / 2, t + h / 2);
          }
          if (c.mark && c.mark(p)) marks.push([l, t, w, h]);
        }
        ctx.lineWidth = 3;
        ctx.strokeStyle = "#d62728";
        for (const [l, t, w, h] of marks) ctx.strokeRect(l + 1.5, t + 1.5, w - 3, h - 3);
      }
      ctx.restore();
    },
  };

  function axis(title, extra) {
    return Object.assign({type: "linear", title: {display: true, text: title},
      ticks: {callback: (v) => KM.numberText(v), includeBounds: false}}, extra || {});
  }

  /* A log axis: ticks named at 1, 2 and 5 times a power of ten only. */
  function logAxis(title) {
    const named = (v) => {
      const lead = Number((v / 10 ** Math.floor(Math.log10(v))).toPrecision(1));
      return lead === 1 || lead === 2 || lead === 5 ? KM.numberText(v) : "";
    };
    return axis(title, {type: "logarithmic", ticks: {callback: named, includeBounds: false,
      autoSkip: false, maxRotation: 0}});
  }

  function tooltip(label) {
    return {callbacks: {label: (c) => label(c.raw, c.dataset)}};
  }

  /* A chart in the figure `fig` (canvas id `id`), remembered so that the
   * next render destroys it. */
  function chartIn(ctx, fig, id, config) {
    const old = $(id);
    if (old) {
      const c = window.Chart && Chart.getChart(old);
      if (c) c.destroy();
    }
    const canvas = el("canvas", {id, role: "img", "aria-label": fig.dataset.title || id});
    fig.querySelector(".chart").replaceChildren(canvas);
    config.options = Object.assign({animation: false, responsive: true,
      maintainAspectRatio: false}, config.options || {});
    const chart = new Chart(canvas, config);
    ctx.charts.push(chart);
    return chart;
  }

  function figure(title, id) {
    const f = el("figure", {className: "mplot", id: id + "-fig"},
      el("h4", {}, title), el("div", {className: "controls"}),
      el("div", {className: "chart"}), el("figcaption", {className: "state"}));
    f.dataset.title = title;
    return f;
  }

  const noteOf = (fig) => fig.querySelector("figcaption");

  /* ------------------------------------------------------------ search */

  /* The searched params that take more than one value, each with its
   * values sorted. */
  function searchShape(m) {
    const s = m.search;
    if (!s || !Array.isArray(s.results) || !s.results.length) return null;
    const names = [...new Set(s.results.flatMap((r) => Object.keys(r.params || {})))];
    const axes = names.map((n) => ({name: n, values: [...new Set(s.results
      .map((r) => r.params[n]).filter((v) => typeof v === "number"))].sort((a, b) => a - b)}))
      .filter((a) => a.values.length > 1);
    return axes;
  }

  /* rank as scikit-learn's rank_test_score: 1 + the candidates scoring
   * higher (ties share a rank). */
  function ranks(results) {
    const score = (r) => typeof r.mean_score === "number" ? r.mean_score : -Infinity;
    const desc = results.map(score).sort((a, b) => b - a);
    return results.map((r) => {
      let lo = 0, hi = desc.length; // the first index whose score is not above r's
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (desc[mid] > score(r)) lo = mid + 1; else hi = mid;
      }
      return 1 + lo;
    });
  }

  function drawSearchHeatmap(ctx, fig, axes) {
    const s = ctx.m.search, [ax, ay] = axes;
    const seen = new Set();
    const data = [];
    s.results.forEach((r, i) => {
      const ix = ax.values.indexOf(r.params[ax.name]), iy = ay.values.indexOf(r.params[ay.name]);
      if (ix < 0 || iy < 0 || seen.has(ix + "," + iy)) return; // repeated draws: the first
      seen.add(ix + "," + iy);
      data.push({x: ix, y: iy, v: r.mean_score, s: r.std_score, index: i,
        params: r.params, best: r.params[ax.name] === s.best_params[ax.name] &&
          r.params[ay.name] === s.best_params[ay.name]});
    });
    const vs = data.map((p) => p.v).filter((v) => typeof v === "number" && isFinite(v));
    const lo = Math.min(...vs), hi = Math.max(...vs);
    const t = (p) => hi > lo ? (p.v - lo) / (hi - lo) : 1;
    // one tick a cell, at its centre, named by the value
    const ticks = (vals) => ({autoSkip: false,
      callback: (v) => vals[v] !== undefined ? KM.numberText(vals[v]) : ""});
    const atCells = (vals) => (scale) => { scale.ticks = vals.map((_, i) => ({value: i})); };
    chartIn(ctx, fig, "plot-search", {
      type: "scatter",
      data: {datasets: [{label: "mean " + s.scoring, key: "cells", data,
        pointRadius: 0, pointHoverRadius: 0, pointHitRadius: 18,
        kmCells: {dx: 1, dy: 1, color: (p) => typeof p.v === "number" ? ramp(t(p)) : "#ddd",
          text: (p) => KM.numberText(p.v), textColor: (p) => t(p) > 0.6 ? "#111" : "#fff",
          mark: (p) => p.best}}]},
      options: {
        scales: {
          x: axis(ax.name, {min: -0.5, max: ax.values.length - 0.5, ticks: ticks(ax.values),
            afterBuildTicks: atCells(ax.values), grid: {display: false}}),
          y: axis(ay.name, {min: -0.5, max: ay.values.length - 0.5, ticks: ticks(ay.values),
            afterBuildTicks: atCells(ay.values), grid: {display: false}}),
        },
        plugins: {legend: {display: false},
          tooltip: tooltip((p) => ax.name + "=" + KM.numberText(ax.values[p.x]) + ", " +
            ay.name + "=" + KM.numberText(ay.values[p.y]) + ": " + KM.numberText(p.v) +
            " ± " + KM.numberText(p.s) + (p.best ? " (best)" : ""))},
      },
      plugins: [cellsPlugin],
    });
    noteOf(fig).textContent = "Mean " + s.scoring + " over " + s.n_splits + " folds, from " +
      KM.numberText(lo) + " (dark) to " + KM.numberText(hi) + " (bright); the outlined " +
      "cell is the best candidate, " + ax.name + "=" + KM.numberText(s.best_params[ax.name]) +
      ", " + ay.name + "=" + KM.numberText(s.best_params[ay.name]) + ".";
  }

  function drawSearchLine(ctx, fig, a) {
    const s = ctx.m.search;
    const pts = [];
    s.results.forEach((r, i) => {
      const x = r.params[a.name];
      if (typeof x === "number" && !pts.some((p) => p.x === x))
        pts.push({x, y: r.mean_score, s: r.std_score, index: i, best: x === s.best_params[a.name]});
    });
    pts.sort((p, q) => p.x - q.x);
    const log = pts[0].x > 0 && pts[pts.length - 1].x / pts[0].x >= 100;
    const best = pts.filter((p) => p.best);
    chartIn(ctx, fig, "plot-search", {
      type: "scatter",
      data: {datasets: [
        {label: "mean − std", key: "lower", data: pts.map((p) => ({x: p.x, y: p.y - p.s})),
          showLine: true, pointRadius: 0, borderWidth: 0, borderColor: "rgba(31,95,191,0)"},
        {label: "mean ± std", key: "upper", data: pts.map((p) => ({x: p.x, y: p.y + p.s})),
          showLine: true, pointRadius: 0, borderWidth: 0, borderColor: "rgba(31,95,191,0)",
          fill: "-1", backgroundColor: "rgba(31,95,191,0.18)"},
        {label: "mean " + s.scoring, key: "mean", data: pts, showLine: true,
          borderColor: "#1f5fbf", backgroundColor: "#1f5fbf", pointRadius: 3},
        {label: "best", key: "best", data: best, pointStyle: "star", pointRadius: 11,
          borderColor: "#d62728", backgroundColor: "#d62728", borderWidth: 2},
      ]},
      options: {
        scales: {x: log ? logAxis(a.name + " (log scale)") : axis(a.name),
          y: axis("mean " + s.scoring)},
        plugins: {legend: {labels: {filter: (item) => item.text !== "mean − std"}},
          tooltip: tooltip((p) => a.name + "=" + KM.numberText(p.x) + ": " +
            KM.numberText(p.y) + (p.s !== undefined ? " ± " + KM.numberText(p.s) : ""))},
      },
    });
    noteOf(fig).textContent = "Mean " + s.scoring + " over " + s.n_splits +
      " folds with a band of ± one standard deviation; the star is the best, " + a.name +
      "=" + KM.numberText(s.best_params[a.name]) + ".";
  }

  function searchTable(m) {
    const s = m.search;
    const names = [...new Set(s.results.flatMap((r) => Object.keys(r.params || {})))];
    const rank = ranks(s.results);
    return el("table", {id: "search-table", className: "search"},
      el("caption", {className: "sr"}, "Every candidate of the search, in the server's order"),
      el("thead", {}, el("tr", {}, ...["#"].concat(names, ["mean " + s.scoring, "std",
        "fit seconds", "rank"]).map((n) => el("th", {scope: "col", className: "num"}, n)))),
      el("tbody", {}, ...s.results.map((r, i) => el("tr",
        {className: i === s.best_index ? "best" : "", "data-index": String(i)},
        el("td", {className: "num"}, String(i)),
        ...names.map((n) => KM.numberEl("td", r.params[n], {className: "num"})),
        KM.numberEl("td", r.mean_score, {className: "num"}),
        KM.numberEl("td", r.std_score, {className: "num"}),
        KM.numberEl("td", r.fit_seconds, {className: "num"}),
        el("td", {className: "num"}, String(rank[i]), i === s.best_index ? " best" : "")))));
  }

  /* Two params of many values (a random search): each candidate a point
   * at its values, coloured by its mean score. */
  function drawSearchScatter(ctx, fig, axes) {
    const s = ctx.m.search, [ax, ay] = axes;
    const data = s.results.map((r, i) => ({x: r.params[ax.name], y: r.params[ay.name],
      v: r.mean_score, s: r.std_score, index: i, params: r.params, best: i === s.best_index}));
    const vs = data.map((p) => p.v).filter((v) => typeof v === "number" && isFinite(v));
    const lo = Math.min(...vs), hi = Math.max(...vs);
    const scale = (a) => a.values[0] > 0 && a.values[a.values.length - 1] / a.values[0] >= 100
      ? logAxis(a.name) : axis(a.name);
    chartIn(ctx, fig, "plot-search", {
      type: "scatter",
      data: {datasets: [{label: "mean " + s.scoring, key: "points", data, pointRadius: 5,
        backgroundColor: data.map((p) => ramp(hi > lo ? (p.v - lo) / (hi - lo) : 1)),
        borderColor: data.map((p) => p.best ? "#d62728" : "rgba(0,0,0,0.25)"),
        borderWidth: data.map((p) => p.best ? 3 : 1)}]},
      options: {scales: {x: scale(ax), y: scale(ay)},
        plugins: {legend: {display: false},
          tooltip: tooltip((p) => ax.name + "=" + KM.numberText(p.x) + ", " + ay.name + "=" +
            KM.numberText(p.y) + ": " + KM.numberText(p.v) + " ± " + KM.numberText(p.s))}},
    });
    noteOf(fig).textContent = "Each candidate at its values, coloured by its mean " +
      s.scoring + " from " + KM.numberText(lo) + " (dark) to " + KM.numberText(hi) +
      " (bright); the best is outlined in red.";
  }

  /* At most this many values an axis for a heatmap (a grid search); more
   * (a random search) are points. */
  const HEAT_MAX = 30;

  function drawSearch(ctx, fig) {
    const axes = searchShape(ctx.m);
    if (axes.length === 1) drawSearchLine(ctx, fig, axes[0]);
    else if (axes.every((a) => a.values.length <= HEAT_MAX)) drawSearchHeatmap(ctx, fig, axes);
    else drawSearchScatter(ctx, fig, axes);
  }

  /* ------------------------------------------------------------ gpr band */

  async function drawBand(ctx, fig) {
    const held = await trainingRows(ctx);
    const c = held ? held.coefficients : {};
    const xs0 = held ? held.rows.map((r) => r[0]) : [0, 1];
    const lo = Math.min(...xs0), hi = Math.max(...xs0), pad = (hi - lo) * 0.1 || 1;
    const xs = [];
    for (let i = 0; i < BAND_POINTS; i++)
      xs.push(lo - pad + (hi - lo + 2 * pad) * i / (BAND_POINTS - 1));
    const X = xs.map((x) => [x]);
    const [mean, std] = await Promise.all([ask(ctx, "predict", {X, output: "mean"}),
      ask(ctx, "predict", {X, output: "std"})]);
    const mu = mean.predictions, sd = std.predictions;
    const datasets = [
      {label: "mean − 2·std", key: "lower", data: xs.map((x, i) => ({x, y: mu[i] - 2 * sd[i]})),
        showLine: true, pointRadius: 0, borderWidth: 0, borderColor: "rgba(31,95,191,0)"},
      {label: "mean ± 2·std", key: "upper", data: xs.map((x, i) => ({x, y: mu[i] + 2 * sd[i]})),
        showLine: true, pointRadius: 0, borderWidth: 0, borderColor: "rgba(31,95,191,0)",
        fill: "-1", backgroundColor: "rgba(31,95,191,0.18)"},
      {label: "mean", key: "mean", data: xs.map((x, i) => ({x, y: mu[i]})), showLine: true,
        pointRadius: 0, borderColor: "#1f5fbf", borderWidth: 2},
    ];
    let note = "The predictive mean with a band of ± 2 standard deviations (of f, without " +
      "the noise), at " + BAND_POINTS + " points over the training range and 10% beyond.";
    if (held) {
      const rows = held.rows.map((r) => [r[0]]);
      const at = (await ask(ctx, "predict", {X: rows, output: "mean"})).predictions;
      const a = c.alpha_ && c.X_train_ && c.alpha_.values;
      const k = c.y_train_std_ && c.noise_ ? c.y_train_std_.values[0] * c.noise_.values[0] : NaN;
      // alpha_ = (K + noise I)^-1 y: y = mean(x) + y_train_std_ noise_ alpha_
      const ys = a && isFinite(k) ? at.map((v, i) => v + k * a[i]) : at;
      datasets.push({label: held.what, key: "train", data: rows.map((r, i) => ({x: r[0], y: ys[i], i})),
        pointRadius: 3.5, borderColor: "#111", backgroundColor: "#ff7f0e"});
      note += a && isFinite(k)
        ? " The points are the " + held.total + " " + held.what + " (GET coefficients' " +
          held.array + "); their targets are not kept, so the page recovers them as " +
          "mean(x) + y_train_std_·noise_·alpha_ (exact, from alpha_ = (K + noise·I)⁻¹y)."
        : " The points are the " + held.what + " at the predicted mean: their targets are " +
          "not kept.";
      if (held.total > held.rows.length) note += " First " + held.rows.length + " shown.";
    }
    chartIn(ctx, fig, "plot-band", {
      type: "scatter", data: {datasets},
      options: {scales: {x: axis("x (feature 1)"), y: axis("y")},
        plugins: {legend: {labels: {filter: (item) => item.text !== "mean − 2·std"}},
          tooltip: tooltip((p) => "x=" + KM.numberText(p.x) + ", y=" + KM.numberText(p.y))}},
    });
    noteOf(fig).textContent = note;
  }

  /* ------------------------------------------------------------ rows plots */

  /* The rows the scatter plots show: the CSV's (ctx.csv) when one was
   * given, else the model's own (coefficients). {X, columns, names, what}:
   * columns are the CSV's (or the features) as arrays of cells. */
  async function plotRows(ctx) {
    if (ctx.csv) return ctx.csv.plot;
    const held = await trainingRows(ctx);
    if (!held) return null;
    const names = [];
    for (let j = 0; j < ctx.m.n_features; j++) names.push("x" + (j + 1));
    return {X: held.rows, names, columns: names.map((_, j) => held.rows.map((r) => r[j])),
      features: names.map((_, j) => j), what: "the model's " + held.total + " " + held.what +
      (held.total > held.rows.length ? " (first " + held.rows.length + ")" : ""), held};
  }

  function selectOf(id, label, options, value, onchange) {
    const s = el("select", {id}, ...options.map(([v, t]) => el("option", {value: String(v)}, t)));
    if (value !== undefined) s.value = String(value);
    s.addEventListener("change", onchange);
    return el("span", {className: "pick"}, el("label", {for: id}, label), s);
  }

  /* Datasets of points grouped by a value: one a value when there are at
   * most ten, else one coloured along the ramp. */
  function groups(points, valueOf, title) {
    const vals = points.map(valueOf);
    const distinct = [...new Set(vals.map(String))];
    const nums = vals.every((v) => typeof v === "number");
    if (distinct.length <= PALETTE.length) {
      if (nums) distinct.sort((a, b) => Number(a) - Number(b));
      return distinct.map((d, k) => ({label: title + " " + d, key: "group", group: d,
        data: points.filter((p, i) => String(vals[i]) === d), pointRadius: 4,
        backgroundColor: colorOf(k), borderColor: "#fff", borderWidth: 0.5}));
    }
    const ns = vals.map(Number), lo = Math.min(...ns), hi = Math.max(...ns);
    return [{label: title + " (" + KM.numberText(lo) + " dark … " + KM.numberText(hi) +
      " bright)", key: "group", data: points, pointRadius: 4,
    backgroundColor: ns.map((v) => ramp(hi > lo ? (v - lo) / (hi - lo) : 0.5))}];
  }

  async function drawProjection(ctx, fig) {
    const rows = await plotRows(ctx);
    if (!rows) { noteOf(fig).textContent = "No rows of numbers to project."; return; }
    const proj = (await ask(ctx, "project", {X: rows.X})).projections;
    const controls = fig.querySelector(".controls");
    const colorCol = ctx.projectionColor !== undefined && ctx.projectionColor < rows.names.length
      ? ctx.projectionColor : rows.names.length > rows.features.length ? rows.names.length - 1 : -1;
    controls.replaceChildren(selectOf("projections-color", "Colour by",
      [[-1, "nothing"]].concat(rows.names.map((n, j) => [j, n])), colorCol, (ev) => {
        ctx.projectionColor = Number(ev.target.value);
        drawProjection(ctx, fig).catch((e) => state(noteOf(fig), e.message, true));
      }));
    const points = proj.map((p, i) => ({x: p[0], y: p[1], i,
      c: colorCol >= 0 ? rows.columns[colorCol][i] : null}));
    const datasets = colorCol >= 0 ? groups(points, (p) => p.c, rows.names[colorCol])
      : [{label: "rows", key: "group", data: points, pointRadius: 4, backgroundColor: PALETTE[0]}];
    chartIn(ctx, fig, "plot-projections", {
      type: "scatter", data: {datasets},
      options: {scales: {x: axis("projection 1"), y: axis("projection 2")},
        plugins: {tooltip: tooltip((p) => "row " + (p.i + 1) + ": (" + KM.numberText(p.x) +
          ", " + KM.numberText(p.y) + ")" + (p.c !== null ? ", " + String(p.c) : ""))}},
    });
    noteOf(fig).textContent = "The first two projections (POST project) of " + rows.what + ".";
  }

  async function drawClusters(ctx, fig) {
    const rows = await plotRows(ctx);
    if (!rows) { noteOf(fig).textContent = "No rows of numbers to plot."; return; }
    const ids = (await ask(ctx, "predict", {X: rows.X})).predictions;
    const f = rows.features;
    const ax = ctx.axes && f.includes(ctx.axes[0]) ? ctx.axes[0] : f[0];
    const ay = ctx.axes && f.includes(ctx.axes[1]) ? ctx.axes[1] : f.length > 1 ? f[1] : -1;
    const options = f.map((j) => [j, rows.names[j]]);
    const redraw = () => {
      ctx.axes = [Number($("clusters-x").value), Number($("clusters-y").value)];
      drawClusters(ctx, fig).catch((e) => state(noteOf(fig), e.message, true));
    };
    fig.querySelector(".controls").replaceChildren(
      selectOf("clusters-x", "x", options, ax, redraw),
      selectOf("clusters-y", "y", [[-1, "row number"]].concat(options), ay, redraw));
    const points = rows.X.map((r, i) => ({x: rows.columns[ax][i],
      y: ay >= 0 ? rows.columns[ay][i] : i + 1, i, cluster: ids[i]}));
    chartIn(ctx, fig, "plot-clusters", {
      type: "scatter", data: {datasets: groups(points, (p) => p.cluster, "cluster")},
      options: {scales: {x: axis(rows.names[ax]), y: axis(ay >= 0 ? rows.names[ay] : "row")},
        plugins: {tooltip: tooltip((p) => "row " + (p.i + 1) + ": cluster " + p.cluster)}},
    });
    noteOf(fig).textContent = "The clusters POST predict gives " + rows.what + ".";
  }

  async function drawRegions(ctx, fig) {
    const held = await trainingRows(ctx);
    if (!held) { noteOf(fig).textContent = "The model holds no rows of numbers."; return; }
    const span = [0, 1].map((j) => {
      const v = held.rows.map((r) => r[j]);
      const lo = Math.min(...v), hi = Math.max(...v), pad = (hi - lo) * 0.05 || 1;
      return [lo - pad, hi + pad];
    });
    const step = span.map(([lo, hi]) => (hi - lo) / (GRID - 1));
    const grid = [];
    for (let b = 0; b < GRID; b++)
      for (let a = 0; a < GRID; a++)
        grid.push([span[0][0] + a * step[0], span[1][0] + b * step[1]]);
    const labels = (await ask(ctx, "predict", {X: grid, output: "label"})).predictions;
    const classes = ctx.m.classes || [...new Set(labels)];
    const k = (label) => Math.max(0, classes.findIndex((c) => String(c) === String(label)));
    const cells = grid.map((g, i) => ({x: g[0], y: g[1], label: labels[i]}));
    const known = ROW_LABELS[ctx.m.algorithm] && ROW_LABELS[ctx.m.algorithm](held.coefficients, ctx.m);
    const rowLabels = known ? known.labels
      : (await ask(ctx, "predict", {X: held.rows, output: "label"})).predictions;
    const points = held.rows.map((r, i) => ({x: r[0], y: r[1], i, label: rowLabels[i]}));
    const datasets = [{label: "regions", key: "cells", data: cells, pointRadius: 0,
      pointHoverRadius: 0, pointHitRadius: 0,
      kmCells: {dx: step[0], dy: step[1], color: (p) => tint(colorOf(k(p.label)), 0.28)}}];
    classes.forEach((c, j) => datasets.push({label: String(c), key: "train", group: String(c),
      data: points.filter((p) => String(p.label) === String(c)), pointRadius: 4,
      backgroundColor: colorOf(j), borderColor: "#fff", borderWidth: 1}));
    chartIn(ctx, fig, "plot-regions", {
      type: "scatter", data: {datasets},
      options: {scales: {
        x: axis("x1", {min: span[0][0] - step[0] / 2, max: span[0][1] + step[0] / 2,
          grid: {display: false}}),
        y: axis("x2", {min: span[1][0] - step[1] / 2, max: span[1][1] + step[1] / 2,
          grid: {display: false}})},
      plugins: {legend: {labels: {filter: (item) => item.text !== "regions"}},
        tooltip: tooltip((p) => "(" + KM.numberText(p.x) + ", " + KM.numberText(p.y) + "): " +
          String(p.label))}},
      plugins: [cellsPlugin],
    });
    noteOf(fig).textContent = "The label POST predict gives at each point of a " + GRID + " × " +
      GRID + " grid over the rows' range (one request), with the " + held.total + " " +
      held.what + (held.total > held.rows.length ? " (first " + held.rows.length + ")" : "") +
      " on top, coloured by " + (known ? known.how : "the model's own label (their targets " +
      "are not kept)") + ".";
  }

  /* ------------------------------------------------------------ the plots */

  /* Which plot suits which model: applies(ctx) says whether the model
   * offers what the plot asks (its outputs, from GET /v1's capabilities),
   * draw(ctx, figure) draws it. "rows" plots redraw when a CSV is given. */
  const vectors = (ctx) => KM.inputOf(ctx.m, null).kind === "vectors";
  const PLOTS = [
    {id: "search", title: "Search", applies: (ctx) => {
      const a = searchShape(ctx.m);
      return !!a && (a.length === 1 || a.length === 2);
    }, draw: drawSearch},
    {id: "band", title: "Predictive mean and ± 2 std",
      applies: (ctx) => vectors(ctx) && ctx.m.n_features === 1 && offers(ctx, "mean") &&
        offers(ctx, "std"), draw: drawBand},
    {id: "projections", title: "Projections", rows: true,
      applies: (ctx) => vectors(ctx) && offers(ctx, "projections") &&
        (ctx.m.params || {}).n_components >= 2, draw: drawProjection},
    {id: "clusters", title: "Clusters", rows: true,
      applies: (ctx) => vectors(ctx) && offers(ctx, "clusters"), draw: drawClusters},
    {id: "regions", title: "Decision regions",
      applies: (ctx) => vectors(ctx) && ctx.m.n_features === 2 && offers(ctx, "label") &&
        algorithmOf(ctx).target === "classes", draw: drawRegions},
  ];

  function drawPlot(ctx, plot) {
    const fig = $(plot.id + "-fig");
    if (!fig) return Promise.resolve();
    state(noteOf(fig), "Drawing…");
    return Promise.resolve().then(() => plot.draw(ctx, fig)).catch((e) => {
      state(noteOf(fig), "Cannot draw: " + e.message, true);
    });
  }

  /* ------------------------------------------------------------ score */

  /* A CSV as kmctl reads it (a header line; the target: the column the
   * user picks, by default "y" if there is one, else the last
   * n_outputs), for the model m: {X, y, names, columns, plot}. */
  function readCsv(ctx, text, targetCol) {
    const m = ctx.m;
    const records = KM.csvRecords(text);
    if (!records.length) throw new Error("no rows: give a CSV with a header line");
    const num = (s) => s.trim() !== "" && isFinite(Number(s));
    const header = records[0].fields.every(num) ? null : records[0].fields.map((f) => f.trim());
    const body = header ? records.slice(1) : records;
    if (!body.length) throw new Error("no rows after the header");
    const width = body[0].fields.length;
    const names = header || body[0].fields.map((_, j) => "column " + (j + 1));
    for (const r of body)
      if (r.fields.length !== names.length)
        throw new Error("line " + r.line + ": " + r.fields.length + " fields; the first line has " +
          names.length);
    const input = KM.inputOf(m, null);
    const need = input.kind === "strings" ? 1 : input.width;
    const target = algorithmOf(ctx).target;
    const ny = target === "none" ? 0 : m.n_outputs > 1 ? m.n_outputs : 1;
    let t = targetCol;
    if (t === undefined || t === null || t === "") {
      t = ny ? KM.targetColumn(names, ny) : width === need + 1 ? KM.targetColumn(names, 1) : -1;
    }
    t = Number(t);
    if (t >= width) throw new Error("the CSV has no column " + (t + 1));
    const ycols = t >= 0 ? Array.from({length: Math.max(ny, 1)}, (_, k) => t + k) : [];
    const fcols = names.map((_, j) => j).filter((j) => !ycols.includes(j));
    if (fcols.length !== need)
      throw new Error("the CSV has " + fcols.length + " feature column" +
        (fcols.length === 1 ? "" : "s") + " besides the target; model " + m.name + " takes " + need);
    const cell = (r, j) => {
      const s = r.fields[j].trim();
      if (!num(s)) throw new Error("line " + r.line + ", column " + (j + 1) + " (" + names[j] +
        "): \"" + s + "\" is not a number");
      return Number(s);
    };
    const X = body.map((r) => input.kind === "strings" ? r.fields[fcols[0]]
      : fcols.map((j) => cell(r, j)));
    let y;
    if (ny) {
      const strings = Array.isArray(m.classes) && typeof m.classes[0] === "string";
      y = body.map((r) => ycols.length > 1 ? ycols.map((j) => cell(r, j))
        : strings ? r.fields[ycols[0]].trim() : cell(r, ycols[0]));
    }
    const columns = names.map((_, j) => body.map((r) => num(r.fields[j]) ? Number(r.fields[j])
      : r.fields[j].trim()));
    return {X, y, names, target: t, ycols,
      plot: input.kind === "strings" ? null : {X, names, columns, features: fcols,
        what: "the CSV's " + body.length + " rows"}};
  }

  function confusionTable(scoring) {
    const labels = scoring.labels, cm = scoring.confusion_matrix;
    const max = Math.max(1, ...cm.flat());
    return el("table", {id: "score-confusion", className: "confusion"},
      el("caption", {}, "Confusion matrix: rows are the actual labels (y), columns the predicted"),
      el("thead", {}, el("tr", {}, el("th", {scope: "col"}, "actual \\ predicted"),
        ...labels.map((l) => el("th", {scope: "col"}, String(l))))),
      el("tbody", {}, ...cm.map((row, i) => el("tr", {},
        el("th", {scope: "row"}, String(labels[i])),
        ...row.map((n, j) => el("td", {className: "num shade-" + Math.round(5 * n / max) +
          (i === j ? " diag" : ""), title: n + " row" + (n === 1 ? "" : "s") + " of " +
          String(labels[i]) + " predicted " + String(labels[j])}, String(n)))))));
  }

  async function drawActual(ctx, fig, X, y) {
    const pred = (await ask(ctx, "predict", {X})).predictions;
    const multi = Array.isArray(pred[0]);
    const outs = multi ? pred[0].length : 1;
    const datasets = [];
    let lo = Infinity, hi = -Infinity;
    for (let k = 0; k < outs; k++) {
      const data = y.map((a, i) => ({x: multi ? a[k] : a, y: multi ? pred[i][k] : pred[i], i}));
      for (const p of data) { lo = Math.min(lo, p.x, p.y); hi = Math.max(hi, p.x, p.y); }
      datasets.push({label: outs > 1 ? "output " + (k + 1) : "rows", key: "rows", data,
        pointRadius: 4, backgroundColor: tint(colorOf(k), 0.75)});
    }
    datasets.push({label: "predicted = actual", key: "diagonal", data: [{x: lo, y: lo}, {x: hi, y: hi}],
      showLine: true, pointRadius: 0, borderColor: "#555", borderDash: [6, 4], borderWidth: 1.5});
    chartIn(ctx, fig, "plot-score", {
      type: "scatter", data: {datasets},
      options: {scales: {x: axis("actual (y)"), y: axis("predicted")},
        plugins: {tooltip: tooltip((p) => "row " + (p.i + 1) + ": actual " +
          KM.numberText(p.x) + ", predicted " + KM.numberText(p.y))}},
    });
    noteOf(fig).textContent = "POST predict of the CSV's rows against their y; on the " +
      "dashed line the prediction is exact.";
  }

  async function runScore(ctx, plotOnly) {
    const out = $("score-result"), msg = $("score-state");
    let csv;
    try {
      csv = readCsv(ctx, $("score-rows").value, $("score-target").value);
    } catch (e) {
      state(msg, e.message, true);
      return;
    }
    fillTargets(ctx, csv.names, $("score-target").value);
    if (csv.plot) {
      ctx.csv = csv;
      PLOTS.filter((p) => p.rows && p.applies(ctx)).forEach((p) => drawPlot(ctx, p));
    }
    if (plotOnly) {
      state(msg, csv.plot ? "The plots above show the CSV's " + csv.X.length + " rows."
        : "This model's rows are not plotted.");
      return;
    }
    state(msg, "Scoring " + csv.X.length + " rows…");
    const body = {X: csv.X};
    if (csv.y) body.y = csv.y;
    const r = await KM.api("POST", modelPath(ctx.m.name, "/score"), body);
    if (!r.ok) {
      state(msg, "The server answered " + KM.why(r), true);
      if (r.status === 401) KM.needToken(r);
      return;
    }
    const sc = r.data.scoring || {};
    state(msg, "POST score: " + r.data.n + " rows" + (csv.y ? ", y from column " +
      csv.ycols.map((j) => csv.names[j]).join(", ") : "") + ", answered by version " +
      r.data.model.version + ".");
    const plain = {};
    for (const [k, v] of Object.entries(sc))
      if (!["labels", "precision", "recall", "confusion_matrix"].includes(k)) plain[k] = v;
    const parts = [defList(plain, "kv score-figures")];
    if (Array.isArray(sc.labels) && Array.isArray(sc.precision))
      parts.push(el("table", {className: "per-label"},
        el("caption", {className: "sr"}, "Precision and recall per label"),
        el("thead", {}, el("tr", {}, el("th", {scope: "col"}, "label"),
          el("th", {scope: "col"}, "precision"), el("th", {scope: "col"}, "recall"))),
        el("tbody", {}, ...sc.labels.map((l, i) => el("tr", {}, el("td", {}, String(l)),
          KM.numberEl("td", sc.precision[i], {className: "num"}),
          KM.numberEl("td", sc.recall[i], {className: "num"}))))));
    if (Array.isArray(sc.confusion_matrix)) parts.push(confusionTable(sc));
    const raw = el("details", {}, el("summary", {}, "The answer as JSON"),
      el("pre", {id: "score-raw"}, r.text));
    out.replaceChildren(...parts, raw);
    out.hidden = false;
    const fig = $("score-fig");
    fig.hidden = true;
    if (algorithmOf(ctx).target === "values" && csv.y) {
      fig.hidden = false;
      await drawActual(ctx, fig, csv.X, csv.y).catch((e) => state(noteOf(fig), e.message, true));
    }
  }

  /* The target choice of the form whose ids begin with `form` (score,
   * update): the columns of its CSV. */
  function fillTargets(ctx, names, chosen, form = "score") {
    const pick = $(form + "-target");
    pick.replaceChildren(el("option", {value: ""}, "as kmctl: y, else the last"),
      el("option", {value: "-1"}, "none"),
      ...names.map((n, j) => el("option", {value: String(j)}, n)));
    pick.value = chosen === undefined ? "" : String(chosen);
  }

  /* The target choice lists the columns of the CSV's first line. */
  function refreshTargets(ctx, form = "score") {
    let names = [];
    try {
      const first = KM.csvRecords($(form + "-rows").value.split(/\r?\n/)[0])[0];
      const num = (f) => f.trim() !== "" && isFinite(Number(f));
      if (first) names = first.fields.map((f, j) => num(f) ? "column " + (j + 1) : f.trim());
    } catch (e) { /* an unclosed quote: the choice waits */ }
    const was = $(form + "-target").value;
    fillTargets(ctx, names, was === "-1" || was !== "" && Number(was) < names.length ? was : "",
      form);
  }

  function scoreSection(ctx) {
    const target = algorithmOf(ctx).target;
    const file = el("input", {type: "file", id: "score-file", accept: ".csv,text/csv,text/plain"});
    file.addEventListener("change", async () => {
      const f = file.files[0];
      if (f) $("score-rows").value = await f.text();
      refreshTargets(ctx);
    });
    const form = el("form", {id: "score-form"},
      el("div", {className: "row"},
        el("label", {for: "score-file"}, "CSV file"), file,
        el("label", {for: "score-target"}, "Target column"), el("select", {id: "score-target"})),
      el("label", {for: "score-rows"}, "Or paste the CSV (a header line; " +
        (target === "none" ? "every column a feature, or one more column to colour by"
          : "the target column y, else the last, as kmctl score reads it") + ")"),
      el("textarea", {id: "score-rows", rows: "6", spellcheck: "false",
        oninput: () => refreshTargets(ctx)}),
      el("div", {className: "row"},
        el("button", {type: "submit", id: "score-run"}, "Score"),
        PLOTS.some((p) => p.rows && p.applies(ctx))
          ? el("button", {type: "button", id: "score-plot"}, "Plot these rows") : null));
    form.addEventListener("submit", (ev) => { ev.preventDefault(); runScore(ctx, false); });
    const plotBtn = form.querySelector("#score-plot");
    if (plotBtn) plotBtn.addEventListener("click", () => runScore(ctx, true));
    const fig = figure(target === "values" ? "Predicted against actual" : "Score", "score");
    fig.hidden = true;
    return el("section", {className: "mpart", id: "model-score", "aria-labelledby": "score-h"},
      el("h3", {id: "score-h"}, "Score rows of a CSV"), form,
      el("p", {id: "score-state", className: "state", role: "status"}),
      el("div", {id: "score-result", hidden: ""}), fig);
  }

  /* ------------------------------------------------------------ update */

  /* POST .../update (docs/api.md#update-add-rows-without-a-refit): the
   * rows of a CSV, read as the score form reads them (their targets
   * needed), sent as a job and followed until the new version serves. */
  async function runUpdate(ctx) {
    const msg = $("update-state");
    let csv;
    try {
      csv = readCsv(ctx, $("update-rows").value, $("update-target").value);
      if (!csv.y) throw new Error("an update needs the rows' targets: choose the target column");
    } catch (e) {
      state(msg, e.message, true);
      return;
    }
    fillTargets(ctx, csv.names, $("update-target").value, "update");
    const run = $("update-run"); // the page is drawn again once it succeeds
    run.disabled = true;
    try {
      state(msg, "Sending " + csv.X.length + " rows…");
      const r = await KM.api("POST", modelPath(ctx.m.name, "/update"),
        {X: csv.X, y: csv.y, async: true});
      if (!r.ok) {
        state(msg, "The server answered " + KM.why(r), true);
        if (r.status === 401) KM.needToken(r);
        return;
      }
      const id = r.data.job.id;
      for (;;) {
        const j = await KM.api("GET", "/v1/jobs/" + encodeURIComponent(id));
        if (!j.ok) {
          state(msg, "The job cannot be followed: " + KM.why(j), true);
          return;
        }
        const job = j.data;
        if (job.status === "succeeded") {
          render(ctx.m.name, "Version " + job.result.version + " made from version " +
            ctx.m.version + " and " + csv.X.length + " new rows.");
          return;
        }
        if (job.status === "failed" || job.status === "cancelled") {
          state(msg, "The update " + job.status + ": " + job.error.code + ": " +
            job.error.message, true);
          return;
        }
        state(msg, "Job " + job.id + " " + job.status + ", " +
          Math.floor(100 * (Number(job.progress) || 0)) + "%.");
        await new Promise((ok) => setTimeout(ok, 400));
      }
    } finally {
      run.disabled = false;
    }
  }

  /* Shown for a version the server can update (its metadata's updatable). */
  function updateSection(ctx) {
    if (!ctx.m.updatable) return null;
    const file = el("input", {type: "file", id: "update-file", accept: ".csv,text/csv,text/plain"});
    file.addEventListener("change", async () => {
      const f = file.files[0];
      if (f) $("update-rows").value = await f.text();
      refreshTargets(ctx, "update");
    });
    const form = el("form", {id: "update-form"},
      el("div", {className: "row"},
        el("label", {for: "update-file"}, "CSV file"), file,
        el("label", {for: "update-target"}, "Target column"), el("select", {id: "update-target"})),
      el("label", {for: "update-rows"}, "Or paste the CSV (a header line; the target column " +
        "y, else the last, as kmctl update reads it)"),
      el("textarea", {id: "update-rows", rows: "4", spellcheck: "false",
        oninput: () => refreshTargets(ctx, "update")}),
      el("div", {className: "row"}, el("button", {type: "submit", id: "update-run"}, "Add the rows")));
    form.addEventListener("submit", (ev) => { ev.preventDefault(); runUpdate(ctx); });
    return el("section", {className: "mpart", id: "model-update", "aria-labelledby": "update-h"},
      el("h3", {id: "update-h"}, "Add rows without a refit"),
      el("p", {}, "The server makes the next version, equal to a refit on this version's " +
        "rows and these (its preprocessing kept from the first fit)."),
      form, el("p", {id: "update-state", className: "state", role: "status"}));
  }

  /* ------------------------------------------------------------ drift */

  /* The drift answers this browser has seen, per model (sessionStorage:
   * the chart over time is of the answers kept here, at most 200). */
  function driftHistory(name, add) {
    const key = "kmserve-drift-" + name;
    let h = [];
    try { h = JSON.parse(sessionStorage.getItem(key) || "[]"); } catch (e) { h = []; }
    if (add && !h.some((a) => a.computed_at === add.computed_at && a.version === add.version)) {
      h.push({computed_at: add.computed_at, version: add.version, mmd2: add.mmd2,
        p_value: add.p_value});
      h = h.slice(-200);
      try { sessionStorage.setItem(key, JSON.stringify(h)); } catch (e) { /* full */ }
    }
    return h;
  }

  /* GET .../drift (docs/api.md#drift): the latest answer, and the chart of
   * p-value and MMD^2 over the answers kept. */
  async function runDrift(ctx, box) {
    const msg = $("drift-state");
    state(msg, "Testing the rows the model was recently asked against its training rows…");
    const r = await KM.api("GET", modelPath(ctx.m.name, "/drift"));
    if (!r.ok) {
      state(msg, "No drift test: " + KM.why(r), r.status !== 409);
      if (r.status === 401) KM.needToken(r);
      return;
    }
    const a = r.data;
    const hist = driftHistory(ctx.m.name, a);
    state(msg, (a.p_value <= 0.05 ? "Drift: the recent rows are unlike the training rows" :
      "No drift detected") + " (p = " + KM.numberText(a.p_value) + ", " + a.permutations +
      " permutations" + (a.cached ? ", cached" : "") + ").", a.p_value <= 0.05);
    const facts = {mmd2: a.mmd2, p_value: a.p_value, reference_rows: a.sizes.reference,
      recent_rows: a.sizes.recent, kernel: a.kernel.type + (a.kernel.own ? " (the model's own)"
        : " (median heuristic, gamma " + KM.numberText(a.kernel.gamma) + ")"),
      computed_at: a.computed_at};
    $("drift-facts").replaceChildren(defList(facts, "kv"));
    const fig = $("drift-fig");
    if (!window.Chart || hist.length < 1) return;
    const pts = (key) => hist.map((h, i) => ({x: i + 1, y: h[key]}));
    chartIn(ctx, fig, "drift", {type: "line", data: {datasets: [
      {label: "p-value", data: pts("p_value"), yAxisID: "p"},
      {label: "MMD²", data: pts("mmd2"), yAxisID: "m"}]},
    options: {scales: {x: axis("answer (this browser's, oldest first)"),
      p: axis("p-value", {position: "left", min: 0, max: 1}),
      m: axis("MMD²", {position: "right", grid: {drawOnChartArea: false}})}}});
    noteOf(fig).textContent = hist.length + " answer" + (hist.length === 1 ? "" : "s") +
      " kept in this browser; /metrics has the latest as kmserve_model_drift_p_value.";
  }

  function driftSection(ctx) {
    const box = el("section", {className: "mpart", id: "model-drift", "aria-labelledby": "drift-h"},
      el("h3", {id: "drift-h"}, "Drift"),
      el("p", {className: "state", role: "status", id: "drift-state"}),
      el("div", {id: "drift-facts"}),
      figure("Drift over time", "drift"),
      el("button", {type: "button", id: "drift-run", onclick: () => runDrift(ctx, box)},
        "Test again"));
    return box;
  }

  /* ------------------------------------------------------------ versions, delete */

  async function versionsSection(ctx, box) {
    const r = await KM.api("GET", modelPath(ctx.m.name, "/versions"));
    const msg = el("p", {className: "state", role: "status", id: "versions-state"});
    if (!r.ok) {
      state(msg, "Versions cannot be listed: " + KM.why(r), true);
      box.replaceChildren(el("h3", {}, "Versions"), msg);
      return;
    }
    const vs = r.data.versions || [];
    const rows = vs.map((v) => el("tr", {"data-version": String(v.version)},
      el("td", {className: "num"}, String(v.version)),
      v.error ? el("td", {className: "bad"}, v.error.code + ": " + v.error.message)
        : KM.timeCell(v.created_at),
      el("td", {className: "mono"}, KM.kernelText(v.kernel)),
      KM.numberEl("td", v.training ? v.training.training_score : null, {className: "num"}),
      el("td", {}, v.current ? "current" : v.error ? "" : el("button", {type: "button",
        className: "rollback", "aria-label": "roll back to version " + v.version,
        onclick: () => rollback(ctx, v.version)}, "Roll back to this"))));
    state(msg, r.data.keep_versions > 1 ? "The server keeps " + r.data.keep_versions +
      " versions a model (--keep-versions); a rollback makes the kept version's content the " +
      "next version." : "The server keeps only the current version (--keep-versions 1): " +
      "nothing to roll back to.");
    box.replaceChildren(el("h3", {}, "Versions"), msg, el("table", {id: "versions-table"},
      el("caption", {className: "sr"}, "The current and kept versions, newest first"),
      el("thead", {}, el("tr", {}, el("th", {scope: "col"}, "Version"),
        el("th", {scope: "col"}, "Created"), el("th", {scope: "col"}, "Kernel"),
        el("th", {scope: "col"}, "Training score"),
        el("th", {scope: "col"}, el("span", {className: "sr"}, "Actions")))),
      el("tbody", {}, ...rows)));
  }

  async function rollback(ctx, version) {
    const msg = $("versions-state");
    state(msg, "Rolling back to version " + version + "…");
    const r = await KM.api("POST", modelPath(ctx.m.name, "/rollback"), {version});
    if (!r.ok) {
      state(msg, "Rollback refused: " + KM.why(r), true);
      if (r.status === 401) KM.needToken(r);
      return;
    }
    render(ctx.m.name, "Version " + r.data.restored_version + " restored as version " +
      r.data.model.version + ".");
  }

  function deleteSection(ctx) {
    const msg = el("p", {className: "state", role: "status", id: "delete-state"});
    const confirmBox = el("div", {id: "delete-confirm", className: "confirm", hidden: ""},
      el("p", {}, "Delete model " + ctx.m.name + " and its kept versions? This cannot be undone."),
      el("button", {type: "button", id: "delete-yes", className: "danger", onclick: async () => {
        state(msg, "Deleting…");
        const r = await KM.api("DELETE", modelPath(ctx.m.name));
        if (r.status === 204) {
          state(msg, "Deleted.");
          location.hash = "#models";
          return;
        }
        state(msg, "Not deleted: " + KM.why(r), true);
        if (r.status === 401) KM.needToken(r);
      }}, "Delete " + ctx.m.name),
      " ",
      el("button", {type: "button", id: "delete-no", onclick: () => {
        confirmBox.hidden = true;
        $("delete-ask").focus();
      }}, "Keep it"));
    return el("section", {className: "mpart", id: "model-delete", "aria-labelledby": "delete-h"},
      el("h3", {id: "delete-h"}, "Delete"),
      el("button", {type: "button", id: "delete-ask", onclick: () => {
        confirmBox.hidden = false;
        $("delete-no").focus();
      }}, "Delete this model…"), confirmBox, msg);
  }

  /* ------------------------------------------------------------ the page */

  function overview(m) {
    const input = KM.inputOf(m, null);
    const items = [];
    const add = (k, v) => items.push(el("dt", {}, k), v);
    add("algorithm", el("dd", {}, m.algorithm));
    add("version", el("dd", {}, String(m.version)));
    const t = KM.timeCell(m.created_at);
    add("created", el("dd", {title: t.title}, t.textContent));
    add("kernel", el("dd", {className: "mono", title: JSON.stringify(m.kernel)}, KM.kernelText(m.kernel)));
    add("input", el("dd", {}, input.kind === "strings" ? "strings of at most " + input.maxLength + " bytes"
      : input.kind === "precomputed" ? input.width + " kernel values a row"
        : m.n_features + " feature" + (m.n_features === 1 ? "" : "s")));
    add("samples", el("dd", {}, valueEl(m.n_samples)));
    if (m.n_outputs !== undefined) add("outputs", el("dd", {}, valueEl(m.n_outputs)));
    if (Array.isArray(m.classes))
      add("classes", el("dd", {}, m.classes.map(String).join(", ")));
    add("size", el("dd", {}, valueEl(m.size_bytes), " bytes"));
    return el("dl", {className: "kv", id: "model-overview"}, ...items);
  }

  function searchPart(ctx) {
    const s = ctx.m.search;
    const summary = Object.assign({}, s);
    delete summary.results;
    const plot = PLOTS[0].applies(ctx);
    const axes = searchShape(ctx.m) || [];
    return el("section", {className: "mpart", id: "model-search", "aria-labelledby": "search-h"},
      el("h3", {id: "search-h"}, "Search: " + s.n_points + " candidates, " + s.scoring),
      defList(summary, "kv"),
      plot ? figure(axes.length === 2 ? "Mean " + s.scoring + " by " + axes[0].name + " and " +
        axes[1].name : "Mean " + s.scoring + " by " + axes[0].name, "search")
        : el("p", {className: "state"}, axes.length > 2 ? "The search varies " + axes.length +
          " parameters: see the table." : ""),
      searchTable(ctx.m));
  }

  let seq = 0;
  let loading = null;
  let current = null;

  async function render(name, note) {
    const mine = ++seq;
    const page = $("model-page");
    if (current) current.charts.forEach((c) => c.destroy());
    page.replaceChildren(el("div", {className: "bar"},
      el("h2", {id: "model-page-h"}, "Model " + name), el("a", {href: "#models"}, "All models")),
    el("p", {id: "model-state", className: "state", role: "status"}, "Loading…"));
    page.setAttribute("aria-labelledby", "model-page-h");
    const [r, about] = await Promise.all([KM.api("GET", modelPath(name)),
      KM.capabilities().outputs.length ? null : KM.api("GET", "/v1")]);
    if (mine !== seq) return;
    const caps = about ? (about.ok && about.data && about.data.capabilities) || {}
      : KM.capabilities();
    if (!r.ok) {
      state($("model-state"), r.status === 404 ? "There is no model " + name + " (" +
        KM.why(r) + ")." : "The model cannot be read: " + KM.why(r), true);
      if (r.status === 401) KM.needToken(r);
      return;
    }
    const ctx = {m: r.data, outputs: caps.outputs || [], algorithms: caps.algorithms || [],
      charts: [], csv: null};
    current = ctx;
    const m = ctx.m;
    state($("model-state"), note || "Version " + m.version + " · " + m.algorithm + " · " +
      KM.kernelText(m.kernel));
    const plots = PLOTS.slice(1).filter((p) => p.applies(ctx));
    const versions = el("section", {className: "mpart", id: "model-versions"}, el("h3", {}, "Versions"));
    const parts = [
      el("div", {className: "mcards"},
        card("Overview", overview(m)),
        card("Params", defList(m.params, "kv")),
        card("Training", defList(m.training, "kv")),
        card("Preprocess", defList(m.preprocess, "kv"))),
      m.search ? searchPart(ctx) : null,
      plots.length ? el("section", {className: "mpart", id: "model-plots"},
        el("h3", {}, "Plots"), ...plots.map((p) => figure(p.title, p.id))) : null,
      scoreSection(ctx), updateSection(ctx), driftSection(ctx), versions, deleteSection(ctx)];
    page.append(...parts.filter((p) => p));
    fillTargets(ctx, [], undefined);
    if (m.updatable) fillTargets(ctx, [], undefined, "update");
    const work = [versionsSection(ctx, versions), runDrift(ctx, null)];
    for (const p of PLOTS.filter((q) => q.applies(ctx))) work.push(drawPlot(ctx, p));
    await Promise.all(work);
    page.dataset.ready = name + "@" + m.version;
  }

  /* Shows the page for model `name`; the same name while it loads is the
   * same load. */
  function show(name) {
    const page = $("model-page");
    page.hidden = false;
    if (loading && loading.name === name) return loading.promise;
    delete page.dataset.ready;
    const promise = render(name).catch((e) => {
      state($("model-state") || page, "The page failed: " + e.message, true);
    }).finally(() => { if (loading && loading.promise === promise) loading = null; });
    loading = {name, promise};
    return promise;
  }

  /* location.hash "#model/NAME": this page, shown alone. */
  function follow() {
    const h = location.hash;
    const page = $("model-page");
    if (!page) return;
    if (!h.startsWith("#model/")) {
      page.hidden = true;
      return;
    }
    let name;
    try { name = decodeURIComponent(h.slice(7)); } catch (e) { name = h.slice(7); }
    show(name);
  }

  window.KMModel = {show};
  window.addEventListener("hashchange", follow);
  follow();
})();
