#!/usr/bin/python3
"""The web console (GET /) in a real browser: headless Chromium (Debian's
chromium and chromium-driver) driven by Selenium (python3-selenium)
against the real daemon on a loopback port.

Over HTTP first: /, /console.css, /console.js and /openapi.yaml answer 200
with their types, without a token, with the Content-Security-Policy
(no 'unsafe-inline', nothing but 'self') and nosniff; /openapi.yaml is
api/openapi.yaml byte for byte.

In the browser, on a daemon without tokens that holds a krr, an svc whose
string labels are HTML ("<img src=x onerror=alert(1)>", "<script>..."),
a gpr, a kpca, a klr and a kkmeans fitted over HTTP: the models table lists them; the
svc's metadata shows its labels as text (no alert, no element made from
them); the predict form, given CSV (with a header) or JSON rows, answers
what POST /v1/models/{name}/predict answers for the same rows and output
(exactly: the same JSON values), for each output the form offers, and the
form offers for svc, gpr and klr exactly the outputs the server names
(the page reads them from GET /v1's capabilities); kkmeans answers its
clusters; kpca
projects (and back, with inverse) as /project does; a bad cell is named
by line and column and a wrong width shows the server's 400; a predict
driven from the keyboard alone works; every control has a label. A
string model (svc on a spectrum kernel) takes text rows: one string a
line, CSV whose header names a column text (quoted fields with commas,
doubled quotes and line breaks, spaces kept, as Python's csv module
reads it) or a JSON array of strings, each answering what POST predict
answers for those strings for every output offered; an unclosed quote
is named by line, a string over max_length shows the server's 400; a
precomputed model takes rows of kernel values; the models table says
what each takes. A
search run as a job shows in the jobs table with a progress bar that
moves (0 < value < 1, as GET /v1/jobs/{id} says), and the row's Cancel
button cancels it (the job ends cancelled); a finished fit's bar is full.
The API reference lists exactly the operations of api/openapi.yaml as
PyYAML reads it, with the same summaries and statuses.

The page's views are chosen by the address's hash (the header's links);
each check goes to its view first. The predict form leaves out a header
column y (else the last) of a CSV one column wider than the model, as
kmctl does. The fit view (#fit): its algorithms, kernels and param rows
are GET /v1's capabilities' (non-composite kernels), a param with
applies_with shows only when it holds; a krr fitted from pasted CSV with
alpha and kernel.gamma lands on #model/NAME, its metadata has them and it
predicts exactly as the same rows fitted over HTTP; an svc fitted from an
uploaded file (send_keys on the file input) with a target column, a
search grid over C and kernel.gamma and cv 3 shows its job's progress
(0 < bar < 1) and lands on its page, the metadata holding the grid's four
points; kkmeans has no target; alpha -1 shows the server's 400. The
server view (#server): each chart's data (Chart.getChart(canvas).data)
is compared with what the page's own samples of GET /metrics (KM.scrapes)
give when parsed and computed in Python: requests/s, p50/p90/p99 from the
buckets' increase, 4xx/5xx shares, memory as shares of the budget,
jobs by state; the samples count the 30 requests sent. The jobs view
(#jobs): the first page and the next (Older) are GET /v1/jobs's pages of
20, the state and model filters show what ?state= and ?model= answer,
the states offered are /metrics' kmserve_jobs states, a running job shows
its elapsed time and time left, and every list request the page made
(Chromium's performance log) asks fields=summary. No request the
browser made left http://127.0.0.1:PORT (Chromium's performance log), and
its console shows no script error and no CSP violation.

On a daemon with --token-file: the page and the spec still load; without
a token the page shows the 401 message and lists nothing; a read token
(entered in the form, kept in sessionStorage only) lists the models and
the jobs table says jobs need an admin token (403); an admin token shows
the jobs; Forget brings the message back.

Screenshots are saved in BUILD/console/*.png (BUILD: the folder of
--server); --readme-shot PATH also writes the README's picture.
Usage, from the project root:
    /usr/bin/python3 tests/integration/console.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_SCRIPT = "<script>alert(2)</script>"
READ_TOKEN = "console-read-token-0123456789"
ADMIN_TOKEN = "console-admin-token-0123456789"
# The page's own scripts, as index.html loads them.
PAGE_SCRIPTS = ["chart.min.js", "console.js", "model.js"]
STATIC = {"/": "text/html", "/console.css": "text/css",
          "/console.js": "text/javascript", "/openapi.yaml": "application/yaml"}


def browser():
    o = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--window-size=1280,1000",
              "--no-first-run", "--disable-background-networking",
              "--disable-component-update", "--disable-default-apps",
              "--disable-sync"):
        o.add_argument(a)
    o.binary_location = "/usr/bin/chromium"
    o.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def wait_for(fn, timeout=20):
    """fn()'s first true value within timeout seconds, else its last."""
    deadline = time.time() + timeout
    while True:
        try:
            v = fn()
        except Exception:  # the page is between two states
            v = None
        if v or time.time() > deadline:
            return v
        time.sleep(0.05)


def text_of(b, id_):
    """An element's text, also in a view not shown (textContent)."""
    return b.find_element(By.ID, id_).get_attribute("textContent")


def goto(b, view):
    """Shows a view (#models, #fit, ...) as its link in the header does."""
    b.find_element(By.CSS_SELECTOR, f"header nav a[href='#{view}']").click()
    wait_for(lambda: b.find_element(By.ID, view).is_displayed())


def model_names(b):
    return [tr.find_element(By.CSS_SELECTOR, "td a.model-link").get_attribute("textContent")
            for tr in b.find_elements(By.CSS_SELECTOR, "#models-table tbody tr")]


def no_alert(b):
    try:
        b.switch_to.alert
        return False
    except NoAlertPresentException:
        return True


class Logs:
    """The browser's requests and console messages, gathered as they are
    read (Chromium hands each entry out once)."""

    def __init__(self, b):
        self.b, self.urls, self.console = b, [], []

    def read(self):
        for e in self.b.get_log("performance"):
            m = json.loads(e["message"])["message"]
            if m["method"] == "Network.requestWillBeSent":
                self.urls.append(m["params"]["request"]["url"])
        self.console += self.b.get_log("browser")


def shot(b, folder, name):
    os.makedirs(folder, exist_ok=True)
    b.save_screenshot(os.path.join(folder, name))


