"""kmserve.client - Client, one kmserve server over HTTP, and Job, one fit
job on it.

Every method is one request (predict, project and infer: one per batch
of rows) on a fresh connection (http.client, standard library only), with
the bearer token if one is given, over TLS for https:// URLs. Error
answers raise the KmserveError subclass of their code (kmserve.errors).

Retries. A request that changes nothing on the server (every GET, and
predict, project, score and infer, which docs/api.md states are
idempotent) is sent again up to `retries` times, after 0.2 s, 0.4 s, ...,
when the connection is refused, reset or closed before an answer. Nothing else is
retried: not fits, deletes or cancels (the server may have acted), not
timeouts (the server may still be working), not error answers.

Thread-safety: a Client keeps no state between requests, so one Client
may be used from many threads at once. A Job is a snapshot; refresh,
wait and cancel update it and are not meant to run on one Job from two
threads at once.
"""
import http.client
import json
import os
import ssl
import time
import urllib.parse

from . import _data
from .errors import KmserveConnectionError, KmserveError, error_for

DEFAULT_URL = "http://127.0.0.1:8080"
FINAL = ("succeeded", "failed", "cancelled")
_UNSET = object()
_NOT_JSON = object()


def _q(name):
    """A model name or job id as one path segment (the server refuses
    bad names with a 400 naming it)."""
    return urllib.parse.quote(str(name), safe="")


def _kernel(kernel):
    if isinstance(kernel, str):
        return {"type": kernel}
    return kernel


