#!/usr/bin/python3
"""The kernels added through the kernel table, over HTTP: a krr fit with
each of laplacian_l2, exponential and normalized (of polynomial,
exponential and rbf) predicts what numpy computes from the kernels'
definitions (tests/fixtures/gen_kernel_refs.py, kref_*.txt), to 1e-9
relative; an svc fit with each (the SMO solver's kernel columns) gives the
decision values of scikit-learn's SVC on numpy's Gram matrices
(gen_kernel_svc_refs.py), to 1e-6 relative; metadata shows each kernel as given; the new kernels' rules
(normalized takes exactly one part, no gamma on normalized) are 400s.
Usage, from the project root:
    /usr/bin/python3 tests/integration/kernels.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

D = 4
ALPHA = 0.5
KERNELS = {
    "laplacian_l2": {"type": "laplacian_l2", "gamma": 0.7},
    "exponential": {"type": "exponential", "gamma": 0.3},
    "normalized_poly": {"type": "normalized", "kernels": [
        {"type": "polynomial", "gamma": 0.5, "coef0": 1.0, "degree": 3}]},
    "normalized_exponential": {"type": "normalized", "kernels": [
        {"type": "exponential", "gamma": 0.3}]},
    "normalized_rbf": {"type": "normalized", "kernels": [{"type": "rbf", "gamma": 0.4}]},
}


def rows(name):
    return run.fixture_rows(name, D)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()

    def body(d):
        X, T, y = rows("kref_X.txt"), rows("kref_T.txt"), run.read_fixture("kref_y.txt")
        for case, kernel in KERNELS.items():
            r = d.req("POST", f"/v1/models/k-{case}/fit", {
                "algorithm": "krr", "kernel": kernel, "params": {"alpha": ALPHA},
                "X": X, "y": y})
            meta = (r.json() or {}).get("model", {})
            run.check(r.status == 201 and meta.get("kernel") == kernel,
                      f"{case}: fit 201, metadata shows the kernel as given", r)
            r = d.req("POST", f"/v1/models/k-{case}/predict", {"X": T})
            got = (r.json() or {}).get("predictions", [])
            want = run.read_fixture(f"kref_{case}_pred.txt")
            run.check(len(got) == len(want) and run.max_rel(got, want, 1e-12) <= 1e-9,
                      f"{case}: predictions equal numpy's to 1e-9", (got[:3], want[:3]))
            r = d.req("POST", f"/v1/models/s-{case}/fit", {
                "algorithm": "svc", "kernel": kernel, "params": {"C": 1.0, "tol": 1e-8},
                "X": X, "y": [int(v > 0) for v in y]})
            run.check(r.status == 201, f"{case}: svc fit 201", r)
            r = d.req("POST", f"/v1/models/s-{case}/predict",
                      {"X": T, "output": "decision_function"})
            got = (r.json() or {}).get("predictions", [])
            want = run.read_fixture(f"kref_svc_{case}_decision.txt")
            run.check(len(got) == len(want) and run.max_rel(got, want, 1e-3) <= 1e-6,
                      f"{case}: svc decision values equal scikit-learn's to 1e-6",
                      (got[:3], want[:3]))
        for body, what, text in (
                ({"type": "normalized", "kernels": [{"type": "rbf"}, {"type": "linear"}]},
                 "normalized with two parts", "kernel.kernels must be an array of 1 kernel"),
                ({"type": "normalized"}, "normalized without its part", "kernel.kernels"),
                ({"type": "normalized", "gamma": 1, "kernels": [{"type": "rbf"}]},
                 "gamma on normalized", "kernel.gamma does not apply"),
                ({"type": "exponential", "degree": 2}, "degree on exponential",
                 "kernel.degree does not apply")):
            r = d.req("POST", "/v1/models/k-bad/fit", {
                "algorithm": "krr", "kernel": body, "X": X, "y": y})
            run.check(r.status == 400 and text in r.body, f"{what}: 400 naming it", r)
        kernels = d.req("GET", "/v1").json().get("kernels", [])
        run.check({"laplacian_l2", "exponential", "normalized"} <= set(kernels),
                  "GET /v1 lists the new kernels", kernels)

    return run.with_daemon(args.server, "kmserve-kernels-", body)


if __name__ == "__main__":
    sys.exit(main())