def predict_in_page(b, model, output, rows_text):
    """Runs the form; returns the answer's JSON as the page shows it, or
    None with the page's message."""
    Select(b.find_element(By.ID, "predict-model")).select_by_visible_text(model)
    if output is not None:
        Select(b.find_element(By.ID, "predict-output")).select_by_visible_text(output)
    b.execute_script("document.getElementById('predict-raw').textContent = ''")
    area = b.find_element(By.ID, "predict-rows")
    area.clear()
    area.send_keys(rows_text)
    b.find_element(By.ID, "predict-run").click()
    raw = wait_for(lambda: b.find_element(By.ID, "predict-raw")
                   .get_attribute("textContent"), 10)
    return json.loads(raw) if raw else None


def server_outputs(d, name):
    """The outputs the server offers a model, from its 400 message."""
    r = d.req("POST", f"/v1/models/{name}/predict", {"X": [[0, 0]], "output": "?"})
    msg = ((r.json() or {}).get("error") or {}).get("message", "")
    prefix = "output must be one of "
    return msg[len(prefix):].split(", ") if msg.startswith(prefix) else [msg]


def check_static(d):
    with open(os.path.join(run.ROOT, "api", "openapi.yaml"), "rb") as f:
        spec = f.read()
    for path, ctype in STATIC.items():
        r = d.req("GET", path)
        csp = r.headers.get("content-security-policy", "")
        check(r.status == 200 and r.headers.get("content-type", "").startswith(ctype) and
              "default-src 'none'" in csp and "script-src 'self';" in csp and
              "connect-src 'self';" in csp and "unsafe" not in csp and
              "frame-ancestors 'none'" in csp and
              r.headers.get("x-content-type-options") == "nosniff",
              f"GET {path}: 200 {ctype}, the CSP and nosniff, no token needed",
              (r.status, r.headers))
    r = d.req("GET", "/openapi.yaml")
    check(r.raw == spec, "GET /openapi.yaml is api/openapi.yaml byte for byte",
          len(r.raw))
    r = d.req("HEAD", "/")
    check(r.status == 200 and r.body == "", "HEAD / answers 200 without a body", r)


def fit_models(d):
    X = [[0, 0], [0, 1], [1, 0], [1, 1], [3, 3], [3, 4], [4, 3], [4, 4], [0, 4], [1, 4], [4, 0], [4, 1]]
    labels = [XSS_IMG] * 4 + [XSS_SCRIPT] * 4 + ["plain"] * 4
    bodies = {
        "reg": {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
                "params": {"alpha": 0.1}, "X": X, "y": [sum(r) for r in X]},
        "cls": {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
                "params": {"C": 10, "probability": True}, "X": X, "y": labels},
        "gp": {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": 0.3},
               "params": {"noise": 0.1}, "X": X, "y": [r[0] - r[1] for r in X]},
        "pca": {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.2},
                "params": {"n_components": 2, "fit_inverse_transform": True}, "X": X},
        "lr": {"algorithm": "klr", "kernel": {"type": "rbf", "gamma": 0.5},
               "X": X, "y": [0] * 4 + [1] * 4 + [2] * 4},
        "km": {"algorithm": "kkmeans", "kernel": {"type": "rbf", "gamma": 0.5},
               "params": {"n_clusters": 3}, "X": X},
    }
    for name, body in bodies.items():
        r = d.req("POST", f"/v1/models/{name}/fit", body)
        check(r.status == 201, f"fit {name} over HTTP", r)
    return X


def check_predict(d, b):
    rows = [[0.5, 0.5], [3.5, 3.2], [0.2, 3.9]]
    csv = "a,b\n" + "\n".join(",".join(repr(v) for v in r) for r in rows)
    js = json.dumps(rows)
    # krr: no output choice; CSV with a header
    got = predict_in_page(b, "reg", None, csv)
    want = d.req("POST", "/v1/models/reg/predict", {"X": rows}).json()
    check(got == want and not b.find_element(By.ID, "predict-output").is_enabled(),
          "krr: the form (CSV rows) answers as POST predict; no output choice",
          (got, want))
    # kkmeans: no output choice, its clusters as POST predict
    got = predict_in_page(b, "km", None, js)
    want = d.req("POST", "/v1/models/km/predict", {"X": rows}).json()
    check(got == want and "predictions" in (want or {}) and
          not b.find_element(By.ID, "predict-output").is_enabled(),
          "kkmeans: the form answers as POST predict; no output choice", (got, want))
    # svc, gpr and klr: the outputs offered are the server's (GET /v1's
    # capabilities), each answers as the API
    for name in ("cls", "gp", "lr"):
        Select(b.find_element(By.ID, "predict-model")).select_by_visible_text(name)
        offered = [o.text for o in Select(b.find_element(By.ID, "predict-output")).options]
        served = server_outputs(d, name)
        check(offered == served, f"{name}: the form offers the outputs the server names",
              (offered, served))
        for out in offered:
            got = predict_in_page(b, name, out, js if out != "label" else csv)
            want = d.req("POST", f"/v1/models/{name}/predict",
                         {"X": rows, "output": out}).json()
            check(got == want and want is not None and "predictions" in want,
                  f"{name} output {out}: the form answers as POST predict", (got, want))
    predict_in_page(b, "cls", "probability", js)
    heads = [th.get_attribute("textContent")
             for th in b.find_elements(By.CSS_SELECTOR, "#predict-table thead th")]
    check(f"p({XSS_IMG})" in heads and f"p({XSS_SCRIPT})" in heads,
          "svc probability: columns named by the labels, as text", heads)
    # kpca: project, and back with inverse
    got = predict_in_page(b, "pca", "projections", js)
    want = d.req("POST", "/v1/models/pca/project", {"X": rows}).json()
    check(got == want and "projections" in (want or {}),
          "kpca: the form answers as POST project", (got, want))
    back = json.dumps(want["projections"])
    got = predict_in_page(b, "pca", "inverse (rows are projections)", back)
    want = d.req("POST", "/v1/models/pca/project",
                 {"X": want["projections"], "inverse": True}).json()
    check(got == want, "kpca inverse: the form answers as POST project inverse", (got, want))
    # bad input: named by line and column; the server's 400 shown
    got = predict_in_page(b, "reg", None, "1,2\n3,abc\n")
    state = text_of(b, "predict-state")
    check(got is None and 'line 2, column 2: "abc" is not a number' in state,
          "a cell that is not a number is named by line and column", state)
    got = predict_in_page(b, "reg", None, "[[1, 2, 3]]")
    state = text_of(b, "predict-state")
    check(got is None and "400 invalid_argument" in state and
          "X[0] has 3 features; the model expects 2" in state,
          "a row of the wrong width shows the server's 400", state)
    # the keyboard alone: rows typed, Tab to the button, Enter
    Select(b.find_element(By.ID, "predict-model")).select_by_visible_text("reg")
    b.execute_script("document.getElementById('predict-raw').textContent = ''")
    area = b.find_element(By.ID, "predict-rows")
    area.clear()
    area.send_keys("0.5 0.5")
    area.send_keys(Keys.TAB)
    focused = b.switch_to.active_element
    focused.send_keys(Keys.ENTER)
    raw = wait_for(lambda: b.find_element(By.ID, "predict-raw").get_attribute("textContent"), 10)
    want = d.req("POST", "/v1/models/reg/predict", {"X": [[0.5, 0.5]]}).json()
    check(focused.get_attribute("id") == "predict-run" and raw and json.loads(raw) == want,
          "predict from the keyboard: Tab reaches the button, Enter runs it", raw)


