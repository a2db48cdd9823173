#!/usr/bin/python3
"""The web console's model page (location.hash "#model/NAME", drawn by
server/console/model.js) in headless Chromium (Debian's chromium and
chromium-driver, through python3-selenium) against the real daemon
(--keep-versions 3) on a loopback port.

Models fitted over HTTP: a krr with a search over two parameters (and one
with a random search over two), an svr with a search over one, an svc (standardized, three classes) and a klr
(two classes) on two features, a gpr on one feature, a kpca
(standardized) and a kkmeans. On each model's page:

  - the metadata: the kernel as text, the training score to 4 significant
    digits with its exact value on hover; the search's table has every
    candidate and marks the best one (best_index);
  - only the plots that fit the model are offered;
  - each plot is drawn from the right data, read back from the page's
    Chart.js objects (Chart.getChart(canvas).data) and compared with
    answers Python gets from the API itself: the heatmap's cells are the
    search results' mean scores at their params, one cell marked best (the
    search's best_params); a random search's candidates are points at
    their values with their mean scores; the one-parameter line is the mean scores with
    mean ± std as its band; the gpr band is mean ± 2·std of POST predict
    (output mean and std) at the same x, its points the training rows with
    their fitted targets; the kpca points are POST project of the
    training rows (and of an uploaded CSV, coloured by its chosen column);
    the kkmeans points are coloured by POST predict's clusters; the
    decision regions' cells are POST predict's labels of the grid's
    points, with the svc's support vectors and the klr's training rows on
    top, labelled with their training classes;
  - score: a CSV (header, y column) shows what POST score answers; for
    the svc a confusion matrix whose counts are those Python counts from
    POST predict's labels against y; for the krr predicted against actual
    (POST predict of the rows against their y);
  - rollback to version 1 (from the svc's version 2) makes version 3 with
    version 1's params (GET metadata); delete, confirmed in the page,
    removes the model (GET 404) and the page goes to #models.

Also GET /model.js answers 200 with its type and the console's
Content-Security-Policy, without a token. The browser's console shows no
script error and no CSP violation, and no request left the daemon.
Screenshots of every view are saved in BUILD/console/model-*.png (BUILD:
the folder of --server); --docs-shots DIR also writes the docs' pictures
(console-model-*.png).
Usage, from the project root:
    /usr/bin/python3 tests/integration/console_model.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402
from console import Logs, check_isolation, open_browser, wait_for  # noqa: E402

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

GRID = 60  # model.js's decision-region grid


def close(a, b, rel=1e-9):
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and
                len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b)))
    if a is None or b is None:
        return a is b
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def data_sets():
    """Deterministic rows: a 2-feature regression, three blobs, two
    classes, a 1-feature curve."""
    g = random.Random(7)
    reg = [[g.uniform(-2, 2), g.uniform(-2, 2)] for _ in range(48)]
    reg_y = [math.sin(a) + 0.5 * b * b + g.gauss(0, 0.1) for a, b in reg]
    blobs, blob_y = [], []
    for k, (cx, cy, name) in enumerate(((0, 0, "setosa"), (4, 1, "versicolor"),
                                         (2, 4, "virginica"))):
        for _ in range(14):
            blobs.append([cx + g.gauss(0, 0.8), cy + g.gauss(0, 0.8)])
            blob_y.append(name)
    two = [[g.uniform(-3, 3), g.uniform(-3, 3)] for _ in range(50)]
    two_y = [1 if a + 0.6 * b + g.gauss(0, 0.8) > 0 else 0 for a, b in two]
    one = [[g.uniform(0, 6)] for _ in range(20)]
    one_y = [math.sin(x[0]) + g.gauss(0, 0.1) for x in one]
    return {"reg": (reg, reg_y), "blobs": (blobs, blob_y), "two": (two, two_y),
            "one": (one, one_y)}


def fit_models(d, D):
    reg, reg_y = D["reg"]
    blobs, blob_y = D["blobs"]
    two, two_y = D["two"]
    one, one_y = D["one"]
    bodies = {
        "grid2": {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": reg, "y": reg_y,
                  "search": {"params": {"alpha": [0.01, 0.1, 1],
                                        "kernel.gamma": [0.1, 0.5, 2, 8]}, "cv": 4}},
        "grid1": {"algorithm": "svr", "kernel": {"type": "rbf", "gamma": 0.5},
                  "X": reg, "y": reg_y,
                  "search": {"params": {"C": [0.01, 0.1, 1, 10, 100]}, "cv": 4}},
        "rand2": {"algorithm": "krr", "kernel": {"type": "rbf"}, "X": reg, "y": reg_y,
                  "search": {"params": {"alpha": {"log_uniform": [0.001, 1]},
                                        "kernel.gamma": {"log_uniform": [0.01, 10]}},
                             "n_iter": 40, "seed": 1, "cv": 3}},
        "svc2": {"algorithm": "svc", "kernel": {"type": "rbf", "gamma": 0.5},
                 "params": {"C": 1}, "preprocess": {"scale": "standardize"},
                 "X": blobs, "y": blob_y},
        "klr2": {"algorithm": "klr", "kernel": {"type": "rbf", "gamma": 0.5},
                 "X": two, "y": two_y},
        "gp1": {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": 1},
                "params": {"noise": 0.05}, "X": one, "y": one_y},
        # gp1's first 14 rows: the update form adds the other 6 (check_update)
        "gpu": {"algorithm": "gpr", "kernel": {"type": "rbf", "gamma": 1},
                "params": {"noise": 0.05}, "X": one[:14], "y": one_y[:14]},
        "pca": {"algorithm": "kpca", "kernel": {"type": "rbf", "gamma": 0.3},
                "params": {"n_components": 2}, "preprocess": {"scale": "standardize"},
                "X": blobs},
        "km": {"algorithm": "kkmeans", "kernel": {"type": "rbf", "gamma": 0.3},
               "params": {"n_clusters": 3}, "X": blobs},
    }
    for name, body in bodies.items():
        r = d.req("POST", f"/v1/models/{name}/fit", body)
        check(r.status == 201, f"fit {name} over HTTP", r)
    # a second version of svc2 (for the rollback)
    body = dict(bodies["svc2"], params={"C": 50})
    r = d.req("POST", "/v1/models/svc2/fit", body)
    check(r.status == 201 and r.json()["model"]["version"] == 2, "refit svc2: version 2", r)


def chart(b, canvas):
    """The chart's data as the page holds it (functions dropped)."""
    raw = b.execute_script("""
        const c = document.getElementById(arguments[0]);
        const ch = c && window.Chart && Chart.getChart(c);
        return ch ? JSON.stringify(ch.data) : null;""", canvas)
    return json.loads(raw) if raw else None


