#!/usr/bin/python3
"""GET /v1/jobs's filters and pages (state=, model=, offset=, limit=,
fields=summary) against the full list, on a daemon with one worker,
--queue 64 and --max-jobs 200.

The table is set up to hold every state at once and to stay still while
it is read: 24 small krr fits over six names and 2 gpr fits that fail
(an indefinite sigmoid kernel) run to their end; then one long svc search
takes the only worker (running) and five more fits wait behind it
(queued), two of which are cancelled. While the search runs, nothing but
its progress moves, so each filtered or paged answer is compared with
the full list (GET /v1/jobs without parameters, newest first) filtered
and cut in Python: the same ids in the same order, `total` the number
of matching jobs, `next_offset` the next page's offset or null.

Checked: without parameters the answer is every job with its result
(the members as before, plus total and next_offset null); each of the
five states alone; a model alone and with a state; pages of 7 walked by
next_offset give the whole list; limit=1, offset at and past the end
(empty, null), limit up to --max-jobs; fields=summary drops result and
nothing else (the other members equal the full list's) and is less than
half the size;
the bad values (state=x, limit=0, limit=abc, limit above --max-jobs,
offset=-1, fields=all, model= empty, an unknown parameter) answer 400
naming the parameter (state's lists the five states).

Usage, from the project root:
    /usr/bin/python3 tests/integration/jobs_list.py --server build/kmserve
Ends with the line "N passed, N failed"; exits 1 if any failed.
"""
import argparse
import os
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402
from run import check  # noqa: E402

STATES = ["queued", "running", "succeeded", "failed", "cancelled"]
MAX_JOBS = 200
NAMES = [f"n{i}" for i in range(6)]


def fit(d, name, body):
    r = d.req("POST", f"/v1/models/{name}/fit", dict(body, **{"async": True}))
    job = ((r.json() or {}).get("job") or {}).get("id")
    check(r.status == 202 and job, f"async fit of {name} answers 202 with a job", r)
    return job


def small(i):
    X = [[float(j), float((j * 7 + i) % 5)] for j in range(6)]
    return {"algorithm": "krr", "kernel": {"type": "rbf", "gamma": 0.5},
            "params": {"alpha": 0.1 + i}, "X": X, "y": [r[0] - r[1] for r in X]}


def jobs(d, **q):
    path = "/v1/jobs" + ("?" + urllib.parse.urlencode(q) if q else "")
    return d.req("GET", path)


def ids(answer):
    return [j["id"] for j in answer.get("jobs", [])]


def set_up(d):
    """Every state in the table; returns the long job's id."""
    done = [fit(d, NAMES[i % 6], small(i)) for i in range(24)]
    for _ in range(2):
        done.append(fit(d, "bad", {"algorithm": "gpr",
                                   "kernel": {"type": "sigmoid", "gamma": 5, "coef0": -3},
                                   "params": {"noise": 1e-300},
                                   "X": [[0], [1], [2], [3]], "y": [0, 1, 2, 3]}))
    ends = [run.wait_job(d, j, ("succeeded", "failed", "cancelled"), 300) for j in done]
    got = [(e or {}).get("status") for e in ends]
    check(got == ["succeeded"] * 24 + ["failed"] * 2,
          "24 small fits succeed, the 2 gpr fits on an indefinite kernel fail", got)
    X, y = (list(v) for v in run.load_csv("letter.csv", 4000))
    long_job = fit(d, "slow", {
        "algorithm": "svc", "kernel": {"type": "rbf"}, "X": X, "y": y,
        "search": {"params": {"C": [1, 10, 100, 1000], "kernel.gamma": [0.01, 0.05, 0.1]},
                   "cv": 5}})
    j = run.wait_job(d, long_job, ("running", "succeeded", "failed", "cancelled"), 300)
    check((j or {}).get("status") == "running", "the long search takes the one worker", j)
    waiting = [fit(d, NAMES[i % 2], small(100 + i)) for i in range(5)]
    for jid in waiting[:2]:
        r = d.req("DELETE", f"/v1/jobs/{jid}")
        check(r.status == 202 and (r.json() or {}).get("status") == "cancelled",
              "a queued job cancelled ends cancelled at once", r)
    return long_job


def check_full(d):
    r = jobs(d)
    a = r.json() or {}
    check(r.status == 200 and set(a) == {"jobs", "total", "next_offset"} and
          a["total"] == len(a["jobs"]) == 32 and a["next_offset"] is None and
          all("result" in j for j in a["jobs"]),
          "no parameters: every job (32) with its result; total 32, next_offset null",
          {k: v for k, v in a.items() if k != "jobs"})
    got = sorted({j["status"] for j in a.get("jobs", [])})
    check(got == sorted(STATES), "the table holds every state", got)
    return a.get("jobs", [])


def check_filters(d, full):
    for s in STATES:
        a = jobs(d, state=s).json() or {}
        want = [j["id"] for j in full if j["status"] == s]
        check(ids(a) == want and a.get("total") == len(want) and
              a.get("next_offset", 0) is None,
              f"state={s}: the {len(want)} jobs in that state, newest first", a)
    for q in ({"model": "n3"}, {"model": "n0", "state": "queued"},
              {"model": "n1", "state": "succeeded"}, {"model": "nobody"}):
        a = jobs(d, **q).json() or {}
        want = [j["id"] for j in full if j["model"] == q["model"] and
                j["status"] == q.get("state", j["status"])]
        check(ids(a) == want and a.get("total") == len(want),
              f"{urllib.parse.urlencode(q)}: {len(want)} jobs as the full list filtered",
              (ids(a), want))