STR_X = ["ggccgcgcgc", "gcgcggccgg", "cgcggcgcgg", "ccgggcgcgc", "attatatata",
         "tataatatta", "aattatatat", "ttaatataat"]
STR_LABELS = ["gc"] * 4 + ["at"] * 4


def fit_string_models(d):
    """A string model (svc with probabilities on a spectrum kernel) and a
    precomputed one (krr on a Gram)."""
    r = d.req("POST", "/v1/models/txt/fit", {
        "algorithm": "svc", "kernel": {"type": "spectrum", "length": 2},
        "params": {"probability": True}, "X": STR_X, "y": STR_LABELS,
        "max_length": 40})
    check(r.status == 201, "fit txt (svc on strings) over HTTP", r)
    G = [[1.0 if i == j else 0.5 ** abs(i - j) for j in range(5)] for i in range(5)]
    r = d.req("POST", "/v1/models/pre/fit", {
        "algorithm": "krr", "kernel": {"type": "precomputed"}, "X": G,
        "y": [1.0, 2.0, 0.5, 3.0, 1.5]})
    check(r.status == 201, "fit pre (krr on a precomputed Gram) over HTTP", r)


def check_strings(d, b):
    """The form takes text rows for a string model: one string a line, CSV
    whose header names a column text (read as Python's csv module reads
    it), or a JSON array of strings; each answers what POST predict
    answers for those strings, for every output offered. A precomputed
    model takes rows of kernel values."""
    import csv
    import io
    goto(b, "models")
    cells = [tr.find_elements(By.TAG_NAME, "td")
             for tr in b.find_elements(By.CSS_SELECTOR, "#models-table tbody tr")]
    feats = {c[0].find_element(By.TAG_NAME, "a").text: c[5].text for c in cells}
    goto(b, "predict")
    check(feats.get("txt") == "strings (≤ 40 bytes)" and
          feats.get("pre") == "5 kernel values",
          "the models table says what a string and a precomputed model take", feats)
    Select(b.find_element(By.ID, "predict-model")).select_by_visible_text("txt")
    hint = text_of(b, "predict-hint")
    check("takes strings (of at most 40 bytes)" in hint and "column text" in hint,
          "a string model's hint: one string a line, CSV with a text column, JSON",
          hint)
    lines = ["ggcc gcgc", "  tata, at  ", "caf\u00e9 \u00e9t\u00e9"]
    text = "\n".join(lines) + "\n\n"
    table = ('id,text,note\n1,"gg,cc ""gc"" gg",x\n2,"at\nta",y\n'
             '3,  plain spaces  ,z\n')
    parsed = [r[1] for r in list(csv.reader(io.StringIO(table, newline="")))[1:]]
    offered = [o.text for o in
               Select(b.find_element(By.ID, "predict-output")).options]
    check(offered == server_outputs(d, "txt"),
          "txt: the form offers the outputs the server names", offered)
    for out in offered:
        for what, typed, X in (("lines", text, lines), ("CSV", table, parsed),
                               ("JSON", json.dumps(lines), lines)):
            got = predict_in_page(b, "txt", out, typed)
            want = d.req("POST", "/v1/models/txt/predict",
                         {"X": X, "output": out}).json()
            check(got == want and want is not None and "predictions" in want and
                  len(want["predictions"]) == len(X),
                  f"txt output {out}, {what}: the form sends the strings as typed "
                  "(CSV as Python's csv reads it) and answers as POST predict",
                  (got, want, text_of(b, "predict-state")))
    predict_in_page(b, "txt", "label", table)
    state = text_of(b, "predict-state")
    check("3 strings (the CSV's column text)" in state,
          "the state says how the text was read", state)
    got = predict_in_page(b, "txt", "label", 'text\n"open\n')
    state = text_of(b, "predict-state")
    check(got is None and "line 2: a quoted field is not closed" in state,
          "an unclosed quote in the CSV is named by line", state)
    got = predict_in_page(b, "txt", "label", "a" * 41)
    state = text_of(b, "predict-state")
    check(got is None and "400 invalid_argument" in state and "at most 40 bytes" in state,
          "a string over max_length shows the server's 400", state)
    # precomputed: rows of kernel values against the 5 training rows
    Select(b.find_element(By.ID, "predict-model")).select_by_visible_text("pre")
    hint = text_of(b, "predict-hint")
    rows = [[0.5, 0.25, 0.1, 0.0, 1.0], [1.0, 0.5, 0.25, 0.125, 0.0625]]
    got = predict_in_page(b, "pre", None, "\n".join(",".join(map(repr, r)) for r in rows))
    want = d.req("POST", "/v1/models/pre/predict", {"X": rows}).json()
    check("5 kernel values: one per training row" in hint and got == want and
          "predictions" in (want or {}),
          "a precomputed model: rows of kernel values, answered as POST predict",
          (hint, got, want))