def by_key(data, key):
    return [ds for ds in (data or {}).get("datasets", []) if ds.get("key") == key]


def open_page(b, port, name, version):
    b.get("about:blank")  # a fresh page each time, not a same-document jump
    b.get(f"http://127.0.0.1:{port}/#model/{name}")
    ready = wait_for(lambda: b.find_element(By.ID, "model-page")
                     .get_attribute("data-ready") == f"{name}@{version}", 60)
    state = b.find_element(By.ID, "model-state").text if ready else ""
    check(bool(ready) and b.find_element(By.ID, "model-page").is_displayed(),
          f"{name}: #model/{name} shows the model page, every plot drawn", state)
    return bool(ready)


def figures(b):
    return sorted(f.get_attribute("id") for f in
                  b.find_elements(By.CSS_SELECTOR, "#model-page figure.mplot")
                  if f.get_attribute("id") not in ("score-fig", "drift-fig"))


def shot(b, folder, name, element_id="model-page"):
    """A picture of one element, the window made tall enough to hold it."""
    os.makedirs(folder, exist_ok=True)
    e = b.find_element(By.ID, element_id)
    height = b.execute_script("return arguments[0].getBoundingClientRect().height", e)
    b.set_window_size(1280, max(1000, int(height) + 200))
    b.execute_script("arguments[0].scrollIntoView()", e)
    e.screenshot(os.path.join(folder, name))
    b.set_window_size(1280, 1000)


