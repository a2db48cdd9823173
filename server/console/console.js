/*
 * console.js - kmserve's web console (GET /console.js): lists the models
 * and their metadata, follows the fit jobs with progress bars, tries a
 * predict (or a kpca projection) on a model, and renders the API
 * reference from the spec the server serves (GET /openapi.yaml). The
 * outputs each model offers come from the server's self-description
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
  async function api(method, path, body) {
    const headers = {};
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
    body.replaceChildren(...models.map((m) => el("tr",
      {className: m.name === chosen ? "chosen" : ""},
      el("td", {}, el("button", {type: "button", className: "link",
        "aria-label": "metadata of " + m.name,
        onclick: () => showModel(m.name)}, m.name)),
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
      tr.classList.toggle("chosen", tr.cells[0].textContent === name);
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
   * numbers is a header and skipped). Throws an Error naming the line. */
  function parseRows(text) {
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
    lines.forEach((line, i) => {
      if (!line.trim()) return;
      const cells = line.trim().split(/\s*[,;\t]\s*|\s+/);
      const bad = cells.findIndex((c) => !NUMBER.test(c));
      if (bad >= 0) {
        if (!rows.length && i === 0) return; // a header
        throw new Error("line " + (i + 1) + ", column " + (bad + 1) + ": \"" +
          cells[bad] + "\" is not a number");
      }
      rows.push(cells.map(Number));
    });
    if (!rows.length) throw new Error("no rows after the header");
    return rows;
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
      ...(wide ? v : [v]).map((x) => el("td",
        {className: typeof x === "number" ? "num" : ""}, String(x))))));
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
      else X = parseRows($("predict-rows").value);
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

  let jobsTimer = null;
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
      timeCell(job.created_at), el("td", {className: "bad"}), el("td", {}, cancel));
    tr.parts = {bar, pct, cancel};
    return tr;
  }

  function updateJobRow(tr, job) {
    const p = Math.max(0, Math.min(1, Number(job.progress) || 0));
    tr.parts.bar.value = p;
    tr.parts.pct.textContent = Math.floor(p * 100) + "%";
    tr.cells[2].textContent = job.status;
    tr.cells[2].className = "status " + (job.status === "succeeded" ? "good"
      : job.status === "failed" || job.status === "cancelled" ? "bad" : "");
    tr.cells[5].textContent = job.error ? job.error.code + ": " + job.error.message : "";
    tr.parts.cancel.hidden = !(job.status === "queued" || job.status === "running");
  }

  async function pollJobs() {
    jobsTimer = null;
    const r = await api("GET", "/v1/jobs");
    if (!r.ok) {
      setState("jobs-state", r.status === 403
        ? "Jobs need an admin token (" + why(r) + ")."
        : "Jobs cannot be listed: " + why(r), true);
      if (r.status === 401) needToken(r);
      return; // until the token changes
    }
    const jobs = (r.data && r.data.jobs) || [];
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
    setState("jobs-state", jobs.length ? jobs.length + " job" + (jobs.length > 1 ? "s" : "") +
      (active ? ", " + active + " queued or running" : "") : "No jobs.");
    if (finished) loadModels();
    jobsTimer = setTimeout(pollJobs, JOBS_EVERY_MS);
  }

  function startJobs() {
    if (jobsTimer) clearTimeout(jobsTimer);
    pollJobs();
  }

  async function cancelJob(id) {
    const r = await api("DELETE", "/v1/jobs/" + encodeURIComponent(id));
    setState("jobs-state", r.ok ? "Cancellation of " + id + " asked."
      : "Cannot cancel " + id + ": " + why(r), !r.ok);
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
    inputOf, csvRecords, parseRows, lacks,
    capabilities: () => ({outputs, algorithms}),
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
    loadReference();
    refresh();
  }

  start();
})();