def check_labels(b):
    missing = b.execute_script("""
        return [...document.querySelectorAll('input, select, textarea')]
          .filter(e => !e.labels.length && !e.getAttribute('aria-label'))
          .map(e => e.id || e.outerHTML);""")
    check(missing == [], "every input, select and textarea has a label", missing)


def check_xss(b):
    b.find_element(By.CSS_SELECTOR, "#models-table button[aria-label='metadata of cls']").click()
    meta = wait_for(lambda: "classes" in text_of(b, "model-meta") and
                    b.find_element(By.ID, "model-meta").get_attribute("textContent"))
    check(bool(meta) and XSS_IMG in meta and XSS_SCRIPT in meta,
          "svc metadata shows the HTML labels as text", meta)
    scripts = [s.get_attribute("src") for s in b.find_elements(By.TAG_NAME, "script")]
    check(no_alert(b) and b.find_elements(By.TAG_NAME, "img") == [] and
          sorted(x.rsplit("/", 1)[-1] for x in scripts) == sorted(PAGE_SCRIPTS),
          "no alert, no <img> and no <script> made from the labels",
          (scripts, len(b.find_elements(By.TAG_NAME, "img"))))


def check_jobs(d, b, shots):
    rows = [row for row in zip(*run.load_csv("letter.csv", 4000))]
    X, y = [r[0] for r in rows], [r[1] for r in rows]
    r = d.req("POST", "/v1/models/slow/fit",
              {"algorithm": "svc", "kernel": {"type": "rbf"}, "params": {"C": 1},
               "X": X, "y": y, "async": True,
               "search": {"params": {"C": [1, 10, 100], "kernel.gamma": [0.01, 0.05, 0.1]},
                          "cv": 5}})
    job = ((r.json() or {}).get("job") or {}).get("id")
    check(r.status == 202 and job, "an async search starts a job", r)
    if not job:
        return
    sel = f"#jobs-table tr[data-job='{job}']"
    goto(b, "jobs")

    def moving():
        tr = b.find_element(By.CSS_SELECTOR, sel)
        v = float(tr.find_element(By.TAG_NAME, "progress").get_attribute("value"))
        td = tr.find_elements(By.TAG_NAME, "td")
        return (v, td[2].text, td[5].text, td[6].text) if (
            0 < v < 1 and td[2].text == "running" and td[6].text.startswith("about")) else None

    seen = wait_for(moving, 120)
    api = d.req("GET", f"/v1/jobs/{job}").json() or {}
    check(bool(seen) and api.get("status") == "running" and
          seen[0] <= api.get("progress", 0) < 1,
          "the job's row shows running with a bar between 0 and 1 (as GET /v1/jobs/{id}), "
          "its elapsed time and an estimate of the time left", (seen, api))
    shot(b, shots, "jobs.png")
    b.find_element(By.CSS_SELECTOR, sel + " button").click()
    ended = wait_for(lambda: b.find_element(By.CSS_SELECTOR, sel)
                     .find_elements(By.TAG_NAME, "td")[2].text == "cancelled", 60)
    api = d.req("GET", f"/v1/jobs/{job}").json() or {}
    check(ended and api.get("status") == "cancelled",
          "the row's Cancel button cancels the job; the row says cancelled", api)
    done = [tr for tr in b.find_elements(By.CSS_SELECTOR, "#jobs-table tbody tr")
            if tr.find_elements(By.TAG_NAME, "td")[2].text == "succeeded"]
    check(len(done) == 8 and all(
        tr.find_element(By.TAG_NAME, "progress").get_attribute("value") == "1" and
        "100%" in tr.text for tr in done),
        "the eight fits' jobs show succeeded with a full bar", len(done))


def check_predict_y(d, b):
    """A CSV with a header and one column more than the model takes: the
    column named y is left out (else the last), as kmctl does."""
    rows = [[0.5, 0.5], [3.5, 3.2]]
    want = d.req("POST", "/v1/models/reg/predict", {"X": rows}).json()
    got = predict_in_page(b, "reg", None, "y,a,b\n7,0.5,0.5\n8,3.5,3.2\n")
    check(got == want and "column y left out" in text_of(b, "predict-state"),
          "predict: a header column y is left out (first column here)",
          (got, want, text_of(b, "predict-state")))
    got = predict_in_page(b, "reg", None, "a,b,label\n0.5,0.5,7\n3.5,3.2,8\n")
    check(got == want and "column label left out" in text_of(b, "predict-state"),
          "predict: without a y column, the last one is left out", got)
    cells = [td.get_attribute("title") or td.text for td in
             b.find_elements(By.CSS_SELECTOR, "#predict-table tbody td.num")][1::2]
    check([float(c) for c in cells] == want["predictions"],
          "the answer's numbers keep their exact value (shown, or on hover)",
          (cells, want))


def fit_in_page(b, name, algorithm, kernel, csv_text=None, path=None, params=None,
                grid=None, target=None, cv=None):
    """Fills the fit form and submits it; returns the state line when the
    page has moved to #model/NAME or stopped with a message."""
    goto(b, "fit")
    Select(b.find_element(By.ID, "fit-algorithm")).select_by_value(algorithm)
    Select(b.find_element(By.ID, "fit-kernel")).select_by_value(kernel)
    area = b.find_element(By.ID, "fit-csv")
    b.execute_script("arguments[0].value = ''", area)
    if path:
        b.find_element(By.ID, "fit-file").send_keys(path)
        wait_for(lambda: area.get_attribute("value"))
    else:
        area.send_keys(csv_text)
    if target is not None:
        Select(b.find_element(By.ID, "fit-target")).select_by_visible_text(target)
    field = b.find_element(By.ID, "fit-name")
    field.clear()
    field.send_keys(name)
    for key, v in (params or {}).items():
        box = b.find_element(By.CSS_SELECTOR, f"#fit-params td [data-key='{key}']")
        if box.tag_name == "select":
            Select(box).select_by_value(str(v))
        else:
            box.clear()
            box.send_keys(str(v))
    for key, vals in (grid or {}).items():
        box = b.find_element(By.CSS_SELECTOR, f"#fit-params tr[data-key='{key}'] input"
                             "[aria-label^='search values']")
        box.clear()
        box.send_keys(", ".join(str(x) for x in vals))
    if cv is not None:
        b.find_element(By.ID, "fit-cv").clear()
        b.find_element(By.ID, "fit-cv").send_keys(str(cv))
    b.execute_script("document.getElementById('fit-state').textContent = ''")
    b.find_element(By.ID, "fit-run").click()