def check_static(d):
    r = d.req("GET", "/model.js")
    csp = r.headers.get("content-security-policy", "")
    check(r.status == 200 and r.headers.get("content-type", "").startswith("text/javascript") and
          "script-src 'self';" in csp and "unsafe" not in csp and
          r.headers.get("x-content-type-options") == "nosniff" and
          "window.KMModel" in r.body,
          "GET /model.js: 200 text/javascript with the CSP, no token needed", r.headers)


def check_metadata(d, b, name):
    m = d.req("GET", f"/v1/models/{name}").json()
    ov = b.find_element(By.ID, "model-overview").text
    check(m["algorithm"] in ov and f"{m['n_features']} feature" in ov,
          f"{name}: the overview names the algorithm and the features", ov)
    drift = b.find_element(By.ID, "drift-state").text
    r = d.req("GET", f"/v1/models/{name}/drift")
    want = "200 permutations" if r.status == 200 else "at least 20"
    check(r.status in (200, 409) and want in drift,
          f"{name}: the drift part shows the model's drift test, or why there is "
          f"none ({want!r})", (drift, r))
    ts = m["training"].get("training_score")
    if ts is not None:
        cells = b.execute_script("""
            return [...document.querySelectorAll('#model-page dt')]
              .filter(dt => dt.textContent === 'training_score')
              .map(dt => [dt.nextElementSibling.textContent,
                          (dt.nextElementSibling.querySelector('[title]') || {}).title || null]);""")
        text, title = cells[0] if cells else (None, None)
        shown = float(text) if text else None
        digits = len((text or "").lstrip("-").replace(".", "").lstrip("0"))
        check(shown is not None and shown == float(f"{ts:.4g}") and digits <= 4 and
              (title is None and shown == ts or title is not None and float(title) == ts),
              f"{name}: training_score shown to 4 significant digits, exact on hover",
              (text, title, ts))
    return m


def check_search_heatmap(d, b, shots):
    m = check_metadata(d, b, "grid2")
    s = m["search"]
    check(figures(b) == ["search-fig"], "grid2 (krr, two params): only the search plot",
          figures(b))
    data = chart(b, "plot-search")
    cells = (by_key(data, "cells") or [{}])[0].get("data", [])
    axes = {n: sorted({r["params"][n] for r in s["results"]}) for n in ("alpha", "kernel.gamma")}
    want = {(r["params"]["alpha"], r["params"]["kernel.gamma"]): r for r in s["results"]}
    got = {}
    for p in cells:
        got[(axes["alpha"][p["x"]], axes["kernel.gamma"][p["y"]])] = p
    ok = len(cells) == s["n_points"] == len(want) and set(got) == set(want) and all(
        got[k]["v"] == want[k]["mean_score"] and got[k]["s"] == want[k]["std_score"] and
        got[k]["params"] == want[k]["params"] for k in want)
    check(ok, f"grid2 heatmap: {len(want)} cells, each the mean score of its params "
          "(x alpha, y kernel.gamma)", (cells[:3], s["results"][:3]))
    best = [p for p in cells if p.get("best")]
    bp = s["best_params"]
    check(len(best) == 1 and best[0]["params"] == bp and
          best[0]["v"] == max(r["mean_score"] for r in s["results"]),
          "grid2 heatmap: one cell marked best, at best_params", (best, bp))
    rows = b.find_elements(By.CSS_SELECTOR, "#search-table tbody tr")
    marked = [r.get_attribute("data-index") for r in rows if "best" in r.get_attribute("class")]
    check(len(rows) == s["n_points"] and marked == [str(s["best_index"])],
          "grid2: the search table lists every candidate and marks best_index",
          (len(rows), marked))
    shot(b, shots, "model-search-heatmap.png")