class Client:
    """One kmserve server.

    url: "http://host:port" or "https://host:port" (a path after the port
        is kept as a prefix, for a server behind a proxy); default
        $KMSERVE_URL, else http://127.0.0.1:8080.
    token: the bearer token (default $KMSERVE_TOKEN); a read token may
        list, get, predict, project and score, an admin token also fit,
        delete and manage jobs.
    timeout: seconds to connect and for each read of an answer (default
        60). A synchronous fit waits for the fit itself: fit's own
        timeout, unlimited by default, bounds that read.
    cafile: a PEM file of the CA (or the self-signed certificate) to trust
        for https (default $KMSERVE_CACERT); otherwise the system's CAs.
    verify: False turns certificate and host name checks off (insecure;
        for tests).
    ssl_context: an ssl.SSLContext of your own (client certificates, ...);
        replaces cafile and verify.
    retries: how many times a request that changes nothing is sent again
        after a refused or broken connection (default 2; see the module's
        docstring).
    numpy: None (default): answers are numpy arrays when X was one, else
        lists; True: always numpy arrays; False: always lists.
    """

    def __init__(self, url=None, token=None, timeout=60.0, *, cafile=None,
                 verify=True, ssl_context=None, retries=2, numpy=None):
        self.url = (url or os.environ.get("KMSERVE_URL") or DEFAULT_URL).rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url must be http://host[:port] or https://host[:port], "
                             f"not {self.url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self.token = token if token is not None else os.environ.get("KMSERVE_TOKEN")
        self.timeout = timeout
        self.cafile = cafile if cafile is not None else os.environ.get("KMSERVE_CACERT")
        self.verify = verify
        self.retries = retries
        self.numpy = numpy
        if numpy and _data.np is None:
            raise ValueError("numpy=True needs numpy, which is not installed")
        self._ssl_given = ssl_context is not None
        self._capabilities = None  # GET /v1's, read once (capabilities())
        self._ssl = ssl_context
        if self._https and self._ssl is None:
            self._ssl = ssl.create_default_context(cafile=self.cafile or None)
            if not verify:
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl.CERT_NONE

    def __repr__(self):
        return f"Client({self.url!r})"

    # A Client holds configuration only: copies share it (scikit-learn's
    # clone deep-copies estimator parameters), and a pickle rebuilds it
    # from its arguments (the token travels with it).
    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        if self._ssl_given:
            raise TypeError("a Client made with ssl_context cannot be pickled; "
                            "give cafile/verify instead")
        return (_rebuild, ((self.url, self.token, self.timeout),
                           dict(cafile=self.cafile, verify=self.verify,
                                retries=self.retries, numpy=self.numpy)))

    # ------------------------------------------------------------ HTTP

    def _connect(self, timeout):
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _once(self, method, path, payload, read_timeout, extra=None):
        connect_timeout = self.timeout
        if read_timeout is not _UNSET and read_timeout is not None and \
                (connect_timeout is None or read_timeout < connect_timeout):
            connect_timeout = read_timeout
        conn = self._connect(connect_timeout)
        try:
            headers = {"Accept": "application/json", "User-Agent": "kmserve-python",
                       "Connection": "close"}
            if payload is not None:
                headers["Content-Type"] = "application/json"
            headers.update(extra or {})
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            conn.connect()
            if read_timeout is not _UNSET:
                conn.sock.settimeout(read_timeout)
            conn.request(method, self._prefix + path, body=payload, headers=headers)
            resp = conn.getresponse()
            if extra is not None:  # the binary extension's answer header too
                extra["answer"] = resp.getheader("Inference-Header-Content-Length")
            return resp.status, resp.getheader("X-Request-Id"), resp.read()
        finally:
            conn.close()

    def request(self, method, path, body=None, *, retry=None, read_timeout=_UNSET,
                accept=(), raw=False, binary=None):
        """One request; returns (status, answer): the answer parsed from
        JSON (None for an empty body; its text with raw=True). An error
        status raises its KmserveError, unless it is in accept. retry:
        whether the request may be sent again after a broken connection
        (default: for GET only). binary: bytes sent after body's JSON with
        the binary tensor data extension's Inference-Header-Content-Length;
        the answer is then (JSON header, the bytes after it)."""
        payload = None if body is None else _data.dumps(body)
        extra = None
        if binary is not None:
            extra = {"Inference-Header-Content-Length": str(len(payload))}
            payload += binary
        if retry is None:
            retry = method in ("GET", "HEAD")
        attempts = 1 + (self.retries if retry else 0)
        where = f"{method} {self.url}{path}"
        for attempt in range(attempts):
            try:
                sent = None if extra is None else dict(extra)
                status, rid, data = self._once(method, path, payload, read_timeout,
                                               sent)
                break
            except ConnectionError as e:  # refused, reset, closed early
                if attempt + 1 < attempts:
                    time.sleep(0.2 * 2 ** attempt)
                    continue
                raise KmserveConnectionError(None, None, f"{where}: {e}") from e
            except (OSError, http.client.HTTPException) as e:  # TLS, timeouts, ...
                raise KmserveConnectionError(None, None, f"{where}: {e}") from e
        tail = b""
        if binary is not None and status < 400 and sent.get("answer"):
            at = int(sent["answer"])
            data, tail = data[:at], data[at:]
        text = data.decode("utf-8", "replace")
        if raw:
            answer = text
        else:
            try:
                answer = json.loads(text) if text else None
            except ValueError:
                answer = _NOT_JSON
        if status >= 400 and status not in accept:
            err = answer.get("error") if isinstance(answer, dict) else None
            if isinstance(err, dict):
                raise error_for(status, err.get("code"), err.get("message", ""), rid)
            raise error_for(status, None, text[:500] or f"HTTP {status}", rid)
        if answer is _NOT_JSON:
            raise KmserveError(status, None, f"{where}: the answer is not JSON: "
                               f"{text[:200]!r}", rid)
        if binary is not None:
            return status, (answer, tail)
        return status, answer

    def _want_numpy(self, X):
        return self.numpy if self.numpy is not None else _data.is_numpy(X)

    def _out(self, values, X):
        return _data.to_numpy(values) if self._want_numpy(X) else values

    # ------------------------------------------------------------ health

    def live(self):
        """True when GET /livez answers 200."""
        try:
            return self.request("GET", "/livez")[0] == 200
        except KmserveConnectionError:
            return False

    def health(self):
        """GET /readyz's body whatever its status: {"status": "ready",
        "models": N}, or "loading", "draining", "unavailable" (with a
        "reason") while it answers 503."""
        return self.request("GET", "/readyz", accept=(503,))[1]

    def ready(self):
        """True when GET /readyz answers 200 (the server serves)."""
        try:
            return self.request("GET", "/readyz", accept=(503,))[0] == 200
        except KmserveConnectionError:
            return False

    def info(self):
        """GET /v1: {"name", "version", "algorithms", "kernels",
        "capabilities"}, asked anew."""
        return self.request("GET", "/v1")[1]

    def capabilities(self):
        """GET /v1's "capabilities" (what each algorithm, kernel and output
        is: docs/api.md), asked once per Client and kept: the estimators
        take their facts about algorithms and kernels from it, so one this
        client has never heard of needs no edit here. {} from a server
        that does not describe itself."""
        caps = self._capabilities
        if caps is None:
            caps = self.info().get("capabilities") or {}
            self._capabilities = caps  # one dict assignment: thread-safe
        return caps

    def algorithm_capabilities(self, algorithm):
        """The entry of capabilities()["algorithms"] named algorithm, or
        None."""
        for entry in self.capabilities().get("algorithms") or ():
            if entry.get("name") == algorithm:
                return entry
        return None

    def metrics(self):
        """GET /metrics: the Prometheus text."""
        return self.request("GET", "/metrics", raw=True)[1]

    # ------------------------------------------------------------ models

    def models(self):
        """Every model's metadata, sorted by name."""
        return self.request("GET", "/v1/models")[1]["models"]

    def model(self, name):
        """One model's metadata (NotFound if there is none)."""
        return self.request("GET", f"/v1/models/{_q(name)}")[1]

    def delete_model(self, name):
        """Deletes the model from the server's memory and disk."""
        self.request("DELETE", f"/v1/models/{_q(name)}")

    # ------------------------------------------------------------ fit

    def fit(self, name, X, y=None, *, algorithm, kernel, params=None, preprocess=None,
            search=None, max_length=None, asynchronous=False, progress=None,
            poll_interval=0.2, timeout=None, binary=False):
        """Fits (or refits, as a new version) the model `name`.

        algorithm: any algorithm the server lists in info()["algorithms"]
            ("krr", "svc", "gpr", "klr", "kkmeans", ...).
        kernel: a kernel type ("rbf") or a kernel object
            ({"type": "rbf", "gamma": 0.5}), as docs/api.md describes.
        params, preprocess, search: the body members of the same names
            (dicts), passed as they are.
        X, y: lists or numpy arrays (y None for an algorithm whose
            capabilities say target "none": kpca, kkmeans). For a kernel
            that takes strings (capabilities()["kernels"]' input
            "strings": spectrum, ...) X is a list of str, one per row;
            for kernel "precomputed" it is the n x n Gram matrix.
        max_length: a string kernel's longest string (bytes) the model
            will take at predict (None: the server's default).

        Synchronous by default: returns the new model's metadata once the
        fit is done (timeout: seconds to wait, None for no limit).
        asynchronous=True returns the Job at once. progress=callable runs
        the fit as a job and waits for it, calling progress(job) at the
        start and whenever its status or progress changes; the result is
        the metadata, as for a synchronous fit (timeout bounds the wait;
        Ctrl-C during the wait cancels the job).

        binary=True sends X and y, where they are numbers, as binary FP64
        tensors after the JSON (the binary tensor data extension): the same
        doubles, without their text (much faster for large X); strings and
        labels that are not numbers go as JSON either way."""
        body = {"algorithm": algorithm, "kernel": _kernel(kernel)}
        if params is not None:
            body["params"] = params
        if preprocess is not None:
            body["preprocess"] = preprocess
        body["X"] = X
        if y is not None:
            body["y"] = y
        if max_length is not None:
            body["max_length"] = max_length
        if search is not None:
            body["search"] = search
        return self._submit(f"/v1/models/{_q(name)}/fit", body, asynchronous,
                            progress, poll_interval, timeout, binary)

    def update(self, name, X, y, *, asynchronous=False, progress=None,
               poll_interval=0.2, timeout=None, binary=False):
        """Adds the rows X with targets y to the model `name` without a
        full refit (POST /v1/models/{name}/update): the server makes its
        next version, equal to a refit on the old rows and these, at the
        model's hyperparameters and with its first fit's preprocessing
        statistics. Exact gpr models, krr models fitted with
        params={"keep_factor": True} and svc and svr models fitted with
        params={"keep_rows": True} (svc: y among the model's classes) can
        be updated; others raise
        Conflict (409) naming what can. X and y, binary, the answer, the
        Job and progress as fit's."""
        return self._submit(f"/v1/models/{_q(name)}/update", {"X": X, "y": y},
                            asynchronous, progress, poll_interval, timeout, binary)

    def _submit(self, path, body, asynchronous, progress, poll_interval, timeout,
                binary=False):
        """A fit's or an update's request: the model's metadata, or a Job.
        binary: X and y, where numbers, as binary tensors (X's bytes first,
        then y's, as the server reads them)."""
        tail = None
        if binary:
            tail = b""
            for key in ("X", "y"):
                shape = _data.numeric_shape(body.get(key))
                if shape is None:
                    continue
                data = _data.pack(body[key], "FP64", key)
                body[key] = {"datatype": "FP64", "shape": shape,
                             "binary_data_size": len(data)}
                tail += data
        if asynchronous or progress is not None:
            if asynchronous and progress is not None:
                raise ValueError("give asynchronous=True (a Job to wait on) or "
                                 "progress (wait here), not both")
            body["async"] = True
            answer = self.request("POST", path, body, binary=tail)[1]
            job = Job(self, (answer[0] if tail is not None else answer)["job"])
            if asynchronous:
                return job
            return job.wait(progress=progress, poll_interval=poll_interval, timeout=timeout)
        answer = self.request("POST", path, body, read_timeout=timeout, binary=tail)[1]
        return (answer[0] if tail is not None else answer)["model"]

    def search(self, name, X, y=None, *, algorithm, kernel, grid, cv=None, scoring=None,
               n_iter=None, seed=None, params=None, preprocess=None, **fit_options):
        """A fit whose parameters are chosen by cross-validation first (the
        body's "search" member): grid maps names ("C", "alpha",
        "kernel.gamma") to lists of values or {"log_uniform": [lo, hi]};
        cv (5, "loo", "gcv", {"folds": K, ...}, {"test_fold": [...]}),
        scoring, n_iter and seed as docs/api.md says. Returns what fit
        returns (the metadata holds the "search" record), with fit's
        asynchronous, progress, poll_interval and timeout options."""
        search = {"params": grid}
        for key, value in (("cv", cv), ("scoring", scoring), ("n_iter", n_iter),
                           ("seed", seed)):
            if value is not None:
                search[key] = value
        return self.fit(name, X, y, algorithm=algorithm, kernel=kernel, params=params,
                        preprocess=preprocess, search=search, **fit_options)

    # ------------------------------------------------------------ answers

    def _post_rows(self, name, route, key, X, extra, batch_size):
        """POSTs X to a row-wise route in batches; the answers' values
        concatenated, and the model versions that answered."""
        X, n = _data.rows(X)
        if n == 0:
            raise ValueError("X has no rows")
        step = batch_size or n
        values, versions = [], []
        for i in range(0, n, step):
            body = {"X": X[i:i + step]}
            body.update(extra)
            answer = self.request("POST", f"/v1/models/{_q(name)}/{route}", body,
                                  retry=True)[1]
            values.extend(answer[key])
            versions.append(answer["model"]["version"])
        return values, versions

    def infer(self, name, X, outputs=None, *, binary=False, datatype="FP64",
              version=None, batch_size=10000):
        """The Open Inference Protocol's infer (POST /v2/models/{name}/infer)
        of X's rows: a dict of each output asked for (outputs: v2 names,
        such as "labels", "decision_values"; default the model's main one)
        to its values (rows of width values for a matrix output).
        binary=True sends X and takes the answers as binary tensors (the
        binary tensor data extension: raw little-endian bytes after the
        JSON, no number text either way); datatype "FP64" or "FP32" (X
        rounded to single precision: half the bytes). Numeric X only;
        numpy speeds it up but is not needed."""
        if datatype not in ("FP64", "FP32"):
            raise ValueError("datatype must be FP64 or FP32")
        X, n = _data.rows(X)
        if n == 0:
            raise ValueError("X has no rows")
        path = f"/v2/models/{_q(name)}"
        if version is not None:
            path += f"/versions/{int(version)}"
        wanted = None if outputs is None else [
            {"name": o, "parameters": {"binary_data": True}} if binary else
            {"name": o} for o in outputs]
        got = {}
        for i in range(0, n, batch_size or n):
            rows = X[i:i + (batch_size or n)]
            tensor = {"name": "X", "datatype": datatype,
                      "shape": [len(rows), _data.n_features(rows)]}
            body = {"inputs": [tensor]}
            if wanted is not None:
                body["outputs"] = wanted
            if binary:
                data = _data.pack(rows, datatype)
                tensor["parameters"] = {"binary_data_size": len(data)}
                body["parameters"] = {"binary_data_output": True}
                answer, tail = self.request("POST", path + "/infer", body, retry=True,
                                            binary=data)[1]
            else:
                tensor["data"] = rows
                answer, tail = self.request("POST", path + "/infer", body,
                                            retry=True)[1], b""
            at = 0
            for o in answer["outputs"]:
                size = (o.get("parameters") or {}).get("binary_data_size")
                if size is None:
                    values = o["data"]
                else:
                    values = _data.unpack(tail[at:at + size], o["datatype"])
                    at += size
                if len(o["shape"]) == 2 and size is None:
                    w = o["shape"][1]
                    values = [values[k:k + w] for k in range(0, len(values), w)]
                elif len(o["shape"]) == 2:
                    values = _data.reshape(values, o["shape"][1])
                got.setdefault(o["name"], []).append(values)
        out = {}
        for k, v in got.items():
            v = _data.concat(v)
            if hasattr(v, "tolist") and not self._want_numpy(X):
                v = v.tolist()
            out[k] = self._out(v, X)
        return out

    def predict(self, name, X, output=None, *, batch_size=10000, binary=False):
        """Predictions, one per row of X (a string model's X: a list of
        str; a precomputed model's: rows of kernel values against its
        training rows). output: the server's `output`
        (capabilities()["outputs"] names each one and the algorithms
        answering it: "label" (default), "decision_function",
        "probability" for svc and klr, "mean", "std", "var", "cov" for
        gpr, ...). Rows go batch_size at a time, as
        kmctl sends them; a refit between batches shows in the versions,
        which predict does not return (use request() to see them).
        binary=True asks the model's main output (output must be None)
        through infer's binary tensors: no number text either way."""
        if binary:
            if output is not None:
                raise ValueError("binary=True answers the model's main output; "
                                 "use infer() to name others")
            return next(iter(self.infer(name, X, binary=True,
                                        batch_size=batch_size).values()))
        extra = {} if output is None else {"output": output}
        values, _ = self._post_rows(name, "predict", "predictions", X, extra, batch_size)
        return self._out(values, X)

    def project(self, name, X, inverse=False, *, batch_size=10000):
        """kpca projections of X (n_components per row), or with
        inverse=True rows of projections mapped back to input space."""
        extra = {"inverse": True} if inverse else {}
        values, _ = self._post_rows(name, "project", "projections", X, extra, batch_size)
        return self._out(values, X)

    def score(self, name, X, y=None):
        """How good the model is on rows with known answers (X as predict
        takes it): the server's answer {"model", "n", "scoring": {...}}
        (r2, mse, mae; accuracy, balanced_accuracy, ...;
        reconstruction_error)."""
        _data.rows(X)  # one string is not rows
        body = {"X": X}
        if y is not None:
            body["y"] = y
        return self.request("POST", f"/v1/models/{_q(name)}/score", body, retry=True)[1]

    def drift(self, name, *, permutations=None, seed=None):
        """GET /v1/models/{name}/drift: a kernel two-sample test of the rows
        the model was recently asked against its training rows (docs/api.md,
        "Drift"): {"mmd2", "p_value", "sizes", "window", "kernel", ...}.
        Conflict when it has too few recent rows or cannot be tested."""
        query = []
        if permutations is not None:
            query.append(f"permutations={int(permutations)}")
        if seed is not None:
            query.append(f"seed={int(seed)}")
        path = f"/v1/models/{_q(name)}/drift"
        if query:
            path += "?" + "&".join(query)
        return self.request("GET", path, retry=True)[1]

    def set_drift(self, name, *, collect=None, reset=False):
        """POST /v1/models/{name}/drift: turns the model's drift collection
        on or off (collect), or empties its reservoir (reset)."""
        body = {"reset": bool(reset)}
        if collect is not None:
            body["collect"] = bool(collect)
        return self.request("POST", f"/v1/models/{_q(name)}/drift", body)[1]

    # ------------------------------------------------------------ jobs

    def jobs(self):
        """Every job the server keeps, newest first, as Jobs."""
        return [Job(self, j) for j in self.request("GET", "/v1/jobs")[1]["jobs"]]

    def job(self, job_id):
        """One job (NotFound when it is unknown or expired)."""
        return Job(self, self.request("GET", f"/v1/jobs/{_q(job_id)}")[1])

    def cancel_job(self, job_id):
        """Asks a queued or running job to stop; the Job as it is now
        (Conflict when it has already finished)."""
        return Job(self, self.request("DELETE", f"/v1/jobs/{_q(job_id)}")[1])

    def wait_job(self, job_id, **options):
        """Job(job_id).wait(**options): the metadata of the fitted model."""
        return self.job(job_id).wait(**options)