def landed(b, name, timeout=300):
    want = "#model/" + urllib.parse.quote(name, safe="")
    return wait_for(lambda: b.execute_script("return location.hash") == want and
                    b.find_element(By.ID, "model-page").is_displayed(), timeout)


def check_fit_form(d, b, shots, tmp):
    about = d.req("GET", "/v1").json()["capabilities"]
    goto(b, "fit")
    algos = [o.get_attribute("value") for o in
             Select(b.find_element(By.ID, "fit-algorithm")).options]
    kerns = [o.get_attribute("value") for o in
             Select(b.find_element(By.ID, "fit-kernel")).options]
    check(algos == [a["name"] for a in about["algorithms"]] and
          kerns == [k["name"] for k in about["kernels"] if not k["composite"]],
          "fit form: the algorithms and (non-composite) kernels of GET /v1's capabilities",
          (algos, kerns))
    bad = []
    for a in about["algorithms"]:
        for k in ("rbf", "polynomial"):
            Select(b.find_element(By.ID, "fit-algorithm")).select_by_value(a["name"])
            Select(b.find_element(By.ID, "fit-kernel")).select_by_value(k)
            keys = [tr.get_attribute("data-key") for tr in
                    b.find_elements(By.CSS_SELECTOR, "#fit-params tbody tr")]
            kp = next(x for x in about["kernels"] if x["name"] == k)["params"]
            want = [p["name"] for p in a["params"]] + ["kernel." + p["name"] for p in kp]
            if keys != want:
                bad.append((a["name"], k, keys, want))
    check(not bad, "fit form: one row per param of the algorithm and the kernel, "
          "as the capabilities list them", bad)
    # applies_with: krr's n_centres shows only with solver nystrom or auto
    Select(b.find_element(By.ID, "fit-algorithm")).select_by_value("krr")
    row = b.find_element(By.CSS_SELECTOR, "#fit-params tr[data-key='n_centres']")
    hidden = not row.is_displayed()
    Select(b.find_element(By.CSS_SELECTOR, "#fit-params td [data-key='solver']")).select_by_value(
        "nystrom")
    check(hidden and row.is_displayed(), "fit form: a param that applies only with "
          "another's values shows only then (krr n_centres with solver nystrom)")
    Select(b.find_element(By.CSS_SELECTOR, "#fit-params td [data-key='solver']")).select_by_value(
        "")
    # pasted CSV, krr with a param and a kernel param
    X = [[i / 4, (i * 7 % 5) / 3] for i in range(16)]
    y = [round(a * a - b, 6) for a, b in X]
    text = "a,b,y\n" + "\n".join(f"{a!r},{b!r},{t!r}" for (a, b), t in zip(X, y))
    fit_in_page(b, "formkrr", "krr", "rbf", csv_text=text,
                params={"alpha": 0.25, "kernel.gamma": 0.75})
    ok = landed(b, "formkrr", 120)
    meta = d.req("GET", "/v1/models/formkrr").json() or {}
    check(ok and meta.get("params") == {"alpha": 0.25, "keep_factor": False} and
          meta.get("kernel") == {"type": "rbf", "gamma": 0.75} and meta.get("n_features") == 2,
          "fit form (pasted CSV, y the column named y): lands on #model/formkrr; its "
          "metadata has alpha 0.25 and gamma 0.75", (ok, meta, text_of(b, "fit-state")))
    ref = d.req("POST", "/v1/models/refkrr/fit", {
        "algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.75},
        "params": {"alpha": 0.25}, "X": X, "y": y})
    probe = [[0.3, 0.2], [2.0, 1.1]]
    a1 = (d.req("POST", "/v1/models/formkrr/predict", {"X": probe}).json() or {}).get(
        "predictions")
    a2 = (d.req("POST", "/v1/models/refkrr/predict", {"X": probe}).json() or {}).get(
        "predictions")
    check(ref.status == 201 and a1 == a2 and a1 is not None,
          "the form's model predicts exactly as one fitted over HTTP from the same rows",
          (a1, a2))
    # an uploaded file, svc with a search grid, the job's progress followed.
    # The search is sized to run for seconds (27 fits of 3300 rows), so that
    # the page's 0.4 s polls see it between 0 and 1 however fast SVC gets.
    Xl, yl = run.load_csv("letter.csv", 5000)
    path = os.path.join(tmp, "letters.csv")
    with open(path, "w") as f:
        f.write(",".join(f"f{j}" for j in range(len(Xl[0]))) + ",letter\n")
        for r, t in zip(Xl, yl):
            f.write(",".join(repr(v) for v in r) + f",{t}\n")
    grid = {"C": [1, 10, 100], "kernel.gamma": [0.02, 0.05, 0.1]}
    fit_in_page(b, "formsvc", "svc", "rbf", path=path, params={"tol": 0.01},
                grid=grid, target="letter", cv=3)
    seen = wait_for(lambda: (lambda v: v if 0 < v < 1 else None)(float(
        b.find_element(By.ID, "fit-progress").get_attribute("value"))), 300)
    state = text_of(b, "fit-state")
    shot(b, shots, "fit.png")
    ok = landed(b, "formsvc", 600)
    meta = d.req("GET", "/v1/models/formsvc").json() or {}
    pts = sorted((p["params"]["C"], p["params"]["kernel.gamma"])
                 for p in (meta.get("search") or {}).get("results", []))
    check(bool(seen) and "running" in state and "%" in state,
          "fit form: the job's progress is followed (a bar between 0 and 1, the state)",
          (seen, state))
    check(ok and meta.get("params", {}).get("tol") == 0.01 and
          meta.get("search", {}).get("n_splits") == 3 and
          pts == sorted((c, g) for c in grid["C"] for g in grid["kernel.gamma"]) and
          meta.get("n_samples") == len(Xl) and meta.get("n_features") == len(Xl[0]) and
          sorted(meta.get("classes", [])) == sorted(set(yl)),
          "fit form (uploaded file, target column letter, a grid over C and "
          "kernel.gamma, cv 3): lands on #model/formsvc; the metadata has the grid's "
          "nine points, tol and the file's rows and classes", (ok, pts, meta.get("params")))
    # kkmeans takes no target; a bad value shows the server's 400
    goto(b, "fit")
    Select(b.find_element(By.ID, "fit-algorithm")).select_by_value("kkmeans")
    check(not b.find_element(By.ID, "fit-target").is_enabled(),
          "fit form: kkmeans (target none) has no target column to choose")
    fit_in_page(b, "formbad", "krr", "rbf", csv_text=text, params={"alpha": -1})
    msg = wait_for(lambda: "400" in text_of(b, "fit-state") and text_of(b, "fit-state"), 60)
    check(bool(msg) and "invalid_argument" in msg and "params.alpha" in msg and
          d.req("GET", "/v1/models/formbad").status == 404,
          "fit form: alpha -1 shows the server's 400 next to the form", msg)