def check_search_points(d, b, shots):
    s = check_metadata(d, b, "rand2")["search"]
    data = chart(b, "plot-search")
    pts = (by_key(data, "points") or [{}])[0].get("data", [])
    res = s["results"]
    check(len(pts) == s["n_points"] == 40 and all(
        p["x"] == r["params"]["alpha"] and p["y"] == r["params"]["kernel.gamma"] and
        p["v"] == r["mean_score"] for p, r in zip(pts, res)) and
        [p["index"] for p in pts if p["best"]] == [s["best_index"]],
        "rand2 (a random search over two params): each candidate a point at its values "
        "with its mean score, the best marked", pts[:2])
    shot(b, shots, "model-search-random.png", "model-search")


def check_search_line(d, b, shots):
    m = check_metadata(d, b, "grid1")
    s = m["search"]
    check(figures(b) == ["search-fig"], "grid1 (svr, one param): only the search plot",
          figures(b))
    data = chart(b, "plot-search")
    res = sorted(s["results"], key=lambda r: r["params"]["C"])
    mean = (by_key(data, "mean") or [{}])[0].get("data", [])
    up = (by_key(data, "upper") or [{}])[0].get("data", [])
    lo = (by_key(data, "lower") or [{}])[0].get("data", [])
    check(len(mean) == len(res) and all(
        p["x"] == r["params"]["C"] and p["y"] == r["mean_score"] for p, r in zip(mean, res)),
        "grid1 line: the mean score at each C", (mean, res))
    check(len(up) == len(lo) == len(res) and all(
        close(u["y"], r["mean_score"] + r["std_score"], 1e-12) and
        close(w["y"], r["mean_score"] - r["std_score"], 1e-12) and u["x"] == r["params"]["C"]
        for u, w, r in zip(up, lo, res)), "grid1 band: mean ± std at each C", (up, lo))
    best = (by_key(data, "best") or [{}])[0].get("data", [])
    check(len(best) == 1 and best[0]["x"] == s["best_params"]["C"],
          "grid1: the best C is marked", best)
    shot(b, shots, "model-search-line.png")


def check_regions(d, b, shots, name, X, y, shot_name):
    check_metadata(d, b, name)
    check(figures(b) == ["regions-fig"], f"{name}: only the decision regions", figures(b))
    data = chart(b, "plot-regions")
    cells = (by_key(data, "cells") or [{}])[0].get("data", [])
    grid = [[p["x"], p["y"]] for p in cells]
    want = d.req("POST", f"/v1/models/{name}/predict",
                 {"X": grid, "output": "label"}).json() if grid else {}
    check(len(cells) == GRID * GRID and [p["label"] for p in cells] == want.get("predictions"),
          f"{name}: {GRID}×{GRID} cells, each POST predict's label of its point",
          (len(cells), cells[:2]))
    train = [p for ds in by_key(data, "train") for p in ds["data"]]
    coef = d.req("GET", f"/v1/models/{name}/coefficients").json()["coefficients"]
    idx = coef["support_"]["values"] if "support_" in coef else list(range(len(X)))
    span = [(min(X[i][j] for i in idx), max(X[i][j] for i in idx)) for j in (0, 1)]
    check(cells and all(min(p[k] for p in cells) < lo and max(p[k] for p in cells) > hi
                        for k, (lo, hi) in zip("xy", span)) and
          len({p["x"] for p in cells}) == len({p["y"] for p in cells}) == GRID,
          f"{name}: the grid spans the rows' range", span)
    got = sorted((p["i"], p["x"], p["y"], p["label"]) for p in train)
    ok = len(got) == len(idx) and all(
        close([gx, gy], X[idx[i]]) and lab == y[idx[i]] for i, gx, gy, lab in got)
    check(ok, f"{name}: the points are its rows ({len(idx)}), labelled with their "
          "training classes", got[:3])
    shot(b, shots, shot_name)