def check_pages(d, full):
    want = [j["id"] for j in full]
    got, offset, pages, totals = [], 0, 0, set()
    while offset is not None and pages < 20:
        a = jobs(d, offset=offset, limit=7).json() or {}
        got += ids(a)
        totals.add(a.get("total"))
        check(len(ids(a)) == min(7, len(want) - offset),
              f"offset={offset}&limit=7: {min(7, len(want) - offset)} jobs", ids(a))
        offset = a.get("next_offset")
        pages += 1
    check(got == want and pages == 5 and totals == {len(want)},
          "pages of 7 walked by next_offset give the whole list; total the same on each",
          (pages, totals))
    a = jobs(d, limit=1).json() or {}
    check(ids(a) == want[:1] and a.get("next_offset") == 1, "limit=1: the newest job, "
          "next_offset 1", a)
    a = jobs(d, offset=len(want) - 1).json() or {}
    check(ids(a) == want[-1:] and a.get("next_offset", 0) is None,
          "offset at the last job: the oldest alone, next_offset null", a)
    for off in (len(want), len(want) + 5, MAX_JOBS):
        a = jobs(d, offset=off).json() or {}
        check(ids(a) == [] and a.get("total") == len(want) and a.get("next_offset", 0) is None,
              f"offset={off} (at or past the end): no jobs, total {len(want)}, null", a)
    a = jobs(d, limit=MAX_JOBS).json() or {}
    check(ids(a) == want, f"limit={MAX_JOBS} (--max-jobs) is allowed", len(ids(a)))
    a = jobs(d, state="succeeded", offset=20, limit=3).json() or {}
    ok = [j["id"] for j in full if j["status"] == "succeeded"]
    check(ids(a) == ok[20:23] and a.get("total") == len(ok) and a.get("next_offset") == 23,
          "a filter and a page together: the page of the filtered list", a)


def check_summary(d, full):
    r = jobs(d, fields="summary")
    a = r.json() or {}
    byid = {j["id"]: j for j in full}
    same = all(set(j) == set(byid[j["id"]]) - {"result"} and
               all(j[k] == byid[j["id"]][k] for k in j if k != "progress")
               for j in a.get("jobs", []))
    check(ids(a) == list(byid) and same and not any("result" in j for j in a["jobs"]),
          "fields=summary: the same jobs, without result, every other member as the full "
          "list's", a.get("jobs", [])[:2])
    full_len = len(jobs(d).raw)
    check(len(r.raw) * 2 < full_len, "the summary is less than half than the full list",
          (len(r.raw), full_len))
    a = jobs(d, fields="summary", state="failed").json() or {}
    check(len(a.get("jobs", [])) == 2 and all(
        j["error"] and j["error"]["code"] and j["error"]["message"] for j in a["jobs"]),
        "the summary keeps a failed job's error", a)


def check_bad(d):
    cases = [
        ({"state": "x"}, "state \"x\" must be one of " + ", ".join(STATES)),
        ({"state": ""}, "state \"\" must be one of"),
        ({"limit": "0"}, f"limit \"0\" must be a whole number from 1 to {MAX_JOBS}"),
        ({"limit": "abc"}, "limit \"abc\" must be a whole number"),
        ({"limit": str(MAX_JOBS + 1)}, f"limit \"{MAX_JOBS + 1}\" must be a whole number"),
        ({"offset": "-1"}, f"offset \"-1\" must be a whole number from 0 to {MAX_JOBS}"),
        ({"offset": "1e3"}, "offset \"1e3\" must be a whole number"),
        ({"fields": "all"}, "fields \"all\" must be summary"),
        ({"model": ""}, "model must be"),
        ({"status": "queued"}, "query parameter 'status' is not known; jobs takes state, "
                               "model, offset, limit and fields"),
    ]
    for q, msg in cases:
        r = jobs(d, **q)
        e = (r.json() or {}).get("error") or {}
        check(r.status == 400 and e.get("code") == "invalid_argument" and
              e.get("message", "").startswith(msg),
              f"{urllib.parse.urlencode(q)}: 400 naming the parameter", r)


def body(d):
    long_job = set_up(d)
    try:
        full = check_full(d)
        check_filters(d, full)
        check_pages(d, full)
        check_summary(d, full)
        check_bad(d)
        again = check_full_ids(d)
        check(again == [j["id"] for j in full] and
              [j["status"] for j in jobs(d).json()["jobs"]] == [j["status"] for j in full],
              "the table did not move while it was read (the checks compared one state)")
    finally:
        d.req("DELETE", f"/v1/jobs/{long_job}")
        for j in (jobs(d, state="queued").json() or {}).get("jobs", []):
            d.req("DELETE", f"/v1/jobs/{j['id']}")


def check_full_ids(d):
    return ids(jobs(d).json() or {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(run.ROOT, "build", "kmserve"))
    args = ap.parse_args()
    return run.with_daemon(args.server, "kmserve-jobs-", body, "--workers", "1",
                           "--queue", "64", "--max-jobs", str(MAX_JOBS))


if __name__ == "__main__":
    sys.exit(main())