def prom(text):
    """Prometheus text as {(name, frozenset(labels)): value}."""
    import re
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)', line)
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def hist_quantile(q, before, after):
    """Prometheus's histogram_quantile over the buckets' increase."""
    def buckets(s):
        acc = {}
        for (n, l), v in s.items():
            if n == "kmserve_http_request_duration_seconds_bucket":
                le = dict(l)["le"]
                acc[le] = acc.get(le, 0) + v
        return acc
    a, b = buckets(before), buckets(after)
    les = sorted(b, key=float)
    inc = [b[le] - a.get(le, 0) for le in les]
    if not inc or inc[-1] <= 0:
        return None
    rank = q * inc[-1]
    for i, le in enumerate(les):
        if inc[i] >= rank:
            hi, lo = float(le), float(les[i - 1]) if i else 0.0
            if hi == float("inf"):
                return lo
            below = inc[i - 1] if i else 0
            w = inc[i] - below
            return lo + (hi - lo) * ((rank - below) / w if w > 0 else 1)
    return None


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def check_server(d, b, shots):
    goto(b, "server")
    for i in range(30):
        d.req("GET", "/v1/models")
    for i in range(5):
        d.req("GET", "/v1/models/nothing-here")
    npts = lambda: b.execute_script(  # noqa: E731
        "return Chart.getChart(document.getElementById('chart-rate')).data.datasets[0]"
        ".data.length")
    ok = wait_for(lambda: npts() >= 4, 60)
    data = b.execute_script("""
        b = {};
        for (const id of ['chart-rate','chart-latency','chart-errors','chart-memory','chart-jobs']) {
          const c = Chart.getChart(document.getElementById(id));
          b[id] = {labels: c.data.labels, sets: c.data.datasets.map(s => [s.label, s.data])};
        }
        b.scrapes = KM.scrapes();
        return b;""")
    shot(b, shots, "server.png")
    sc = data["scrapes"]
    S = [prom(x["text"]) for x in sc]
    T = [x["t"] for x in sc]
    check(bool(ok) and len(data["chart-rate"]["sets"][0][1]) == len(S) - 1,
          "server page: a rate point per pair of samples", (len(S), data["chart-rate"]))

    def total(s, code=""):
        return sum(v for (n, l), v in s.items() if n == "kmserve_http_requests_total" and
                   dict(l)["code"].startswith(code))

    rate = [(total(S[i + 1]) - total(S[i])) / ((T[i + 1] - T[i]) / 1000)
            for i in range(len(S) - 1)]
    check(all(close(a, b) for a, b in zip(rate, data["chart-rate"]["sets"][0][1])),
          "server page: requests/s as /metrics' counters say (parsed in Python)",
          (rate, data["chart-rate"]["sets"][0][1]))
    models_seen = sum(v for (n, l), v in S[-1].items() if n == "kmserve_http_requests_total"
                      and dict(l).get("route") == "/v1/models" and dict(l)["code"] == "200")
    check(models_seen >= 30, "the samples count the 30 GET /v1/models sent", models_seen)
    lat = {name: vals for name, vals in data["chart-latency"]["sets"]}
    want = {f"p{int(q * 100)}": [None if v is None else v * 1000 for v in
                                  (hist_quantile(q, S[i], S[i + 1]) for i in range(len(S) - 1))]
            for q in (0.5, 0.9, 0.99)}
    check(sorted(lat) == ["p50", "p90", "p99"] and
          all(close(a, b) for k in want for a, b in zip(want[k], lat[k])) and
          any(v is not None for v in lat["p50"]),
          "server page: p50, p90, p99 from the histogram buckets' increase, as Python "
          "computes them", (lat, want))
    errs = {name: vals for name, vals in data["chart-errors"]["sets"]}
    share = lambda c: [None if total(S[i + 1]) == total(S[i]) else  # noqa: E731
                       (total(S[i + 1], c) - total(S[i], c)) /
                       (total(S[i + 1]) - total(S[i])) for i in range(len(S) - 1)]
    check(all(close(a, b) for a, b in zip(share("4"), errs["4xx"])) and
          all(close(a, b) for a, b in zip(share("5"), errs["5xx"])) and
          total(S[-1], "4") >= 5,
          "server page: the 4xx and 5xx shares as the counters say (the five 404s counted)",
          errs)
    mem = {name: vals for name, vals in data["chart-memory"]["sets"]}
    g = lambda s, n: next(v for (m, l), v in s.items() if m == n)  # noqa: E731
    pct = lambda s, n: 100 * g(s, n) / g(s, "kmserve_memory_budget_bytes")  # noqa: E731
    budget_mib = round(g(S[-1], "kmserve_memory_budget_bytes") / 1048576)
    caption = b.find_element(By.ID, "memory-caption").text
    check(all(close(mem["reserved"][i], pct(S[i], "kmserve_fit_memory_reserved_bytes")) and
              close(mem["models"][i], pct(S[i], "kmserve_model_bytes")) and
              close(mem["resident"][i], pct(S[i], "kmserve_process_resident_memory_bytes"))
              for i in range(len(S))) and max(mem["resident"]) > 0 and
          caption == f"Memory (% of the budget, {budget_mib} MiB)",
          "server page: reserved, model and resident memory as shares of the budget, "
          "which the caption gives in MiB, as /metrics says", (mem, caption))
    jobs = {name: vals for name, vals in data["chart-jobs"]["sets"]}
    want = {dict(l)["state"]: [s2[(n, l)] for s2 in S]
            for (n, l) in S[-1] if n == "kmserve_jobs"}
    check(jobs == want and "succeeded" in jobs,
          "server page: jobs by state, one line per state /metrics names", (jobs, want))