def check_band(d, b, shots, X, y):
    check_metadata(d, b, "gp1")
    check(figures(b) == ["band-fig"], "gp1 (gpr, one feature): only the band", figures(b))
    data = chart(b, "plot-band")
    mean = (by_key(data, "mean") or [{}])[0].get("data", [])
    up = (by_key(data, "upper") or [{}])[0].get("data", [])
    lo = (by_key(data, "lower") or [{}])[0].get("data", [])
    xs = [[p["x"]] for p in mean]
    mu = d.req("POST", "/v1/models/gp1/predict", {"X": xs, "output": "mean"}).json()["predictions"]
    sd = d.req("POST", "/v1/models/gp1/predict", {"X": xs, "output": "std"}).json()["predictions"]
    check(len(mean) >= 100 and [p["y"] for p in mean] == mu and
          [p["x"] for p in up] == [p["x"] for p in lo] == [x[0] for x in xs] and
          all(close(u["y"], a + 2 * s, 1e-12) and close(w["y"], a - 2 * s, 1e-12)
              for u, w, a, s in zip(up, lo, mu, sd)),
          "gp1: the band is POST predict's mean ± 2·std at the same x", (len(mean), up[:2]))
    check(min(x[0] for x in xs) < min(r[0] for r in X) and
          max(x[0] for x in xs) > max(r[0] for r in X), "gp1: the band spans the rows' range")
    train = sorted(((p["x"], p["y"]) for ds in by_key(data, "train") for p in ds["data"]))
    want = sorted((r[0], t) for r, t in zip(X, y))
    check(len(train) == len(want) and all(close(g, w, 1e-9) for g, w in zip(train, want)),
          "gp1: the points are the training rows with their targets (recovered from "
          "the coefficients)", (train[:3], want[:3]))
    shot(b, shots, "model-gpr-band.png")


def kpca_points(data):
    return sorted(((p["i"], p["x"], p["y"], p.get("c")) for ds in by_key(data, "group")
                   for p in ds["data"]))


def check_kpca(d, b, shots, X, labels):
    check_metadata(d, b, "pca")
    check(figures(b) == ["projections-fig"], "pca: only the projections", figures(b))
    pts = kpca_points(chart(b, "plot-projections"))
    want = d.req("POST", "/v1/models/pca/project", {"X": X}).json()["projections"]
    check(len(pts) == len(X) and all(close([px, py], want[i][:2], 1e-9)
                                     for i, px, py, _ in pts),
          "pca: the points are POST project of the training rows", pts[:2])
    shot(b, shots, "model-kpca.png", "projections-fig")
    # an uploaded CSV, coloured by its column "species"
    rows = X[::3]
    species = labels[::3]
    csv = "a,b,species\n" + "\n".join(f"{r[0]!r},{r[1]!r},{s}" for r, s in zip(rows, species))
    area = b.find_element(By.ID, "score-rows")
    area.clear()
    b.execute_script("arguments[0].value = arguments[1]", area, csv)
    b.find_element(By.ID, "score-plot").click()
    ok = wait_for(lambda: len(kpca_points(chart(b, "plot-projections"))) == len(rows), 30)
    color = Select(b.find_element(By.ID, "projections-color")).first_selected_option.text
    pts = kpca_points(chart(b, "plot-projections"))
    want = d.req("POST", "/v1/models/pca/project", {"X": rows}).json()["projections"]
    check(ok and color == "species" and all(
        [px, py] == want[i][:2] and c == species[i] for i, px, py, c in pts),
        "pca: a CSV's rows are POST project of them, coloured by its column species",
        (color, pts[:2]))
    groups = sorted(ds["label"] for ds in by_key(chart(b, "plot-projections"), "group"))
    check(groups == sorted("species " + s for s in set(species)),
          "pca: one colour per species", groups)
    shot(b, shots, "model-kpca-csv.png", "projections-fig")