def _rebuild(args, kwargs):
    return Client(*args, **kwargs)


class Job:
    """A fit job as last seen: id, status ("queued", "running",
    "succeeded", "failed", "cancelled"), model, progress (0 to 1),
    created_at, started_at, finished_at, error ({"code", "message"} or
    None), result (the model's metadata once it succeeded) and data (the
    whole object)."""

    def __init__(self, client, data):
        self._client = client
        self._set(data)

    def _set(self, data):
        self.data = data
        for key in ("id", "status", "model", "progress", "created_at", "started_at",
                    "finished_at", "error", "result"):
            setattr(self, key, data.get(key))

    def __repr__(self):
        return f"<Job {self.id} {self.status} {self.progress:.0%} model={self.model}>"

    @property
    def done(self):
        return self.status in FINAL

    def refresh(self):
        """GET /v1/jobs/{id}; returns self."""
        self._set(self._client.request("GET", f"/v1/jobs/{_q(self.id)}")[1])
        return self

    def cancel(self):
        """DELETE /v1/jobs/{id}: a queued job is cancelled at once, a
        running one at its next progress report. Returns self."""
        self._set(self._client.request("DELETE", f"/v1/jobs/{_q(self.id)}")[1])
        return self

    def wait(self, progress=None, poll_interval=0.2, timeout=None, cancel_on_interrupt=True):
        """Polls until the job ends. progress(job) is called now and at
        every change of status or progress. Returns the fitted model's
        metadata; a failed or cancelled job raises the KmserveError of
        its error's code (Unprocessable, Conflict, ...) with .job set.
        timeout (seconds) raises TimeoutError, the job left running.
        Ctrl-C cancels the job first (cancel_on_interrupt) and re-raises."""
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = None
        try:
            while True:
                if progress is not None and (self.status, self.progress) != seen:
                    seen = (self.status, self.progress)
                    progress(self)
                if self.done:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"job {self.id} is still {self.status} after "
                                       f"{timeout} s")
                time.sleep(poll_interval)
                self.refresh()
        except KeyboardInterrupt:
            if cancel_on_interrupt and not self.done:
                try:
                    self.cancel()
                except Exception:
                    pass
            raise
        if self.status == "succeeded":
            return self.result
        err = self.error or {}
        raise error_for(None, err.get("code"), err.get("message", f"job {self.status}"),
                        job=self)