def check_jobs_view(d, b, shots, logs):
    for i in range(24):
        d.req("POST", f"/v1/models/many{i % 3}/fit", {
            "algorithm": "krr", "kernel": {"type": "linear"}, "X": [[0], [1], [2]],
            "y": [0, 1, i], "async": True})
    goto(b, "jobs")

    def page_ids():
        return [tr.get_attribute("data-job")
                for tr in b.find_elements(By.CSS_SELECTOR, "#jobs-table tbody tr")]

    def api_ids(q):
        return [j["id"] for j in d.req("GET", "/v1/jobs?" + q).json()["jobs"]]

    q0 = "fields=summary&offset=0&limit=20"
    ok = wait_for(lambda: page_ids() == api_ids(q0) and page_ids(), 60)
    check(bool(ok) and len(ok) == 20, "jobs view: the first page is GET /v1/jobs' first 20",
          ok)
    total = d.req("GET", "/v1/jobs?limit=1").json()["total"]
    check(f"of {total}" in text_of(b, "jobs-state"), "jobs view: says how many jobs in all",
          text_of(b, "jobs-state"))
    b.find_element(By.ID, "jobs-next").click()
    q1 = "fields=summary&offset=20&limit=20"
    ok = wait_for(lambda: page_ids() == api_ids(q1) and page_ids(), 30)
    check(bool(ok), "jobs view: Older shows the next page (offset 20)", ok)
    shot(b, shots, "jobs-page.png")
    b.find_element(By.ID, "jobs-prev").click()
    Select(b.find_element(By.ID, "jobs-status")).select_by_value("cancelled")
    ok = wait_for(lambda: page_ids() == api_ids("state=cancelled") and page_ids(), 30)
    check(bool(ok), "jobs view: the state filter shows what ?state=cancelled answers", ok)
    states = [o.get_attribute("value") for o in
              Select(b.find_element(By.ID, "jobs-status")).options][1:]
    named = sorted(dict(l)["state"] for (n, l) in prom(d.req("GET", "/metrics").body)
                   if n == "kmserve_jobs")
    check(sorted(states) == named, "jobs view: the states to filter by are the server's",
          states)
    Select(b.find_element(By.ID, "jobs-status")).select_by_value("")
    field = b.find_element(By.ID, "jobs-model")
    field.send_keys("many1", Keys.TAB)
    # The server may have let the oldest jobs go (--job-ttl, --max-jobs): the
    # count is the server's answer, not the 8 fits sent.
    ok = wait_for(lambda: page_ids() == api_ids("model=many1") and page_ids(), 60)
    every = d.req("GET", "/v1/jobs?model=many1&limit=1000").json()["jobs"]
    check(bool(ok) and {j.get("model") for j in every} == {"many1"} and
          len(ok) == len(every),
          "jobs view: the model filter shows what ?model=many1 answers",
          (page_ids(), api_ids("model=many1"), field.get_attribute("value"),
           text_of(b, "jobs-state")))
    field.clear()
    field.send_keys(Keys.TAB)
    time.sleep(2.5)  # let the page poll a few times: then read its requests
    logs.read()
    polls = [u for u in logs.urls if "/v1/jobs" in u and "/v1/jobs/" not in u]
    check(len(polls) >= 5 and all("fields=summary" in u for u in polls),
          f"jobs view: every list request ({len(polls)}) asks fields=summary",
          [u for u in polls if "fields=summary" not in u][:5])


def check_reference(b):
    import yaml
    with open(os.path.join(run.ROOT, "api", "openapi.yaml")) as f:
        spec = yaml.safe_load(f)
    want = []
    for path, ops in spec["paths"].items():
        for m, op in ops.items():
            if m in ("get", "put", "post", "delete", "options", "head", "patch"):
                want.append((m, path, op.get("summary", ""),
                             ", ".join(str(s) for s in op.get("responses", {}))))
    # each row: method, path, the summary (the cell's first text node:
    # a <details> of the description may follow) and the statuses
    got = wait_for(lambda: [tuple(row) for row in b.execute_script("""
        return [...document.querySelectorAll('#reference-table tbody tr')].map(tr =>
          [tr.dataset.method, tr.dataset.path, tr.cells[2].firstChild.textContent,
           tr.cells[3].textContent]);""")])
    check(got == want, f"the API reference lists the spec's {len(want)} operations "
          "with their summaries and statuses (as PyYAML reads it)",
          [x for x in got if x not in want] + ["|"] + [x for x in want if x not in got])
    paths = {p for _, p, _, _ in got}
    check({"/", "/openapi.yaml", "/v1/models/{name}/predict"} <= paths,
          "the reference lists the console's own routes", sorted(paths))


def check_isolation(logs, port):
    logs.read()
    base = f"http://127.0.0.1:{port}/"
    out = [u for u in logs.urls if not (u.startswith(base) or u.startswith("data:"))]
    check(logs.urls and not out, f"every request the browser made went to {base} "
          f"({len(logs.urls)} requests)", out)
    bad = [e for e in logs.console
           if e.get("source") in ("javascript", "security") or
           "Content Security Policy" in e.get("message", "")]
    check(not bad, "no script error and no CSP violation in the browser's console", bad)


def readme_shot(d, b, path):
    """The README's picture: the server page after some traffic (an svc
    of plain labels fitted, predicts, a few 404s), in a tall window."""
    X = [[0, 0], [0, 1], [1, 0], [2, 2], [2, 3], [3, 2], [4, 4], [4, 5], [5, 4]]
    d.req("POST", "/v1/models/sizes/fit", {
        "algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
        "params": {"C": 10, "probability": True}, "X": X,
        "y": ["small"] * 3 + ["medium"] * 3 + ["large"] * 3})
    b.set_window_size(1280, 1100)
    goto(b, "server")
    count = lambda: b.execute_script(  # noqa: E731
        "return Chart.getChart(document.getElementById('chart-rate')).data.labels.length")
    start = count()
    while count() < start + 8:
        for i in range(20):
            d.req("POST", "/v1/models/sizes/predict", {"X": [[0.5, 0.5], [2.5, 2.2]]})
        d.req("GET", "/v1/models/none")
        time.sleep(0.2)
    b.execute_script("window.scrollTo(0, 0)")
    shot(b, os.path.dirname(os.path.abspath(path)), os.path.basename(path))
    b.set_window_size(1280, 1000)