def check_clusters(d, b, shots, X):
    check_metadata(d, b, "km")
    check(figures(b) == ["clusters-fig"], "km: only the clusters", figures(b))
    data = chart(b, "plot-clusters")
    pts = sorted((p["i"], p["x"], p["y"], p["cluster"]) for ds in by_key(data, "group")
                 for p in ds["data"])
    want = d.req("POST", "/v1/models/km/predict", {"X": X}).json()["predictions"]
    check(len(pts) == len(X) and all(
        close([px, py], X[i]) and c == want[i] for i, px, py, c in pts) and
        len(by_key(data, "group")) == len(set(want)),
        "km: the rows (first two features) coloured by POST predict's clusters", pts[:3])
    Select(b.find_element(By.ID, "clusters-x")).select_by_visible_text("x2")
    Select(b.find_element(By.ID, "clusters-y")).select_by_visible_text("x1")

    def swapped():
        got = sorted((p["i"], p["x"], p["y"], p["cluster"])
                     for ds in by_key(chart(b, "plot-clusters"), "group") for p in ds["data"])
        return got if len(got) == len(X) and all(
            [px, py] == [X[i][1], X[i][0]] and c == want[i] for i, px, py, c in got) else None
    check(wait_for(swapped, 20), "km: the axes chosen (x2, x1) are the plotted columns")
    shot(b, shots, "model-kkmeans.png")


def run_score(b, csv):
    b.execute_script("document.getElementById('score-state').textContent = ''")
    area = b.find_element(By.ID, "score-rows")
    b.execute_script("arguments[0].value = arguments[1]", area, csv)
    b.find_element(By.ID, "score-run").click()
    return wait_for(lambda: "POST score" in b.find_element(By.ID, "score-state").text or
                    "answered" in b.find_element(By.ID, "score-state").text, 30)


def check_score_classes(d, b, shots, X, y):
    g = random.Random(3)
    rows = [[r[0] + g.gauss(0, 1.5), r[1] + g.gauss(0, 1.5)] for r in X[::2]]
    ys = y[::2]
    csv = "x1,x2,y\n" + "\n".join(f"{r[0]!r},{r[1]!r},{t}" for r, t in zip(rows, ys))
    ok = run_score(b, csv)
    want = d.req("POST", "/v1/models/svc2/score", {"X": rows, "y": ys}).json()
    raw = b.find_element(By.ID, "score-raw").get_attribute("textContent") if ok else ""
    check(ok and json.loads(raw) == want, "svc2: Score shows what POST score answers",
          (raw[:200], want))
    pred = d.req("POST", "/v1/models/svc2/predict",
                 {"X": rows, "output": "label"}).json()["predictions"]
    classes = d.req("GET", "/v1/models/svc2").json()["classes"]
    counts = [[sum(1 for a, p in zip(ys, pred) if a == ca and p == cp) for cp in classes]
              for ca in classes]
    shown = b.execute_script("""
        const t = document.getElementById('score-confusion');
        return t ? [[...t.tHead.rows[0].cells].slice(1).map(c => c.textContent),
                    [...t.tBodies[0].rows].map(r => r.cells[0].textContent),
                    [...t.tBodies[0].rows].map(r => [...r.cells].slice(1)
                      .map(c => Number(c.textContent)))] : null;""")
    check(shown == [classes, classes, counts] and sum(map(sum, counts)) == len(rows) and
          any(counts[i][j] for i in range(3) for j in range(3) if i != j),
          "svc2: the confusion matrix's counts are predict's labels against y",
          (shown, counts))
    text = b.find_element(By.ID, "score-result").text
    check(f"{want['scoring']['accuracy']:.4g}".rstrip("0").rstrip(".") in text or
          str(want["scoring"]["accuracy"]) in text, "svc2: the accuracy is shown", text)
    shot(b, shots, "model-score-confusion.png", "model-score")


