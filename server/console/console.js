/*
 * console.js - kmserve's web console (GET /console.js). The page is a set
 * of views chosen by the address's hash: #models lists the models (each
 * name links to #model/NAME, the model page model.js draws); #fit fits a
 * model from a CSV with a form drawn from the server's capabilities and
 * follows its job; #predict tries a predict (or a kpca projection) on a
 * model; #jobs pages through the fit jobs (a light list:
 * GET /v1/jobs?fields=summary) with progress, elapsed time and time left;
 * #server plots request rate, latency percentiles, error share, memory
 * and jobs from GET /metrics sampled by the page (Chart.js); #reference
 * renders the API reference from GET /openapi.yaml. The algorithms,
 * kernels, params and outputs come from the server's self-description
 * (GET /v1's capabilities), not from a list here; what a model takes as
 * rows (numbers, strings, or kernel values against its training rows)
 * from its metadata's input.
 *
 * It calls only this server's API, with the token the user gives (kept
 * in sessionStorage, sent as "Authorization: Bearer TOKEN"). Everything it
 * shows is set as text (textContent, createTextNode), never as HTML:
 * model names, labels and messages are user data. No framework, no
 * inline script or style (the page's Content-Security-Policy allows
 * neither).
 */
"use strict";

(function () {
  const TOKEN_KEY = "kmserve.token";
  const JOBS_EVERY_MS = 1000;
  const METHODS = ["get", "put", "post", "delete", "options", "head", "patch"];

  const $ = (id) => document.getElementById(id);

  /* An element with attributes (and properties for on* and className)
   * and children: strings become text nodes. */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "className") e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "string" || typeof c === "number"
        ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  function setState(id, text, bad) {
    const e = $(id);
    e.textContent = text || "";
    e.classList.toggle("bad", !!bad);
  }

  /* ------------------------------------------------------------ the API */

  function token() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { return ""; }
  }

  /* One call: {status, ok, data (parsed JSON or null), text}. status 0
   * when the server could not be reached. */
  async function api(method, path, body, extra) {
    const headers = Object.assign({}, extra || {});
    if (token()) headers.Authorization = "Bearer " + token();
    const init = {method, headers, cache: "no-store", credentials: "omit"};
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let r;
    try {
      r = await fetch(path, init);
    } catch (e) {
      return {status: 0, ok: false, data: null, text: String(e)};
    }
    const text = await r.text();
    let data = null;
    try { data = JSON.parse(text); } catch (e) { /* not JSON */ }
    return {status: r.status, ok: r.ok, data, text};
  }

  /* "401 unauthenticated: a bearer token is required ..." */
  function why(r) {
    if (r.status === 0) return "the server cannot be reached (" + r.text + ")";
    const e = r.data && r.data.error;
    return e ? r.status + " " + e.code + ": " + e.message : "HTTP " + r.status;
  }

  function showNotice(text) {
    const n = $("notice");
    n.textContent = text;
    n.hidden = !text;
  }

  /* A 401 anywhere: the page asks for a token. */
  function needToken(r) {
    showNotice((token() ? "The token was refused" : "This server needs a token") +
      ": enter one in the Token field above (" + why(r) + ").");
    $("token-input").focus();
  }

  function showTokenState() {
    $("token-state").textContent = token() ? "token set (this tab only)" : "no token";
  }

  /* ------------------------------------------------------------ models */

  let models = [];          // GET /v1/models' list
  let chosen = null;        // the name whose metadata is shown

  /* "2026-11-23T21:14:40.828Z" as "2026-11-23 21:14:40 UTC". */
  function timeCell(t) {
    const s = String(t || "");
    const m = s.match(/^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?Z$/);
    return el("td", {className: "time", title: s}, m ? m[1] + " " + m[2] + " UTC" : s);
  }

  /* A number as people read it: 4 significant digits (whole numbers as
   * they are, exponents for the very large and small), "" for null. */
  function numberText(x) {
    if (typeof x !== "number") return x === null || x === undefined ? "" : String(x);
    if (!isFinite(x) || Number.isInteger(x) && Math.abs(x) < 1e15) return String(x);
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(3).replace(/\.?0+e/, "e");
    return String(Number(x.toPrecision(4)));
  }

  /* A number in an element: numberText shown, the exact value (the
   * shortest text that reads back as the same double) on hover. */
  function numberEl(tag, x, attrs) {
    const e = el(tag, attrs, numberText(x));
    if (typeof x === "number" && numberText(x) !== String(x)) e.title = String(x);
    return e;
  }

  /* rbf(gamma=0.02778): a kernel as text, its numbers as numberText. */
  function kernelText(k) {
    if (!k || typeof k !== "object") return "";
    const args = [];
    for (const [key, v] of Object.entries(k)) {
      if (key === "type") continue;
      if (key === "kernels" && Array.isArray(v)) args.push(v.map(kernelText).join(", "));
      else args.push(key + "=" + (Array.isArray(v) ? "[" + v.map(numberText).join(", ") + "]"
        : numberText(v)));
    }
    return String(k.type) + (args.length ? "(" + args.join(", ") + ")" : "");
  }

  /* The models table's Features: n_features, or what a model of strings
   * or of precomputed kernel values takes (its metadata's input). */
  function featuresText(m) {
    const i = inputOf(m, null);
    if (i.kind === "strings") return "strings (≤ " + i.maxLength + " bytes)";
    if (i.kind === "precomputed") return i.width + " kernel values";
    return m.n_features;
  }

  async function loadModels() {
    const r = await api("GET", "/v1/models");
    const body = $("models-table").tBodies[0];
    if (!r.ok) {
      body.replaceChildren();
      models = [];
      fillModelChoice();
      setState("models-state", "Models cannot be listed: " + why(r), true);
      if (r.status === 401) needToken(r);
      return false;
    }
    models = (r.data && r.data.models) || [];
    $("jobs-models").replaceChildren(...models.map((m) => el("option", {value: m.name})));
    body.replaceChildren(...models.map((m) => el("tr",
      {className: m.name === chosen ? "chosen" : ""},
      el("td", {}, el("a", {href: "#model/" + encodeURIComponent(m.name),
        className: "model-link"}, m.name), " ",
      el("button", {type: "button", className: "link small",
        "aria-label": "metadata of " + m.name,
        onclick: () => showModel(m.name)}, "keys")),
      el("td", {className: "num"}, m.version),
      el("td", {}, m.algorithm),
      el("td", {className: "mono"}, kernelText(m.kernel)),
      el("td", {className: "num"}, m.n_samples),
      el("td", {className: "num"}, featuresText(m)),
      timeCell(m.created_at))));
    setState("models-state", models.length ? models.length + " model" +
      (models.length > 1 ? "s" : "") : "No models yet: fit one with POST /v1/models/{name}/fit.");
    fillModelChoice();
    if (chosen && !models.some((m) => m.name === chosen)) {
      chosen = null;
      $("model-detail").hidden = true;
    }
    return true;
  }

  /* A member of the metadata as text: objects as JSON on one line, long
   * ones indented and folded into a <details>. */
  function metaValue(v) {
    if (v === null || typeof v !== "object") return el("dd", {}, String(v));
    const line = JSON.stringify(v);
    if (line.length <= 120) return el("dd", {className: "mono"}, line);
    const json = JSON.stringify(v, null, 1);
    return el("dd", {}, el("details", {}, el("summary", {},
      Array.isArray(v) ? v.length + " entries" : Object.keys(v).length + " members"),
    el("pre", {}, json)));
  }

  async function showModel(name) {
    chosen = name;
    for (const tr of $("models-table").tBodies[0].rows)
      tr.classList.toggle("chosen", tr.cells[0].firstChild.textContent === name);
    const r = await api("GET", "/v1/models/" + encodeURIComponent(name));
    $("model-detail").hidden = false;
    $("model-detail-h").textContent = "Model " + name;
    const dl = $("model-meta");
    if (!r.ok) {
      dl.replaceChildren(el("dt", {}, "error"), el("dd", {className: "bad"}, why(r)));
      return;
    }
    const items = [];
    for (const [k, v] of Object.entries(r.data))
      items.push(el("dt", {}, k), k === "kernel"
        ? el("dd", {className: "mono"}, kernelText(v)) : metaValue(v));
    dl.replaceChildren(...items);
    const pick = $("predict-model");
    if ([...pick.options].some((o) => o.value === name)) {
      pick.value = name;
      fillOutputs();
    }
  }

  /* ------------------------------------------------------------ predict */

  /* What the server says it can answer (GET /v1's capabilities.outputs,
   * with the order of each algorithm's own list): read at each refresh,
   * so an algorithm or output added to the server shows here by itself. */
  let outputs = [];
  let algorithms = [];

  /* The member a route answers in ({"predictions": [...]}). */
  const ANSWER_OF = {predict: "predictions", project: "projections"};

  /* Whether model parameters p lack what an output needs: "needs" is
   * "params.NAME: true", and the model's NAME is false. */
  function lacks(p, needs) {
    const m = /^params\.(\w+): true$/.exec(needs || "");
    return !!m && p[m[1]] === false;
  }

  /* What a model can be asked, as the server describes it: each choice is
   * a label (the value of predict's "output", else what the route answers),
   * the route and the members it adds to the body. A model the server
   * describes no output of is asked a plain predict. */
  function choicesFor(m) {
    const p = (m && m.params) || {};
    const algo = m && algorithms.find((a) => a.name === m.algorithm);
    const order = (algo && algo.outputs) || [];
    const rank = (o) => order.indexOf(o.name) < 0 ? order.length : order.indexOf(o.name);
    const mine = outputs.filter((o) => m && (o.algorithms || []).includes(m.algorithm) &&
      !lacks(p, o.needs)).sort((x, y) => rank(x) - rank(y));
    if (!mine.length) return [{label: "predictions", route: "predict", extra: {}}];
    return mine.map((o) => {
      const answer = ANSWER_OF[o.route] || o.route;
      const extra = {};
      if (o.output) extra.output = o.output;
      if (o.inverse) extra.inverse = true;
      return {label: o.output || (o.inverse ? "inverse (rows are " + answer + ")" : answer),
        route: o.route, extra};
    });
  }

  function fillModelChoice() {
    const pick = $("predict-model");
    const was = pick.value;
    pick.replaceChildren(...models.map((m) => el("option", {value: m.name}, m.name)));
    if (models.some((m) => m.name === was)) pick.value = was;
    $("predict-run").disabled = !models.length;
    fillOutputs();
  }

  function modelNamed(name) {
    return models.find((m) => m.name === name) || null;
  }

  function fillOutputs() {
    const m = modelNamed($("predict-model").value);
    const out = $("predict-output");
    const was = out.value;
    const choices = m ? choicesFor(m) : [];
    out.replaceChildren(...choices.map((c, i) => el("option", {value: String(i)}, c.label)));
    if ([...out.options].some((o) => o.value === was)) out.value = was;
    out.disabled = choices.length < 2;
    showHint();
  }

  /* What model m takes as rows for choice c (its metadata's input; the
   * inverse map takes projections): {kind: "vectors" or "precomputed",
   * width} or {kind: "strings", maxLength}. */
  function inputOf(m, c) {
    const i = (m && m.input) || {};
    if (c && c.extra.inverse) return {kind: "vectors", width: m.params.n_components};
    if (i.kind === "strings") return {kind: "strings", maxLength: i.max_length};
    if (i.kind === "precomputed") return {kind: "precomputed", width: i.n_training};
    return {kind: "vectors", width: m && m.n_features};
  }

  function showHint() {
    const m = modelNamed($("predict-model").value);
    const c = m && choicesFor(m)[Number($("predict-output").value) || 0];
    const i = m ? inputOf(m, c) : null;
    let hint = "";
    if (i && i.kind === "strings")
      hint = "This model takes strings (of at most " + i.maxLength + " bytes): one " +
        "string a line (blank lines are skipped), or CSV whose header names a " +
        "column text (quote a text holding commas, quotes (doubled) or line " +
        "breaks), or JSON: an array of strings.";
    else if (i && i.kind === "precomputed")
      hint = "Each row has " + i.width + " kernel values: one per training row.";
    else if (i)
      hint = "Each row has " + i.width + " number" + (i.width === 1 ? "" : "s") + ".";
    $("predict-hint").textContent = hint;
  }

  const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

  /* The rows pasted: JSON (an array of rows, one row, or {"X": rows}) or
   * CSV (commas, semicolons, tabs or spaces; a first line that is not all
   * numbers is a header and skipped). Given need (the model's width), a
   * CSV with a header and one column more leaves out the column named y,
   * else the last, as kmctl does (rows.left names it). Throws an Error
   * naming the line. */
  function parseRows(text, need) {
    const t = text.trim();
    if (!t) throw new Error("no rows: paste JSON or CSV");
    if (t[0] === "[" || t[0] === "{") {
      let v;
      try { v = JSON.parse(t); } catch (e) { throw new Error("not valid JSON: " + e.message); }
      if (v && !Array.isArray(v) && Array.isArray(v.X)) v = v.X;
      if (Array.isArray(v) && v.length && v.every((x) => typeof x === "number")) v = [v];
      if (!Array.isArray(v) || !v.length || !v.every(Array.isArray))
        throw new Error("JSON rows must be an array of arrays of numbers");
      return v;
    }
    const rows = [];
    const lines = t.split(/\r?\n/);
    let head = null;
    lines.forEach((line, i) => {
      if (!line.trim()) return;
      const cells = line.trim().split(/\s*[,;\t]\s*|\s+/);
      const bad = cells.findIndex((c) => !NUMBER.test(c));
      if (bad >= 0) {
        if (!rows.length && i === 0) { head = cells; return; } // a header
        throw new Error("line " + (i + 1) + ", column " + (bad + 1) + ": \"" +
          cells[bad] + "\" is not a number");
      }
      rows.push(cells.map(Number));
    });
    if (!rows.length) throw new Error("no rows after the header");
    if (head && need && head.length === need + 1 && rows.every((r) => r.length === need + 1)) {
      const col = targetColumn(head, 1);
      const out = rows.map((r) => r.filter((_, j) => j !== col));
      out.left = head[col];
      return out;
    }
    return rows;
  }

  /* The target's first column in a CSV's header, as kmctl takes it: the
   * column named "y", else the last n (n target columns). */
  function targetColumn(head, n) {
    const y = head.indexOf("y");
    return y >= 0 ? y : head.length - n;
  }

  /* RFC 4180 records of text: fields split by commas, a quoted field may
   * hold commas, doubled quotes and line breaks; each record with the
   * line it starts on (blank lines are none). Throws naming the line. */
  function csvRecords(text) {
    const out = [];
    const n = text.length;
    let i = 0, line = 1;
    while (i < n) {
      const start = line, fields = [];
      for (;;) {
        let f = "";
        if (text[i] === "\"") {
          for (i++; ; i++) {
            if (i >= n) throw new Error("line " + start + ": a quoted field is not closed");
            if (text[i] === "\"" && text[i + 1] === "\"") { f += "\""; i++; continue; }
            if (text[i] === "\"") { i++; break; }
            if (text[i] === "\n") line++;
            f += text[i];
          }
          if (i < n && !",\r\n".includes(text[i]))
            throw new Error("line " + line + ": text after the closing quote of field " +
              (fields.length + 1));
        } else {
          const from = i;
          while (i < n && !",\r\n".includes(text[i])) i++;
          f = text.slice(from, i);
        }
        fields.push(f);
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "\r") i++;
        if (text[i] === "\n") i++;
        line++;
        break;
      }
      if (fields.length > 1 || fields[0] !== "") out.push({line: start, fields});
    }
    return out;
  }

  /* A string model's rows: JSON (an array of strings, or {"X": [...]}),
   * CSV whose header names a column "text" (that column is sent), else
   * one string a line, as typed (blank lines skipped). Returns {X, how};
   * throws an Error naming the line. */
  function parseStrings(text) {
    const t = text.trim();
    if (!t) throw new Error("no rows: paste text, one string a line");
    if (t[0] === "[" || t[0] === "{") {
      let v;
      try { v = JSON.parse(t); } catch (e) { v = undefined; }
      if (v !== undefined) {
        if (v && !Array.isArray(v) && Array.isArray(v.X)) v = v.X;
        if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === "string"))
          throw new Error("JSON rows of a string model must be an array of strings");
        return {X: v, how: "JSON"};
      }
    }
    let head = [];
    try { head = csvRecords(text.split(/\r?\n/)[0])[0].fields; } catch (e) { /* lines */ }
    const col = head.findIndex((f) => f.trim().toLowerCase() === "text");
    if (col < 0) {
      const X = text.split(/\r?\n/).filter((l) => l.trim());
      return {X, how: "one string a line"};
    }
    const records = csvRecords(text).slice(1);
    for (const r of records)
      if (r.fields.length !== head.length)
        throw new Error("line " + r.line + ": " + r.fields.length + " fields; the " +
          "header has " + head.length);
    if (!records.length) throw new Error("no rows after the header");
    return {X: records.map((r) => r.fields[col]), how: "the CSV's column " + head[col].trim()};
  }

  function showAnswer(choice, m, data) {
    const values = data.predictions || data.projections || [];
    const head = $("predict-table").tHead.rows[0];
    const body = $("predict-table").tBodies[0];
    const wide = values.length && Array.isArray(values[0]) ? values[0].length : 0;
    let names = [choice.label];
    if (wide) {
      names = [];
      for (let j = 0; j < wide; j++)
        names.push(choice.label === "probability" && m.classes
          ? "p(" + String(m.classes[j]) + ")" : choice.label + " " + (j + 1));
    }
    head.replaceChildren(el("th", {scope: "col"}, "row"),
      ...names.map((n) => el("th", {scope: "col"}, n)));
    body.replaceChildren(...values.map((v, i) => el("tr", {},
      el("td", {className: "num"}, i + 1),
      ...(wide ? v : [v]).map((x) => numberEl("td",
        x, {className: typeof x === "number" ? "num" : ""})))));
  }

  async function runPredict(ev) {
    ev.preventDefault();
    const m = modelNamed($("predict-model").value);
    $("predict-answer").hidden = true;
    if (!m) {
      setState("predict-state", "Choose a model first.", true);
      return;
    }
    const choice = choicesFor(m)[Number($("predict-output").value) || 0];
    const strings = inputOf(m, choice).kind === "strings";
    let X, how = "";
    try {
      if (strings) ({X, how} = parseStrings($("predict-rows").value));
      else {
        const i = inputOf(m, choice);
        X = parseRows($("predict-rows").value, i.kind === "vectors" ? i.width : 0);
        if (X.left) how = "column " + X.left + " left out, as kmctl does";
      }
    } catch (e) {
      setState("predict-state", e.message, true);
      $("predict-rows").focus();
      return;
    }
    setState("predict-state", "Asking " + m.name + "…");
    const path = "/v1/models/" + encodeURIComponent(m.name) + "/" + choice.route;
    const r = await api("POST", path, Object.assign({X}, choice.extra));
    if (!r.ok) {
      setState("predict-state", "The server answered " + why(r), true);
      if (r.status === 401) needToken(r);
      return;
    }
    setState("predict-state", "POST " + path + ": " + X.length +
      (strings ? " string" : " row") + (X.length === 1 ? "" : "s") +
      (how ? " (" + how + ")" : "") + ", answered by version " +
      (r.data.model && r.data.model.version) + ".");
    showAnswer(choice, m, r.data);
    $("predict-raw").textContent = r.text;
    $("predict-answer").hidden = false;
  }

  /* ------------------------------------------------------------ jobs */

  /* The jobs view polls a light list: GET /v1/jobs?fields=summary, one
   * page of JOBS_PAGE, filtered by state and model as chosen. */
  const JOBS_PAGE = 20;
  const JOBS_IDLE_MS = 5000;     // when the jobs view is not shown
  let jobsTimer = null;
  let jobsOffset = 0, jobsNext = null;
  const jobRows = new Map();      // id -> its <tr>
  const jobStatus = new Map();    // id -> the status last seen

  function jobRow(job) {
    const bar = el("progress", {max: "1", value: "0",
      "aria-label": "progress of job " + job.id});
    const pct = el("span", {className: "pct"});
    const cancel = el("button", {type: "button", "aria-label": "cancel job " + job.id,
      onclick: () => cancelJob(job.id)}, "Cancel");
    const tr = el("tr", {"data-job": job.id},
      el("td", {className: "mono"}, job.id), el("td", {}, job.model),
      el("td", {className: "status"}), el("td", {className: "bar"}, bar, " ", pct),
      timeCell(job.created_at), el("td", {className: "num elapsed"}),
      el("td", {className: "num left"}), el("td", {className: "bad"}), el("td", {}, cancel));
    tr.parts = {bar, pct, cancel};
    return tr;
  }

  /* Seconds as "42 s", "3 min 5 s", "2 h 10 min". */
  function duration(sec) {
    if (!(sec >= 0) || !isFinite(sec)) return "";
    if (sec < 60) return (sec < 10 ? sec.toFixed(1) : Math.round(sec)) + " s";
    if (sec < 3600) return Math.floor(sec / 60) + " min " + Math.round(sec % 60) + " s";
    return Math.floor(sec / 3600) + " h " + Math.round(sec % 3600 / 60) + " min";
  }

  /* A job's elapsed seconds (started to finished, or to now) and, while it
   * runs with progress p > 0, the time left: elapsed·(1−p)/p. */
  function jobTimes(job, now) {
    const t = (s) => (s ? Date.parse(s) : NaN);
    const from = t(job.started_at), to = job.finished_at ? t(job.finished_at) : now;
    const elapsed = isNaN(from) ? NaN : Math.max(0, (to - from) / 1000);
    const p = Number(job.progress) || 0;
    const left = job.status === "running" && p > 0 && p < 1 ? elapsed * (1 - p) / p : NaN;
    return {elapsed, left};
  }

  function updateJobRow(tr, job) {
    const p = Math.max(0, Math.min(1, Number(job.progress) || 0));
    tr.parts.bar.value = p;
    tr.parts.pct.textContent = Math.floor(p * 100) + "%";
    tr.cells[2].textContent = job.status;
    tr.cells[2].className = "status " + (job.status === "succeeded" ? "good"
      : job.status === "failed" || job.status === "cancelled" ? "bad" : "");
    const {elapsed, left} = jobTimes(job, Date.now());
    tr.cells[5].textContent = duration(elapsed);
    tr.cells[6].textContent = isNaN(left) ? "" : "about " + duration(left);
    tr.cells[7].textContent = job.error ? job.error.code + ": " + job.error.message : "";
    tr.parts.cancel.hidden = !(job.status === "queued" || job.status === "running");
  }

  /* The list's query: the filter chosen and the page. */
  function jobsQuery() {
    const q = new URLSearchParams({fields: "summary", offset: String(jobsOffset),
      limit: String(JOBS_PAGE)});
    if ($("jobs-status").value) q.set("state", $("jobs-status").value);
    const model = $("jobs-model").value.trim();
    if (model) q.set("model", model);
    return "/v1/jobs?" + q.toString();
  }

  let jobsRound = 0;              // the latest poll; an older one's answer is dropped

  async function pollJobs() {
    if (jobsTimer) clearTimeout(jobsTimer);
    jobsTimer = null;
    const round = ++jobsRound;
    const r = await api("GET", jobsQuery());
    if (round !== jobsRound) return; // a newer poll (a filter or page chosen) is under way
    if (!r.ok) {
      setState("jobs-state", r.status === 403
        ? "Jobs need an admin token (" + why(r) + ")."
        : "Jobs cannot be listed: " + why(r), true);
      if (r.status === 401) needToken(r);
      // a token refused waits for the token to change; a bad filter, a
      // server away or busy (0, 5xx) is asked again
      if (r.status !== 401 && r.status !== 403)
        jobsTimer = setTimeout(pollJobs, JOBS_IDLE_MS);
      return;
    }
    const jobs = (r.data && r.data.jobs) || [];
    const total = (r.data && r.data.total) || 0;
    if (!jobs.length && jobsOffset > 0 && total > 0) { // the page emptied: back
      jobsOffset = Math.max(0, total - JOBS_PAGE);
      return pollJobs();
    }
    jobsNext = r.data.next_offset === undefined ? null : r.data.next_offset;
    const body = $("jobs-table").tBodies[0];
    let finished = false;
    const rows = jobs.map((job) => {
      let tr = jobRows.get(job.id);
      if (!tr) jobRows.set(job.id, tr = jobRow(job));
      const before = jobStatus.get(job.id);
      if (job.status === "succeeded" && before && before !== "succeeded") finished = true;
      jobStatus.set(job.id, job.status);
      updateJobRow(tr, job);
      return tr;
    });
    for (const id of [...jobRows.keys()])
      if (!jobs.some((j) => j.id === id)) { jobRows.delete(id); jobStatus.delete(id); }
    // keep rows (and a focused Cancel button) in place when nothing moved
    if (rows.length !== body.rows.length || rows.some((tr, i) => body.rows[i] !== tr))
      body.replaceChildren(...rows);
    const active = jobs.filter((j) => j.status === "queued" || j.status === "running").length;
    setState("jobs-state", total ? "Jobs " + (jobsOffset + 1) + "–" +
      (jobsOffset + jobs.length) + " of " + total + ", newest first" +
      (active ? "; " + active + " of these queued or running" : "") + "." : "No jobs.");
    $("jobs-prev").disabled = jobsOffset === 0;
    $("jobs-next").disabled = jobsNext === null;
    if (finished) loadModels();
    jobsTimer = setTimeout(pollJobs, view === "jobs" ? JOBS_EVERY_MS : JOBS_IDLE_MS);
  }

  function startJobs() {
    pollJobs();
  }

  function jobsPage(offset) {
    jobsOffset = Math.max(0, offset);
    pollJobs();
  }

  async function cancelJob(id) {
    const r = await api("DELETE", "/v1/jobs/" + encodeURIComponent(id));
    setState("jobs-state", r.ok ? "Cancellation of " + id + " asked."
      : "Cannot cancel " + id + ": " + why(r), !r.ok);
  }

  /* ------------------------------------------------------------ metrics */

  /* Prometheus text: [{name, labels: {k: v}, value}] (comments skipped). */
  function parseMetrics(text) {
    const out = [];
    const LINE = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
    const LABEL = /([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"/g;
    for (const line of text.split("\n")) {
      if (!line || line[0] === "#") continue;
      const m = LINE.exec(line);
      if (!m) continue;
      const labels = {};
      for (const l of (m[2] || "").matchAll(LABEL))
        labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
      out.push({name: m[1], labels, value: Number(m[3])});
    }
    return out;
  }

  /* What the server page plots of one scrape: requests (all, 4xx, 5xx),
   * the latency histogram summed over routes ({le: count}), memory and
   * jobs by state. */
  function summarise(samples) {
    const s = {requests: 0, r4xx: 0, r5xx: 0, buckets: {}, jobs: {}, gauges: {}};
    for (const x of samples) {
      if (x.name === "kmserve_http_requests_total") {
        s.requests += x.value;
        if (/^4/.test(x.labels.code)) s.r4xx += x.value;
        if (/^5/.test(x.labels.code)) s.r5xx += x.value;
      } else if (x.name === "kmserve_http_request_duration_seconds_bucket") {
        s.buckets[x.labels.le] = (s.buckets[x.labels.le] || 0) + x.value;
      } else if (x.name === "kmserve_jobs") {
        s.jobs[x.labels.state] = x.value;
      } else {
        s.gauges[x.name] = x.value;
      }
    }
    return s;
  }

  /* The q-quantile of the requests between two scrapes, from the
   * histogram buckets' increase (linear within a bucket, as Prometheus's
   * histogram_quantile); null without requests. */
  function quantile(q, before, after) {
    const les = Object.keys(after.buckets).sort((a, b) => Number(a) - Number(b));
    const inc = les.map((le) => (after.buckets[le] || 0) - (before.buckets[le] || 0));
    const n = inc.length ? inc[inc.length - 1] : 0;
    if (!(n > 0)) return null;
    const rank = q * n;
    for (let i = 0; i < les.length; i++) {
      if (inc[i] >= rank) {
        const hi = Number(les[i]);
        const lo = i ? Number(les[i - 1]) : 0;
        if (!isFinite(hi)) return lo;
        const below = i ? inc[i - 1] : 0;
        const width = inc[i] - below;
        return lo + (hi - lo) * (width > 0 ? (rank - below) / width : 1);
      }
    }
    return Number(les[les.length - 2]) || null;
  }

  /* ------------------------------------------------------------ server */

  const SERVER_EVERY_MS = 2000;
  const SERVER_KEEP = 150;          // samples kept: five minutes
  const MIB = 1048576;
  let serverTimer = null;
  const scrapes = [];               // [{t (ms), text, s (summarised)}]
  const charts = {};
  const PALETTE = ["#1f5fbf", "#d9822b", "#b3261e", "#1e7a3c", "#7b4fb3", "#5b6573"];

  function lineChart(id, series) {
    if (charts[id]) return charts[id];
    if (typeof Chart === "undefined") return null;
    charts[id] = new Chart($(id), {
      type: "line",
      data: {labels: [], datasets: series.map((name, i) => ({label: name, data: [],
        borderColor: PALETTE[i % PALETTE.length],
        backgroundColor: PALETTE[i % PALETTE.length],
        borderWidth: 1.5, pointRadius: 0, spanGaps: false, tension: 0}))},
      options: {animation: false, responsive: true, maintainAspectRatio: false,
        interaction: {mode: "index", intersect: false},
        scales: {x: {ticks: {maxTicksLimit: 6, maxRotation: 0}}, y: {beginAtZero: true}},
        plugins: {legend: {position: "bottom", labels: {boxWidth: 12}}}},
    });
    return charts[id];
  }

  function clock(t) {
    return new Date(t).toTimeString().slice(0, 8);
  }

  /* Every chart drawn again from the scrapes kept: a point per pair of
   * consecutive scrapes (rates, percentiles, shares) or per scrape
   * (memory, jobs). */
  function drawServer() {
    const pairs = scrapes.slice(1).map((b, i) => [scrapes[i], b]);
    const put = (chart, labels, columns) => {
      if (!chart) return;
      chart.data.labels = labels;
      columns.forEach((c, i) => { chart.data.datasets[i].data = c; });
      chart.update("none");
    };
    const at = pairs.map(([, b]) => clock(b.t));
    put(lineChart("chart-rate", ["requests/s"]), at,
      [pairs.map(([a, b]) => (b.s.requests - a.s.requests) / ((b.t - a.t) / 1000))]);
    put(lineChart("chart-latency", ["p50", "p90", "p99"]), at, [0.5, 0.9, 0.99].map((q) =>
      pairs.map(([a, b]) => {
        const v = quantile(q, a.s, b.s);
        return v === null ? null : v * 1000;
      })));
    const share = (k) => pairs.map(([a, b]) => {
      const n = b.s.requests - a.s.requests;
      return n > 0 ? (b.s[k] - a.s[k]) / n : null;
    });
    put(lineChart("chart-errors", ["4xx", "5xx"]), at, [share("r4xx"), share("r5xx")]);
    /* memory as a share of the budget (a budget of many GiB would flatten
     * MiB-sized lines at 0); the caption gives the budget itself */
    const BUDGET = "kmserve_memory_budget_bytes";
    const pct = (name) => scrapes.map((x) => (name in x.s.gauges && x.s.gauges[BUDGET] > 0
      ? 100 * x.s.gauges[name] / x.s.gauges[BUDGET] : null));
    put(lineChart("chart-memory", ["reserved", "models", "resident"]),
      scrapes.map((x) => clock(x.t)), [pct("kmserve_fit_memory_reserved_bytes"),
        pct("kmserve_model_bytes"), pct("kmserve_process_resident_memory_bytes")]);
    const last = scrapes.length ? scrapes[scrapes.length - 1].s.gauges[BUDGET] : undefined;
    $("memory-caption").textContent = "Memory (% of the budget" +
      (last > 0 ? ", " + numberText(Math.round(last / MIB)) + " MiB" : "") + ")";
    const states = scrapes.length ? Object.keys(scrapes[scrapes.length - 1].s.jobs) : [];
    const jc = lineChart("chart-jobs", states);
    if (jc && jc.data.datasets.length === states.length)
      put(jc, scrapes.map((x) => clock(x.t)), states.map((st) =>
        scrapes.map((x) => (st in x.s.jobs ? x.s.jobs[st] : null))));
  }

  /* The job states the server names (its kmserve_jobs series) fill the
   * jobs view's filter. */
  function fillStates(s) {
    const pick = $("jobs-status");
    if (pick.options.length > 1) return;
    for (const st of Object.keys(s.jobs)) pick.appendChild(el("option", {value: st}, st));
  }

  let scraping = false;

  async function scrape() {
    if (scraping) return;
    scraping = true;
    serverTimer = null;
    const r = await api("GET", "/metrics");
    scraping = false;
    if (!r.ok) {
      setState("server-state", r.status === 401 || r.status === 403
        ? "The server's metrics need a token (--protect-metrics): " + why(r)
        : "The metrics cannot be read: " + why(r), true);
      if (r.status === 401) needToken(r);
    } else {
      const x = {t: Date.now(), text: r.text, s: summarise(parseMetrics(r.text))};
      scrapes.push(x);
      if (scrapes.length > SERVER_KEEP) scrapes.shift();
      fillStates(x.s);
      if (view === "server") {
        drawServer();
        setState("server-state", "GET /metrics every " + SERVER_EVERY_MS / 1000 +
          " s; " + scrapes.length + " samples since " + clock(scrapes[0].t) + ".");
      }
    }
    if (view === "server") serverTimer = setTimeout(scrape, SERVER_EVERY_MS);
  }

  function startServer() {
    if (!serverTimer) scrape();
  }

  /* ------------------------------------------------------------ fit */

  /* The fit form is drawn from GET /v1's capabilities: the algorithms,
   * the kernels (not composites: their parts are not asked here) and
   * every param of both, with its type, default, choices and bounds. A
   * param that applies only with another's values (applies_with) shows
   * only then. A number param may carry a search: values separated by
   * commas, sent as the fit's search.params (kernel.NAME for a kernel's). */
  let kernels = [];
  let fitData = null;              // {head: [names], rows: [[text]]}
  let fitHead = "";                // the columns the choices were made for
  const FIT_POLL_MS = 400;

  function algoNamed(n) { return algorithms.find((a) => a.name === n) || null; }
  function kernelNamed(n) { return kernels.find((k) => k.name === n) || null; }

  function fillFitChoices() {
    const a = $("fit-algorithm"), k = $("fit-kernel");
    const wasA = a.value, wasK = k.value;
    a.replaceChildren(...algorithms.map((x) => el("option", {value: x.name}, x.name)));
    k.replaceChildren(...kernels.filter((x) => !x.composite)
      .map((x) => el("option", {value: x.name}, x.name)));
    if (algoNamed(wasA)) a.value = wasA;
    if (kernelNamed(wasK)) k.value = wasK;
    else if (kernelNamed("rbf")) k.value = "rbf";
    fillFitParams();
  }

  function paramAbout(p) {
    const parts = [];
    if (p.choices) parts.push("one of " + p.choices.join(", "));
    if (p.minimum !== null && p.minimum !== undefined)
      parts.push((p.exclusive_minimum ? "> " : "≥ ") + numberText(p.minimum));
    if (p.maximum !== null && p.maximum !== undefined) parts.push("≤ " + numberText(p.maximum));
    if (p.description) parts.push(p.description);
    return parts.join("; ");
  }

  /* One row of the params table: the value's control and, for numbers
   * when the algorithm searches, the search's. key: "NAME" or
   * "kernel.NAME". */
  function paramRow(p, key, searchable) {
    const id = "fit-p-" + key.replace(/\W/g, "-");
    let control;
    const def = p.default === null || p.default === undefined ? null : p.default;
    if (p.type === "boolean" || p.choices) {
      const opts = p.type === "boolean" ? ["true", "false"] : p.choices;
      control = el("select", {id},
        el("option", {value: ""}, def === null ? "(from the data)" : "default: " + String(def)),
        ...opts.map((o) => el("option", {value: o}, o)));
    } else {
      control = el("input", {id, spellcheck: "false", autocomplete: "off",
        placeholder: def === null ? (p.data_default ? "from the data" : "")
          : typeof def === "object" ? JSON.stringify(def) : numberText(def)});
      if (p.type === "number" || p.type === "integer") control.inputMode = "decimal";
    }
    control.dataset.key = key;
    control.dataset.type = p.type;
    control.addEventListener("change", showApplicable);
    let grid = null;
    if (searchable && (p.type === "number" || p.type === "integer"))
      grid = el("input", {id: id + "-grid", "aria-label": "search values of " + key,
        spellcheck: "false", autocomplete: "off", placeholder: "e.g. 0.1, 1, 10"});
    const tr = el("tr", {"data-key": key},
      el("th", {scope: "row"}, el("label", {for: id}, key)), el("td", {}, control),
      el("td", {}, grid), el("td", {className: "about"}, paramAbout(p)));
    tr.param = p;
    tr.parts = {control, grid};
    return tr;
  }

  function fillFitParams() {
    const a = algoNamed($("fit-algorithm").value);
    const k = kernelNamed($("fit-kernel").value);
    const rows = [];
    for (const p of (a && a.params) || []) rows.push(paramRow(p, p.name, a.search));
    for (const p of (k && k.params) || []) rows.push(paramRow(p, "kernel." + p.name, a && a.search));
    $("fit-params").tBodies[0].replaceChildren(...rows);
    $("fit-cv").disabled = $("fit-scoring").disabled = !(a && a.search);
    const target = a ? a.target : "";
    fitHead = "";                  // the target's default follows the algorithm
    $("fit-about").textContent = a ? a.name + ": y is " + (target === "none"
      ? "not used" : target === "classes" ? "a class label a row" : "a number a row") +
      (k ? "; kernel " + k.name + " takes " + (k.input || "vectors") : "") + "." : "";
    showApplicable();
    fillColumns();
  }

  /* A param's current value as the form has it: its control's, else its
   * default. */
  function formValue(key) {
    for (const tr of $("fit-params").tBodies[0].rows)
      if (tr.dataset.key === key) return tr.parts.control.value || String(tr.param.default);
    return "";
  }

  function showApplicable() {
    for (const tr of $("fit-params").tBodies[0].rows) {
      const w = tr.param.applies_with;
      tr.hidden = !!w && !w.some((c) => c.values.includes(formValue(c.param)));
    }
  }

  /* The CSV given: {head, rows}; a first record that is not all numbers
   * names the columns, else they are column 1, 2, ... */
  function readFitCsv(text) {
    const recs = csvRecords(text).map((r) => r.fields.map((f) => f.trim()));
    if (!recs.length) return null;
    const named = recs[0].some((f) => !NUMBER.test(f));
    const head = named ? recs[0] : recs[0].map((_, j) => "column " + (j + 1));
    return {head, rows: named ? recs.slice(1) : recs};
  }

  function fillColumns() {
    const a = algoNamed($("fit-algorithm").value);
    const k = kernelNamed($("fit-kernel").value);
    let data = null, problem = "";
    try { data = readFitCsv($("fit-csv").value); } catch (e) { problem = e.message; }
    fitData = data;
    const head = data ? data.head : [];
    const t = $("fit-target"), x = $("fit-text");
    // a choice is kept while the columns stay the same
    const same = JSON.stringify(head) === fitHead;
    fitHead = JSON.stringify(head);
    const wasT = same ? t.value : "", wasX = same ? x.value : "";
    t.replaceChildren(el("option", {value: ""}, "(none)"),
      ...head.map((h, j) => el("option", {value: String(j)}, h)));
    x.replaceChildren(...head.map((h, j) => el("option", {value: String(j)}, h)));
    const none = !a || a.target === "none";
    if (head.length) {
      t.value = wasT && wasT < head.length ? wasT : none ? "" : String(targetColumn(head, 1));
      const tx = head.findIndex((h) => h.toLowerCase() === "text");
      x.value = wasX && wasX < head.length ? wasX : String(tx >= 0 ? tx : 0);
    }
    t.disabled = none;
    if (none) t.value = "";
    const strings = k && k.input === "strings";
    x.disabled = !strings;
    $("fit-columns").textContent = problem ? problem : data ? data.rows.length + " rows, " +
      head.length + " columns" + (strings ? "; X is the text column" : t.value
        ? "; X is every column but " + head[Number(t.value)] : "; X is every column") + "."
      : "No data yet: choose a file or paste CSV.";
    $("fit-columns").classList.toggle("bad", !!problem);
  }

  function readFile() {
    const f = $("fit-file").files[0];
    if (!f) return;
    const reader = new FileReader();
    reader.onload = () => {
      $("fit-csv").value = String(reader.result);
      if (!$("fit-name").value) $("fit-name").value = f.name.replace(/\.\w+$/, "")
        .replace(/[^\w.-]/g, "_").slice(0, 64);
      fillColumns();
    };
    reader.onerror = () => setState("fit-state", "The file cannot be read: " +
      String(reader.error), true);
    reader.readAsText(f);
  }

  /* A control's text as the param's type: a number, true/false, the
   * text, or JSON for arrays and objects. Throws naming the key. */
  function typed(text, type, key) {
    if (type === "number" || type === "integer") {
      if (!NUMBER.test(text)) throw new Error(key + ": \"" + text + "\" is not a number");
      return Number(text);
    }
    if (type === "boolean") return text === "true";
    if (type === "array" || type === "object") {
      try { return JSON.parse(text); } catch (e) {
        throw new Error(key + ": not valid JSON (" + e.message + ")");
      }
    }
    return text;
  }

  /* The fit's body from the form; throws an Error saying what is wrong. */
  function fitBody() {
    const a = algoNamed($("fit-algorithm").value);
    const k = kernelNamed($("fit-kernel").value);
    if (!a || !k) throw new Error("choose an algorithm and a kernel");
    if (!fitData || !fitData.rows.length) throw new Error("no data: choose a file or paste CSV");
    const body = {algorithm: a.name, kernel: {type: k.name}, params: {}, async: true};
    const search = {};
    for (const tr of $("fit-params").tBodies[0].rows) {
      if (tr.hidden) continue;
      const key = tr.dataset.key, type = tr.parts.control.dataset.type;
      const v = tr.parts.control.value.trim();
      const into = key.startsWith("kernel.") ? body.kernel : body.params;
      const name = key.startsWith("kernel.") ? key.slice(7) : key;
      if (v !== "") into[name] = typed(v, type, key);
      const g = tr.parts.grid && tr.parts.grid.value.trim();
      if (g) search[key] = g.split(/\s*,\s*/).filter((x) => x).map((x) => typed(x, type, key));
    }
    if (Object.keys(search).length) {
      body.search = {params: search};
      const cv = $("fit-cv").value.trim(), sc = $("fit-scoring").value.trim();
      if (cv) body.search.cv = NUMBER.test(cv) ? Number(cv) : cv;
      if (sc) body.search.scoring = sc;
    }
    const t = $("fit-target").value === "" ? -1 : Number($("fit-target").value);
    if (a.target !== "none" && t < 0) throw new Error("choose the target column (y)");
    const strings = k.input === "strings";
    const xcol = Number($("fit-text").value);
    const line = (i) => "row " + (i + 1) + " of the data";
    body.X = fitData.rows.map((r, i) => {
      if (r.length !== fitData.head.length)
        throw new Error(line(i) + ": " + r.length + " fields; the header has " +
          fitData.head.length);
      if (strings) return r[xcol];
      return r.filter((_, j) => j !== t).map((c, j) => {
        if (!NUMBER.test(c)) throw new Error(line(i) + ", column " + (j + 1) + ": \"" + c +
          "\" is not a number");
        return Number(c);
      });
    });
    if (t >= 0) {
      const ys = fitData.rows.map((r) => r[t]);
      const numeric = ys.every((v) => NUMBER.test(v));
      if (a.target === "values" && !numeric)
        throw new Error("the target column " + fitData.head[t] + " must hold numbers");
      body.y = numeric ? ys.map(Number) : ys;
    }
    if (!Object.keys(body.params).length) delete body.params;
    return body;
  }

  async function runFit(ev) {
    ev.preventDefault();
    const name = $("fit-name").value.trim();
    let body;
    try {
      if (!name) throw new Error("give the model a name");
      body = fitBody();
    } catch (e) {
      setState("fit-state", e.message, true);
      return;
    }
    $("fit-run").disabled = true;
    setState("fit-state", "Sending " + body.X.length + " rows…");
    const r = await api("POST", "/v1/models/" + encodeURIComponent(name) + "/fit", body);
    if (!r.ok) {
      $("fit-run").disabled = false;
      setState("fit-state", "The server answered " + why(r), true);
      if (r.status === 401) needToken(r);
      return;
    }
    const job = r.data && r.data.job;
    followFit(name, job && job.id);
  }

  async function followFit(name, id) {
    const bar = $("fit-progress");
    bar.hidden = false;
    bar.value = 0;
    for (;;) {
      const r = await api("GET", "/v1/jobs/" + encodeURIComponent(id));
      if (!r.ok) {
        setState("fit-state", "The job cannot be followed: " + why(r), true);
        break;
      }
      const job = r.data;
      bar.value = Math.max(0, Math.min(1, Number(job.progress) || 0));
      const {elapsed, left} = jobTimes(job, Date.now());
      setState("fit-state", "Job " + job.id + " " + job.status + ", " +
        Math.floor(bar.value * 100) + "%" + (isNaN(elapsed) ? "" : ", " + duration(elapsed)) +
        (isNaN(left) ? "" : ", about " + duration(left) + " left") + ".");
      if (job.status === "succeeded") {
        await loadModels();
        location.hash = "#model/" + encodeURIComponent(name);
        break;
      }
      if (job.status === "failed" || job.status === "cancelled") {
        setState("fit-state", "The fit " + job.status + ": " + (job.error
          ? job.error.code + ": " + job.error.message : ""), true);
        break;
      }
      await new Promise((ok) => setTimeout(ok, FIT_POLL_MS));
    }
    $("fit-run").disabled = false;
  }

  /* ------------------------------------------------------------ views */

  const VIEWS = ["models", "fit", "predict", "jobs", "server", "reference"];
  let view = "models";

  /* The view the address's hash names: a section, or #model/NAME, the
   * model page that model.js draws (window.KMModel.show). */
  function route() {
    const h = location.hash.slice(1);
    let page = VIEWS.includes(h) ? h : "models";
    let model = null;
    if (h.startsWith("model/")) {
      page = "model-page";
      try { model = decodeURIComponent(h.slice(6)); } catch (e) { model = h.slice(6); }
    }
    view = page;
    for (const sec of document.querySelectorAll("main > section"))
      sec.hidden = sec.id !== page;
    for (const a of document.querySelectorAll("header nav a")) {
      if (a.getAttribute("href") === "#" + page) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    if (model !== null && window.KMModel && typeof window.KMModel.show === "function")
      window.KMModel.show(model);
    if (page === "server") startServer();
    if (page === "jobs") {
      if ($("jobs-status").options.length < 2) scrape();
      pollJobs();
    }
  }

  /* ------------------------------------------------------------ reference */

  /* The operations of an OpenAPI document's "paths", read from its YAML:
   * [{method, path, summary, description, statuses}] in the document's
   * order. It reads the subset of YAML that api/openapi.yaml is written
   * in: block mappings by indentation (2 spaces a level), keys plain or
   * quoted, scalars plain (one line or folded over more indented lines),
   * quoted, or "|" and ">" blocks; flow values ({...}, [...]) are not
   * needed here and are skipped. */
  function readPaths(yaml) {
    const ops = [];
    const lines = yaml.split(/\r?\n/);
    const KEY = /^('(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^\s'"#][^:]*?)\s*:(?:\s+(.*))?$/;
    let inPaths = false, path = null, op = null, inResponses = false;
    let block = null, plain = null;
    for (let i = 0; i <= lines.length; i++) {
      const line = i < lines.length ? lines[i] : "";
      const ind = line.length - line.trimStart().length;
      const blank = /^\s*(#.*)?$/.test(line);
      if (block) {
        if (i < lines.length && (blank || ind > block.indent)) {
          block.lines.push(line);
          continue;
        }
        block.done(blockText(block.lines, block.folded));
        block = null;
      }
      if (plain && i < lines.length && !blank && ind > plain.indent && !KEY.test(line.trim())) {
        plain.op[plain.key] += " " + line.trim();
        continue;
      }
      plain = null;
      if (blank || i === lines.length) continue;
      const m = line.trim().match(KEY);
      if (ind === 0) {
        inPaths = !!m && unquote(m[1]) === "paths";
        path = op = null;
        continue;
      }
      if (!inPaths || !m) continue;
      const key = unquote(m[1]), value = m[2] === undefined ? "" : m[2].trim();
      if (ind === 2) {
        path = key;
        op = null;
      } else if (ind === 4) {
        op = path && METHODS.includes(key)
          ? {method: key, path, summary: "", description: "", statuses: []} : null;
        if (op) ops.push(op);
      } else if (op && ind === 6) {
        inResponses = key === "responses";
        if (key === "summary" || key === "description") {
          const target = op, k = key;
          if (/^[|>]/.test(value)) {
            block = {indent: ind, lines: [], folded: value[0] === ">",
              done: (text) => { target[k] = text; }};
          } else {
            op[key] = scalar(value);
            if (!/^['"]/.test(value)) plain = {op, key, indent: ind};
          }
        }
      } else if (op && ind === 8 && inResponses) {
        op.statuses.push(key);
      }
    }
    return ops;
  }

  function unquote(s) {
    if (s.startsWith("'")) return s.slice(1, -1).replace(/''/g, "'");
    if (s.startsWith("\"")) {
      try { return JSON.parse(s); } catch (e) { return s.slice(1, -1); }
    }
    return s;
  }

  /* A one-line scalar: quoted, or plain less a trailing comment. */
  function scalar(v) {
    if (/^['"]/.test(v)) return unquote(v);
    return v.replace(/\s+#.*$/, "");
  }

  /* The text of a "|" (or folded ">") block, its lines less their common
   * indentation, without the trailing newline. */
  function blockText(lines, folded) {
    while (lines.length && !lines[lines.length - 1].trim()) lines.pop();
    const cut = Math.min(...lines.filter((l) => l.trim())
      .map((l) => l.length - l.trimStart().length));
    const out = lines.map((l) => l.slice(cut));
    return folded ? out.join(" ").replace(/ {2,}/g, " ") : out.join("\n");
  }

  async function loadReference() {
    let text;
    try {
      const r = await fetch("/openapi.yaml", {cache: "no-store", credentials: "omit"});
      if (!r.ok) throw new Error("HTTP " + r.status);
      text = await r.text();
    } catch (e) {
      setState("reference-state", "The spec cannot be read: " + e.message, true);
      return;
    }
    const ops = readPaths(text);
    $("reference-table").tBodies[0].replaceChildren(...ops.map((op) => el("tr",
      {"data-method": op.method, "data-path": op.path},
      el("td", {}, el("span", {className: "method " + op.method}, op.method.toUpperCase())),
      el("td", {className: "mono"}, op.path),
      el("td", {}, op.summary, op.description
        ? el("details", {}, el("summary", {}, "more"), el("pre", {}, op.description))
        : null),
      el("td", {}, op.statuses.join(", ")))));
    setState("reference-state", ops.length + " operations on " +
      new Set(ops.map((o) => o.path)).size + " paths, from GET /openapi.yaml.");
  }

  /* ------------------------------------------------------------ start */

  async function refresh() {
    showNotice("");
    showTokenState();
    const about = await api("GET", "/v1");
    if (about.ok && about.data) {
      $("server-version").textContent = String(about.data.version || "");
      const caps = about.data.capabilities || {};
      outputs = Array.isArray(caps.outputs) ? caps.outputs : [];
      algorithms = Array.isArray(caps.algorithms) ? caps.algorithms : [];
      kernels = Array.isArray(caps.kernels) ? caps.kernels : [];
      fillFitChoices();
    } else if (about.status === 401) {
      needToken(about);
    }
    await loadModels();
    startJobs();
  }

  /* What the console's other scripts (model.js: the model page and its
   * plots) share with this one, so that each piece is written once. */
  window.KM = {
    el, api, why, needToken, numberText, numberEl, kernelText, timeCell,
    inputOf, csvRecords, parseRows, targetColumn, lacks,
    capabilities: () => ({outputs, algorithms, kernels}),
    /* the server page's samples of GET /metrics: [{t (ms), text}] */
    scrapes: () => scrapes.map((x) => ({t: x.t, text: x.text})),
  };

  function start() {
    $("token-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const t = $("token-input").value.trim();
      try {
        if (t) sessionStorage.setItem(TOKEN_KEY, t);
        else sessionStorage.removeItem(TOKEN_KEY);
      } catch (e) { /* storage refused: the token is not kept */ }
      $("token-input").value = "";
      refresh();
    });
    $("token-forget").addEventListener("click", () => {
      try { sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* nothing kept */ }
      refresh();
    });
    $("models-refresh").addEventListener("click", loadModels);
    $("predict-form").addEventListener("submit", runPredict);
    $("predict-model").addEventListener("change", fillOutputs);
    $("predict-output").addEventListener("change", showHint);
    $("fit-form").addEventListener("submit", runFit);
    $("fit-algorithm").addEventListener("change", fillFitParams);
    $("fit-kernel").addEventListener("change", fillFitParams);
    $("fit-file").addEventListener("change", readFile);
    $("fit-csv").addEventListener("input", fillColumns);
    $("fit-target").addEventListener("change", fillColumns);
    $("fit-text").addEventListener("change", fillColumns);
    $("jobs-filter").addEventListener("submit", (ev) => ev.preventDefault());
    $("jobs-status").addEventListener("change", () => jobsPage(0));
    $("jobs-model").addEventListener("change", () => jobsPage(0));
    $("jobs-prev").addEventListener("click", () => jobsPage(jobsOffset - JOBS_PAGE));
    $("jobs-next").addEventListener("click", () => jobsNext !== null && jobsPage(jobsNext));
    window.addEventListener("hashchange", route);
    // model.js (deferred after this file) has run by DOMContentLoaded
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", route);
    else route();
    loadReference();
    refresh();
  }

  start();
})();