def open_daemon(server, b, shots, readme):
    tmp = tempfile.mkdtemp(prefix="kmserve-console-")
    models = os.path.join(tmp, "models")
    os.makedirs(models)
    d = run.Daemon(os.path.abspath(server), models)
    try:
        d.start()
        check_static(d)
        fit_models(d)
        fit_string_models(d)
        logs = Logs(b)
        b.get(f"http://127.0.0.1:{d.port}/")
        fitted = ["cls", "gp", "km", "lr", "pca", "pre", "reg", "txt"]
        names = wait_for(lambda: model_names(b) == fitted and model_names(b))
        check(names == fitted, "the models table lists the fitted models", names)
        shot(b, shots, "models.png")
        check_labels(b)
        check_xss(b)
        goto(b, "predict")
        check_predict(d, b)
        check_predict_y(d, b)
        shot(b, shots, "predict.png")
        check_strings(d, b)
        shot(b, shots, "predict-strings.png")
        goto(b, "reference")
        check_reference(b)
        shot(b, shots, "reference.png")
        check_jobs(d, b, shots)
        check_fit_form(d, b, shots, tmp)
        check_server(d, b, shots)
        check_jobs_view(d, b, shots, logs)
        if readme:
            readme_shot(d, b, readme)
        check(no_alert(b), "no alert at the end")
        check_isolation(logs, d.port)
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, "runner (open daemon)", repr(e))
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def enter_token(b, tok):
    field = b.find_element(By.ID, "token-input")
    field.clear()
    field.send_keys(tok, Keys.ENTER)


def token_daemon(server, b, shots):
    tmp = tempfile.mkdtemp(prefix="kmserve-console-tok-")
    models = os.path.join(tmp, "models")
    os.makedirs(models)
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write(f"{READ_TOKEN} read\n{ADMIN_TOKEN} admin\n")
    d = run.Daemon(os.path.abspath(server), models, "--token-file", tokens)
    try:
        d.start()
        admin = [("Authorization", f"Bearer {ADMIN_TOKEN}")]
        r = d.req("POST", "/v1/models/secret/fit", {
            "algorithm": "krr", "kernel": {"type": "linear"},
            "X": [[0], [1], [2]], "y": [0, 1, 2]}, headers=admin)
        check(r.status == 201, "tokens: an admin token fits over HTTP", r)
        check(all(d.req("GET", p).status == 200 for p in STATIC) and
              d.req("GET", "/v1/models").status == 401,
              "tokens: the console's files and the spec are open, /v1/models is 401")
        # the previous daemon's page may still poll: leave it, then drop
        # what the browser logged of it
        b.get("about:blank")
        logs = Logs(b)
        logs.read()
        logs.urls.clear()
        b.get(f"http://127.0.0.1:{d.port}/")
        notice = wait_for(lambda: b.find_element(By.ID, "notice").is_displayed() and
                          text_of(b, "notice"))
        check(bool(notice) and "needs a token" in notice and "401 unauthenticated" in notice and
              model_names(b) == [], "tokens: without a token the page asks for one (401) "
              "and lists nothing", notice)
        refs = wait_for(lambda: len(b.find_elements(By.CSS_SELECTOR, "#reference-table tbody tr")))
        check(refs > 0, "tokens: the API reference shows without a token", refs)
        shot(b, shots, "token-needed.png")
        enter_token(b, READ_TOKEN)
        names = wait_for(lambda: model_names(b) == ["secret"] and model_names(b))
        jobs = wait_for(lambda: "admin token" in text_of(b, "jobs-state") and
                        text_of(b, "jobs-state"))
        stored = b.execute_script("return [sessionStorage.getItem('kmserve.token'), "
                                  "localStorage.length, document.cookie]")
        check(names == ["secret"] and not b.find_element(By.ID, "notice").is_displayed(),
              "tokens: with a read token the models are listed", names)
        check(bool(jobs) and "403 permission_denied" in jobs,
              "tokens: with a read token the jobs say they need an admin token (403)", jobs)
        check(stored == [READ_TOKEN, 0, ""],
              "tokens: the token is kept in sessionStorage only", stored)
        enter_token(b, ADMIN_TOKEN)
        rows = wait_for(lambda: len(b.find_elements(By.CSS_SELECTOR, "#jobs-table tbody tr")))
        check(rows == 1, "tokens: with an admin token the jobs are listed", rows)
        shot(b, shots, "token-admin.png")
        b.find_element(By.ID, "token-forget").click()
        notice = wait_for(lambda: b.find_element(By.ID, "notice").is_displayed() and
                          text_of(b, "notice"))
        check(bool(notice) and "needs a token" in notice and
              b.execute_script("return sessionStorage.getItem('kmserve.token')") is None,
              "tokens: Forget drops the token and the page asks again", notice)
        logs.read()
        base = f"http://127.0.0.1:{d.port}/"
        check(all(u.startswith(base) or u.startswith("data:") for u in logs.urls),
              "tokens: every request went to the daemon",
              [u for u in logs.urls if not u.startswith(base)])
        bad = [e for e in logs.console if e.get("source") in ("javascript", "security")]
        check(not bad, "tokens: no script error or CSP violation", bad)
    except Exception as e:
        check(False, "runner (tokens)", repr(e))
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def open_browser(server):
    """The screenshots' folder (BUILD/console, BUILD the folder of
    server) and a headless Chromium, or None for it after a failed check:
    a runner ends with its tally, failed or not."""
    shots = os.path.join(os.path.dirname(os.path.abspath(server)), "console")
    try:
        return shots, browser()
    except Exception as e:
        check(False, "headless Chromium starts through chromedriver", repr(e))
        return shots, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    ap.add_argument("--readme-shot", help="also write the README's screenshot here")
    args = ap.parse_args()
    started = time.time()
    shots, b = open_browser(args.server)
    if not b:
        return run.tally.summary()
    try:
        open_daemon(args.server, b, shots, args.readme_shot)
        token_daemon(args.server, b, shots)
    finally:
        b.quit()
    run.tally.note(f"screenshots in {shots}; {time.time() - started:.1f} s")
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