def check_score_values(d, b, shots, X, y):
    rows, ys = X[::3], y[::3]
    csv = "y,a,b\n" + "\n".join(f"{t!r},{r[0]!r},{r[1]!r}" for r, t in zip(rows, ys))
    ok = run_score(b, csv)
    want = d.req("POST", "/v1/models/grid2/score", {"X": rows, "y": ys}).json()
    raw = b.find_element(By.ID, "score-raw").get_attribute("textContent") if ok else ""
    check(ok and json.loads(raw) == want,
          "grid2: Score (y in the first column, named y) shows what POST score answers",
          (raw[:200], want))
    names = [o.text for o in Select(b.find_element(By.ID, "score-target")).options]
    check(names[2:] == ["y", "a", "b"], "grid2: the target choice lists the CSV's columns",
          names)
    check(not b.find_elements(By.ID, "model-update") and
          d.req("GET", "/v1/models/grid2").json()["updatable"] is False,
          "grid2 (not updatable: no keep_factor): the page has no update form")
    ready = wait_for(lambda: chart(b, "plot-score"), 20)
    data = chart(b, "plot-score") if ready else None
    pts = (by_key(data, "rows") or [{}])[0].get("data", [])
    pred = d.req("POST", "/v1/models/grid2/predict", {"X": rows}).json()["predictions"]
    check([(p["x"], p["y"]) for p in pts] == list(zip(ys, pred)),
          "grid2: predicted against actual is POST predict of the rows against their y",
          pts[:3])
    diag = (by_key(data, "diagonal") or [{}])[0].get("data", [])
    check(len(diag) == 2 and all(p["x"] == p["y"] for p in diag), "grid2: the y = x line",
          diag)
    shot(b, shots, "model-score-regression.png", "model-score")


def check_update(d, b, shots, X, y):
    """The update form adds gp1's last 6 rows to gpu (its first 14): the
    new version predicts as gp1, fitted on all 20 (docs/api.md: equal to
    a refit to 1e-9)."""
    csv = "x,y\n" + "\n".join(f"{r[0]!r},{t!r}" for r, t in zip(X[14:], y[14:]))
    area = b.find_element(By.ID, "update-rows")
    b.execute_script("arguments[0].value = arguments[1]", area, csv)
    b.find_element(By.ID, "update-run").click()
    ready = wait_for(lambda: b.find_element(By.ID, "model-page")
                     .get_attribute("data-ready") == "gpu@2", 60)
    state = b.find_element(By.ID, "model-state").text if ready else \
        b.find_element(By.ID, "update-state").text
    m = d.req("GET", "/v1/models/gpu").json()
    probe = [[v / 4] for v in range(25)]
    got = d.req("POST", "/v1/models/gpu/predict", {"X": probe, "output": "std"}).json()
    want = d.req("POST", "/v1/models/gp1/predict", {"X": probe, "output": "std"}).json()
    mean = d.req("POST", "/v1/models/gpu/predict", {"X": probe}).json()["predictions"]
    ref = d.req("POST", "/v1/models/gp1/predict", {"X": probe}).json()["predictions"]
    check(ready and m["version"] == 2 and m["n_samples"] == 20 and
          "Version 2 made from version 1 and 6 new rows" in state and
          close(mean, ref) and close(got.get("predictions"), want.get("predictions")),
          "gpu: Add the rows (gp1's last 6) makes version 2, whose mean and std are "
          "gp1's (fitted on all 20 rows) to 1e-9", (state, m.get("version"), mean[:3], ref[:3]))
    shot(b, shots, "model-update.png", "model-page")


def check_rollback(d, b, shots):
    v1 = d.req("GET", "/v1/models/svc2/versions/1").json()
    btn = b.find_element(By.CSS_SELECTOR, "#versions-table button[aria-label='roll back to version 1']")
    btn.click()
    ready = wait_for(lambda: b.find_element(By.ID, "model-page")
                     .get_attribute("data-ready") == "svc2@3", 60)
    m = d.req("GET", "/v1/models/svc2").json()
    state = b.find_element(By.ID, "model-state").text
    check(ready and m["version"] == 3 and m["params"] == v1["params"] and
          "Version 1 restored as version 3" in state,
          "svc2: rollback to version 1 makes version 3 with version 1's params",
          (m.get("version"), m.get("params"), state))
    rows = [r.get_attribute("data-version") for r in
            b.find_elements(By.CSS_SELECTOR, "#versions-table tbody tr")]
    check(rows == ["3", "2", "1"], "svc2: the versions table lists 3 (current), 2, 1", rows)
    shot(b, shots, "model-versions.png", "model-versions")


def check_delete(d, b, shots):
    b.find_element(By.ID, "delete-ask").click()
    confirm = b.find_element(By.ID, "delete-confirm")
    check(confirm.is_displayed() and d.req("GET", "/v1/models/km").status == 200,
          "km: Delete asks for a confirmation in the page first")
    shot(b, shots, "model-delete-confirm.png", "model-delete")
    b.find_element(By.ID, "delete-no").click()
    check(not confirm.is_displayed() and d.req("GET", "/v1/models/km").status == 200,
          "km: Keep it closes the confirmation; the model stays")
    b.find_element(By.ID, "delete-ask").click()
    b.find_element(By.ID, "delete-yes").click()
    gone = wait_for(lambda: b.execute_script("return location.hash") == "#models", 20)
    check(gone and d.req("GET", "/v1/models/km").status == 404 and
          not b.find_element(By.ID, "model-page").is_displayed(),
          "km: confirmed, the model is deleted (GET 404) and the page goes to #models")


def check_missing(b, port):
    b.get(f"http://127.0.0.1:{port}/#model/nosuch")
    msg = wait_for(lambda: "There is no model" in b.find_element(By.ID, "model-state").text and
                   b.find_element(By.ID, "model-state").text, 20)
    check(bool(msg) and "404 not_found" in msg, "#model/nosuch says there is no such model (404)",
          msg)


def docs_shots(b, port, folder):
    """The docs' pictures: the krr's search, the svc's decision regions and
    the gpr's band."""
    for name, version, element, out in (
            ("grid2", 1, "model-search", "console-model-search.png"),
            ("svc2", 3, "model-plots", "console-model-regions.png"),
            ("gp1", 1, "model-plots", "console-model-gpr.png")):
        if open_page(b, port, name, version):
            shot(b, folder, out, element)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    ap.add_argument("--docs-shots", help="also write the docs' pictures into this folder")
    args = ap.parse_args()
    started = time.time()
    shots, b = open_browser(args.server)
    if not b:
        return run.tally.summary()
    tmp = tempfile.mkdtemp(prefix="kmserve-console-model-")
    models = os.path.join(tmp, "models")
    os.makedirs(models)
    d = run.Daemon(os.path.abspath(args.server), models, "--keep-versions", "3")
    try:
        d.start()
        check_static(d)
        D = data_sets()
        fit_models(d, D)
        logs = Logs(b)
        steps = (
            ("grid2", 1, lambda: check_search_heatmap(d, b, shots)),
            ("grid2", 1, lambda: check_score_values(d, b, shots, *D["reg"])),
            ("grid1", 1, lambda: check_search_line(d, b, shots)),
            ("rand2", 1, lambda: check_search_points(d, b, shots)),
            ("svc2", 2, lambda: check_regions(d, b, shots, "svc2", *D["blobs"],
                                              "model-regions-svc.png")),
            ("svc2", 2, lambda: check_score_classes(d, b, shots, *D["blobs"])),
            ("svc2", 2, lambda: check_rollback(d, b, shots)),
            ("klr2", 1, lambda: check_regions(d, b, shots, "klr2", *D["two"],
                                              "model-regions-klr.png")),
            ("gp1", 1, lambda: check_band(d, b, shots, *D["one"])),
            ("gpu", 1, lambda: check_update(d, b, shots, *D["one"])),
            ("pca", 1, lambda: check_kpca(d, b, shots, *D["blobs"])),
            ("km", 1, lambda: check_clusters(d, b, shots, D["blobs"][0])),
            ("km", 1, lambda: check_delete(d, b, shots)),
        )
        for name, version, step in steps:
            if open_page(b, d.port, name, version):
                step()
        check_missing(b, d.port)
        if args.docs_shots:
            docs_shots(b, d.port, args.docs_shots)
        check_isolation(logs, d.port)
    except Exception as e:  # a crash of the runner is a failure, not a pass
        check(False, "runner", repr(e))
    finally:
        d.stop()
        b.quit()
        shutil.rmtree(tmp, ignore_errors=True)
    run.tally.note(f"screenshots in {shots}; {time.time() - started:.1f} s")
    return run.tally.summary()


if __name__ == "__main__":
    sys.exit(main())
