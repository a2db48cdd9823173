"""kmserve.estimators - scikit-learn style estimators whose fit, predict,
transform and score run on a kmserve server.

KernelRidge, SVC, SVR, KernelPCA, GaussianProcessRegressor,
KernelLogisticRegression and KernelKMeans take scikit-learn's parameter
names (kernel "rbf"/"poly"/..., gamma, degree, coef0, C, alpha, epsilon,
tol, cache_size, class_weight, n_components, fit_inverse_transform,
eigen_solver, optimizer, n_clusters, ...) and turn them into the server's
kernel and params objects; KernelModel(algorithm=...) takes the server's
own names for any algorithm the server fits, including ones added after
this client. What the client needs to know of an algorithm or a kernel
(which kernel members a type takes; whether an algorithm is a
classifier, a regressor or a clusterer) comes from the server's
self-description, GET /v1's "capabilities", asked once per Client. Each estimator
fits a model on the server under model_name (or a generated name, one per
estimator object) and, unless keep_model=True, deletes that model when
the estimator is garbage-collected (or at exit, or by delete_model()).
X is rows of numbers, a list of str for a kernel that takes strings
(the server's capabilities say which), or with kernel="precomputed" a
kernel matrix.

get_params / set_params follow scikit-learn's BaseEstimator contract (the
constructor stores its arguments unchanged), so the estimators work in
clone, cross_val_score, GridSearchCV and Pipeline. With scikit-learn
installed they inherit its BaseEstimator and mixins; without it they
carry the same two methods themselves.

Answers are numpy arrays when numpy is importable (as scikit-learn's
estimators answer), else lists.

Thread-safety: an estimator is not safe to fit from two threads at once
(as scikit-learn's); fitted, its predict/transform/score may run from
several threads. The default client is set once, under a lock.
"""
import inspect
import threading
import uuid
import weakref

from . import _data
from .client import Client
from .errors import KmserveError, StaleModel

try:
    from sklearn.base import (BaseEstimator, ClassifierMixin, ClusterMixin, RegressorMixin,
                              TransformerMixin)
    from sklearn.exceptions import NotFittedError
    HAVE_SKLEARN = True
except ImportError:
    HAVE_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        """The estimator has not been fitted yet."""

    class BaseEstimator:
        """get_params / set_params as scikit-learn's BaseEstimator has
        them: the constructor's named arguments, stored unchanged."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values()
                          if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            out = {}
            for key in self._get_param_names():
                value = getattr(self, key)
                if deep and hasattr(value, "get_params") and not isinstance(value, type):
                    out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
                out[key] = value
            return out

        def set_params(self, **params):
            valid = self.get_params(deep=True)
            nested = {}
            for key, value in params.items():
                key, sep, sub = key.partition("__")
                if key not in valid:
                    raise ValueError(f"Invalid parameter {key!r} for estimator {self!r}. "
                                     f"Valid parameters are: {sorted(self.get_params(False))!r}.")
                if sep:
                    nested.setdefault(key, {})[sub] = value
                else:
                    setattr(self, key, value)
                    valid[key] = value
            for key, sub in nested.items():
                valid[key].set_params(**sub)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
            return f"{type(self).__name__}({args})"

    class ClassifierMixin:
        _estimator_type = "classifier"

    class RegressorMixin:
        _estimator_type = "regressor"

    class ClusterMixin:
        _estimator_type = "clusterer"

        def fit_predict(self, X, y=None, **fit_params):
            return self.fit(X, **fit_params).labels_

    class TransformerMixin:
        def fit_transform(self, X, y=None, **fit_params):
            return self.fit(X, y, **fit_params).transform(X)


_default_client = None
_default_lock = threading.Lock()


def default_client():
    """The Client of estimators given client=None: the one
    set_default_client set, else Client() ($KMSERVE_URL, $KMSERVE_TOKEN,
    $KMSERVE_CACERT)."""
    global _default_client
    with _default_lock:
        if _default_client is None:
            _default_client = Client()
        return _default_client


def set_default_client(client):
    """Makes client (a Client or a URL) the estimators' default."""
    global _default_client
    with _default_lock:
        _default_client = client if isinstance(client, Client) else Client(client)


def _delete_quietly(client, name):
    """An estimator's model, deleted when the estimator goes: a model
    already gone, or a server gone, is not an error then."""
    try:
        client.request("DELETE", f"/v1/models/{name}", read_timeout=5)
    except (KmserveError, ValueError):
        pass


# scikit-learn's kernel parameters; a kernel type is sent those of them
# its capabilities list (GET /v1: kernels[].params), as scikit-learn
# ignores the ones a type does not take.
_SKLEARN_KERNEL_MEMBERS = ("gamma", "degree", "coef0")
_KERNEL_ALIASES = {"poly": "polynomial"}
_LINEAR_COSINE = {"type": "normalized", "kernels": [{"type": "linear"}]}


def _label_key(label):
    """A class label as a JSON object key (class_weight): numbers as the
    server reads them back, numpy scalars as Python values."""
    if hasattr(label, "item"):
        label = label.item()
    if isinstance(label, float):
        return repr(label)
    return str(label)


class _ServerEstimator(BaseEstimator):
    """What every estimator shares: the kernel object from scikit-learn's
    names, the model's name and lifetime on the server, the answers."""

    _algorithm = None

    # -------------------------------------------------------- the body

    def _client(self):
        c = self.client
        if c is None:
            return default_client()
        if isinstance(c, Client):
            return c
        # a URL: one Client per URL, kept, so that its capabilities are
        # asked once
        kept = getattr(self, "_url_client", None)
        if kept is None or kept.url != c.rstrip("/"):
            kept = self._url_client = Client(c)
        return kept

    def _kernel_members(self, kernel_type):
        """scikit-learn's kernel parameters that kernel_type takes, from
        the server's capabilities (gamma alone when it does not say)."""
        for entry in self._client().capabilities().get("kernels") or ():
            if entry.get("name") == kernel_type:
                names = {p.get("name") for p in entry.get("params") or ()}
                return tuple(m for m in _SKLEARN_KERNEL_MEMBERS if m in names)
        return ("gamma",)

    def _gamma(self, X):
        g = self.gamma
        if isinstance(g, str):
            d = _data.n_features(X)
            if g == "auto":
                return 1.0 / d
            if g == "scale":
                var = _data.scaled_variance(X, (self.preprocess or {}).get("scale", "none"))
                return 1.0 / (d * var) if var != 0 else 1.0
            raise ValueError(f"gamma must be a number, 'scale' or 'auto', not {g!r}")
        return g

    # scikit-learn's kernel names ("poly", "cosine") and only the members
    # each type takes; KernelModel sends the server's names as given.
    _sklearn_kernels = True

    def _kernel_object(self, X):
        k = self.kernel
        if isinstance(k, dict):
            obj = dict(k)
        elif not isinstance(k, str):
            raise ValueError("kernel must be a kernel type the server knows ('rbf', "
                             "'poly', 'spectrum', 'precomputed', ...) or a kernel "
                             "object (a dict); callables cannot run on the server, "
                             f"not {k!r}")
        elif self._sklearn_kernels and k == "cosine":
            obj = dict(_LINEAR_COSINE)
        else:
            members = _SKLEARN_KERNEL_MEMBERS
            if self._sklearn_kernels:
                k = _KERNEL_ALIASES.get(k, k)
                members = self._kernel_members(k)
            obj = {"type": k}
            for member in members:
                value = self._gamma(X) if member == "gamma" else getattr(self, member)
                if value is not None:
                    obj[member] = value
        obj.update(self.kernel_params or {})
        return obj

    def _params_object(self, X, y):
        raise NotImplementedError

    # kernel "precomputed": X is a kernel matrix, which scikit-learn's
    # tools (cross_val_score, GridSearchCV) then cut by rows and columns
    def _precomputed(self):
        k = self.kernel
        return k == "precomputed" or (isinstance(k, dict) and
                                      k.get("type") == "precomputed")

    def _more_tags(self):  # scikit-learn before 1.6
        return {"pairwise": self._precomputed()}

    def __sklearn_tags__(self):  # scikit-learn 1.6 and later
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._precomputed()
        return tags

    def _all_params(self, X, y):
        params = self._params_object(X, y)
        params.update(self.server_params or {})
        return params

    # -------------------------------------------------------- the model

    def _model_name(self):
        if self.model_name:
            return self.model_name
        name = getattr(self, "_generated_name", None)
        if name is None:
            name = f"sk-{type(self).__name__.lower()}-{uuid.uuid4().hex[:16]}"
            self._generated_name = name
        return name

    def _fit(self, X, y, progress):
        client = self._client()
        name = self._model_name()
        owner = getattr(self, "_owner", None)
        if owner is not None and owner.alive:
            owned_client, owned_name = owner.peek()[2]
            if (owned_client.url, owned_name) != (client.url, name):
                owner()  # the model of an earlier fit under another name
                owner = None
        meta = client.fit(name, X, y, algorithm=self._algorithm,
                          kernel=self._kernel_object(X), params=self._all_params(X, y),
                          preprocess=self.preprocess, max_length=self.max_length,
                          progress=progress)
        self.model_name_ = name
        self.model_version_ = meta["version"]
        self.metadata_ = meta
        # what X is (the metadata's input): rows of n_features numbers;
        # strings, which have no feature count (as scikit-learn's text
        # estimators); a precomputed kernel's values, one per training row
        # (as scikit-learn's SVC(kernel="precomputed") counts them)
        given = meta.get("input") or {}
        if given.get("kind") == "strings":
            self.__dict__.pop("n_features_in_", None)
        else:
            self.n_features_in_ = given.get("n_training", meta["n_features"])
        if self.keep_model:
            if owner is not None:
                owner.detach()
            self._owner = None
        elif owner is None or not owner.alive:
            self._owner = weakref.finalize(self, _delete_quietly, client, name)
        return self

    def _partial_fit(self, X, y, progress):
        """The first call fits; later ones add the rows to the model
        (Client.update): its next version, equal to a refit on all the
        rows given so far. StaleModel when the name was refitted
        elsewhere since this estimator's last fit or update."""
        if not hasattr(self, "model_name_"):
            return self._fit(X, y, progress)
        client = self._client()
        self._check_version([client.model(self.model_name_)["version"]])
        meta = client.update(self.model_name_, X, y, progress=progress)
        self.model_version_ = meta["version"]
        self.metadata_ = meta
        return self

    def delete_model(self):
        """Deletes the fitted model from the server now."""
        owner = getattr(self, "_owner", None)
        if owner is not None and owner.alive:
            owner()
        elif hasattr(self, "model_name_"):
            self._client().delete_model(self.model_name_)
        self._owner = None

    def detach_model(self):
        """Keeps the fitted model on the server after this estimator is
        gone (as keep_model=True would have); returns its name."""
        self._check_fitted()
        owner = getattr(self, "_owner", None)
        if owner is not None:
            owner.detach()
        self._owner = None
        return self.model_name_

    def __getstate__(self):
        # Copies and pickles do not own the model: only the estimator that
        # fitted it deletes it.
        getstate = getattr(super(), "__getstate__", None)
        state = dict(getstate() if getstate else self.__dict__)
        state.pop("_owner", None)
        state.pop("_url_client", None)
        return state

    # -------------------------------------------------------- answers

    def _check_fitted(self):
        if not hasattr(self, "model_name_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; "
                                 "call fit first")

    def _check_version(self, versions):
        for v in versions:
            if v != self.model_version_:
                raise StaleModel(None, "stale_model",
                                 f"model {self.model_name_} answered with version {v}; this "
                                 f"estimator fitted version {self.model_version_} (the name "
                                 "was refitted elsewhere: give each estimator its own "
                                 "model_name, or none)")

    def _answer(self, route, key, X, extra=None, batch_size=10000):
        self._check_fitted()
        values, versions = self._client()._post_rows(self.model_name_, route, key, X,
                                                     extra or {}, batch_size)
        self._check_version(versions)
        return values

    @staticmethod
    def _out(values):
        return _data.to_numpy(values) if _data.np is not None else values

    def _score_answer(self, X, y):
        self._check_fitted()
        answer = self._client().score(self.model_name_, X, y)
        self._check_version([answer["model"]["version"]])
        return answer["scoring"]


def _store(est, args):
    """A constructor's body: every argument stored unchanged under its
    own name, as scikit-learn's contract wants (**params: each of its
    names too)."""
    args = dict(args)
    args.pop("self")
    args.pop("__class__", None)
    args.update(args.pop("params", {}))
    for key, value in args.items():
        setattr(est, key, value)


def _no_sample_weight(sample_weight):
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported: kmserve weighs every row alike")


class _Regressor(RegressorMixin, _ServerEstimator):
    """fit, predict and score (the server's r2) of KernelRidge and SVR."""

    def fit(self, X, y, progress=None):
        """Fits on the server; progress(job) as Client.fit takes it."""
        return self._fit(X, y, progress)

    def predict(self, X):
        return self._out(self._answer("predict", "predictions", X))

    def score(self, X, y, sample_weight=None):
        """R² on (X, y), computed by the server (averaged over outputs)."""
        _no_sample_weight(sample_weight)
        return self._score_answer(X, y)["r2"]


def _svm_params(est):
    """The members SVC and SVR share, from scikit-learn's names."""
    return {"C": est.C, "tol": est.tol, "cache_mb": est.cache_size,
            "shrinking": est.shrinking}


class KernelRidge(_Regressor):
    """Kernel ridge regression on a kmserve server (algorithm krr), with
    scikit-learn's KernelRidge parameters.

    alpha -> params.alpha (a number); kernel: "linear" (default, as
    scikit-learn's), "poly"/"polynomial", "rbf", "laplacian", "sigmoid",
    "cosine" (sent as a normalized linear kernel), "precomputed", any
    other type the server knows, or a kernel object (dict) sent as it
    is; gamma (None:
    the server's 1/n_features, as scikit-learn's), degree, coef0 ->
    kernel.gamma, kernel.degree, kernel.coef0 where the type takes them;
    kernel_params: more kernel members (merged last).

    Strings: with a kernel that takes them (the server's capabilities say
    which, e.g. "spectrum" with kernel_params={"length": 3}, or a kernel
    object such as {"type": "normalized", "kernels": [{"type":
    "spectrum", "length": 3}]}), X is a list of str, one per row, sent as
    it is.
    kernel="precomputed": X is the n x n Gram matrix at fit, and the
    kernel values against the training rows at predict (as
    scikit-learn's; its tools cut such an X by rows and columns).

    kmserve's own: preprocess (the fit's "preprocess" object, e.g.
    {"scale": "standardize", "center_y": True}), max_length (a string
    model's longest string, in bytes, at predict; None: the server's
    default), server_params (more params members, e.g. {"solver":
    "nystrom", "n_centres": 500}), model_name (None: generated),
    keep_model (False: the model is deleted when the estimator goes),
    client (a Client, a URL, or None for default_client()).
    """

    _algorithm = "krr"

    def __init__(self, alpha=1.0, *, kernel="linear", gamma=None, degree=3, coef0=1,
                 kernel_params=None, preprocess=None, max_length=None,
                 server_params=None, model_name=None,
                 keep_model=False, client=None):
        _store(self, locals())

    def _params_object(self, X, y):
        return {"alpha": self.alpha}

    def partial_fit(self, X, y, progress=None):
        """Fits on the first call; then adds the rows X, y to the model
        without a full refit (the server's update: its next version equals
        a refit on all the rows so far). Needs server_params={"keep_factor":
        True} (the exact solver keeps its factor; with "solver": "nystrom"
        the model keeps its centres and its normal equations' sums, and
        equals a fit on all the rows with those centres, to cg_tol; else
        Conflict)."""
        return self._partial_fit(X, y, progress)


class _Classifier(ClassifierMixin, _ServerEstimator):
    """predict, predict_proba, predict_log_proba, decision_function and
    score (the server's accuracy) of a classifier whose outputs are the
    server's label, probability and decision_function."""

    def fit(self, X, y, progress=None):
        self._fit(X, y, progress)
        self.classes_ = self._out(self.metadata_["classes"])
        return self

    def predict(self, X):
        return self._out(self._answer("predict", "predictions", X))

    def decision_function(self, X):
        return self._out(self._answer("predict", "predictions", X,
                                      {"output": "decision_function"}))

    def predict_proba(self, X):
        """Rows of class probabilities in classes_ order."""
        return self._out(self._answer("predict", "predictions", X, {"output": "probability"}))

    def predict_log_proba(self, X):
        import math
        p = self._answer("predict", "predictions", X, {"output": "probability"})
        return self._out([[math.log(v) if v > 0 else float("-inf") for v in row] for row in p])

    def score(self, X, y, sample_weight=None):
        """Accuracy on (X, y), computed by the server."""
        _no_sample_weight(sample_weight)
        return self._score_answer(X, y)["accuracy"]


class _IfProbability:
    """A method that exists only when probability=True, as scikit-learn
    hides SVC.predict_proba otherwise (hasattr is False)."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, owner=None):
        if obj is not None and not obj.probability:
            raise AttributeError("predict_proba is available when probability=True")
        return self.fn if obj is None else self.fn.__get__(obj, owner)


class SVC(_Classifier):
    """C-support vector classification on a kmserve server (algorithm
    svc), with scikit-learn's SVC parameters.

    C, tol, shrinking, probability -> params of the same names;
    cache_size -> params.cache_mb; class_weight: a dict label -> weight,
    or "balanced" (computed here as n_samples / (n_classes * count), as
    scikit-learn does) -> params.class_weight; kernel (default "rbf"),
    gamma ("scale" (default): 1 / (n_features * X.var()) computed here on
    X as the kernel sees it, after preprocess; "auto": 1/n_features; or a
    number), degree, coef0 (default 0.0, sent for poly and sigmoid) as for
    KernelRidge. decision_function_shape "ovr" (default) turns the
    server's one-vs-one values into scikit-learn's one-vs-rest ones for
    more than 2 classes (the same transformation); "ovo" gives them as
    they are. Probabilities come from the server's Platt scaling (its own
    internal cross-validation, so they differ from scikit-learn's random
    ones). kmserve's own: preprocess, max_length, server_params,
    model_name, keep_model, client, as for KernelRidge.
    """

    _algorithm = "svc"

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0,
                 shrinking=True, probability=False, tol=1e-3, cache_size=200,
                 class_weight=None, decision_function_shape="ovr", kernel_params=None,
                 preprocess=None, max_length=None,
                 server_params=None, model_name=None, keep_model=False,
                 client=None):
        _store(self, locals())

    def _params_object(self, X, y):
        params = _svm_params(self)
        params["probability"] = self.probability
        weights = self.class_weight
        if isinstance(weights, str):
            if weights != "balanced":
                raise ValueError(f"class_weight must be a dict, 'balanced' or None, "
                                 f"not {weights!r}")
            labels = y.tolist() if hasattr(y, "tolist") else list(y)
            counts = {}
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
            weights = {k: len(labels) / (len(counts) * c) for k, c in counts.items()}
        if weights:
            params["class_weight"] = {_label_key(k): v for k, v in weights.items()}
        return params

    def fit(self, X, y, progress=None):
        super().fit(X, y, progress)
        self.n_support_ = self._out(self.metadata_["training"]["n_support"])
        return self

    def partial_fit(self, X, y, progress=None):
        """Fits on the first call; then adds the rows X, y to the model
        without a full refit (the server's update by warm-started SMO: its
        next version equals a fit on all the rows so far, to SMO's tol).
        Needs server_params={"keep_rows": True} (else Conflict); y's labels
        must be among classes_ (a new class is Conflict: refit)."""
        self._partial_fit(X, y, progress)
        self.classes_ = self._out(self.metadata_["classes"])
        self.n_support_ = self._out(self.metadata_["training"]["n_support"])
        return self

    def decision_function(self, X):
        """The server's decision values: for 2 classes one per row,
        positive meaning classes_[1]; for k > 2, k(k-1)/2 one-vs-one values
        (decision_function_shape "ovo") or k one-vs-rest ones ("ovr")."""
        dec = self._answer("predict", "predictions", X, {"output": "decision_function"})
        k = len(self.metadata_["classes"])
        if self.decision_function_shape == "ovr" and k > 2:
            dec = [_ovr_row(row, k) for row in dec]
        return self._out(dec)

    predict_proba = _IfProbability(_Classifier.predict_proba)
    predict_log_proba = _IfProbability(_Classifier.predict_log_proba)


def _ovr_row(dec, k):
    """scikit-learn's _ovr_decision_function for one row of one-vs-one
    values (positive: the first class of the pair): votes plus the summed
    confidences mapped monotonically into (-1/3, 1/3)."""
    votes, conf = [0.0] * k, [0.0] * k
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            conf[i] += dec[p]
            conf[j] -= dec[p]
            if dec[p] < 0:
                votes[j] += 1
            else:
                votes[i] += 1
            p += 1
    return [v + c / (3 * (abs(c) + 1)) for v, c in zip(votes, conf)]


class SVR(_Regressor):
    """Epsilon-support vector regression on a kmserve server (algorithm
    svr), with scikit-learn's SVR parameters: C, epsilon, tol, shrinking
    -> params of the same names; cache_size -> params.cache_mb; kernel,
    gamma ("scale" default), degree, coef0 as for SVC. kmserve's own:
    preprocess, max_length, server_params, model_name, keep_model,
    client, as for KernelRidge."""

    _algorithm = "svr"

    def __init__(self, *, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3,
                 C=1.0, epsilon=0.1, shrinking=True, cache_size=200, kernel_params=None,
                 preprocess=None, max_length=None,
                 server_params=None, model_name=None, keep_model=False,
                 client=None):
        _store(self, locals())

    def _params_object(self, X, y):
        params = _svm_params(self)
        params["epsilon"] = self.epsilon
        return params

    def partial_fit(self, X, y, progress=None):
        """Fits on the first call; then adds the rows X, y to the model
        by the server's update (warm-started SMO). Needs
        server_params={"keep_rows": True} (else Conflict)."""
        return self._partial_fit(X, y, progress)


# scikit-learn's eigen_solver names that kmserve spells otherwise.
_EIGEN_SOLVERS = {"arpack": "iterative"}


class KernelPCA(TransformerMixin, _ServerEstimator):
    """Kernel PCA on a kmserve server (algorithm kpca), with
    scikit-learn's KernelPCA parameters: n_components (required by the
    server: None is refused at fit), alpha, fit_inverse_transform ->
    params of the same names; eigen_solver "auto", "dense", "randomized",
    or "arpack" (sent as the server's Krylov solver "iterative"); kernel
    (default "linear"), gamma, degree, coef0 (default 1), kernel_params as
    for KernelRidge. Each eigenvector's sign is fixed as scikit-learn
    fixes it (its entry of largest magnitude positive), so projections
    match scikit-learn's, signs included. transform and
    inverse_transform are the server's project (with inverse); score is
    minus the server's reconstruction error (needs
    fit_inverse_transform). kmserve's own: preprocess, max_length,
    server_params, model_name, keep_model, client, as for KernelRidge."""

    _algorithm = "kpca"

    def __init__(self, n_components=None, *, kernel="linear", gamma=None, degree=3,
                 coef0=1, kernel_params=None, alpha=1.0, fit_inverse_transform=False,
                 eigen_solver="auto", preprocess=None, max_length=None,
                 server_params=None, model_name=None,
                 keep_model=False, client=None):
        _store(self, locals())

    def _params_object(self, X, y):
        if self.n_components is None:
            raise ValueError("n_components is required: kmserve's kpca keeps a fixed "
                             "number of components (1 to n_samples - 1)")
        return {"n_components": self.n_components,
                "fit_inverse_transform": self.fit_inverse_transform, "alpha": self.alpha,
                "eigen_solver": _EIGEN_SOLVERS.get(self.eigen_solver, self.eigen_solver)}

    def fit(self, X, y=None, progress=None):
        self._fit(X, None, progress)
        self.eigenvalues_ = self._out(self.metadata_["training"]["eigenvalues"])
        return self

    def fit_transform(self, X, y=None, progress=None):
        return self.fit(X, progress=progress).transform(X)

    def transform(self, X):
        return self._out(self._answer("project", "projections", X))

    def inverse_transform(self, X):
        return self._out(self._answer("project", "projections", X, {"inverse": True}))

    def score(self, X, y=None):
        """Minus the mean squared reconstruction error on X (higher is
        better), computed by the server."""
        return -self._score_answer(X, None)["reconstruction_error"]


# What scikit-learn's tools should take an algorithm for (is_classifier
# and stratified folds), from what its capabilities say it learns: a
# target of classes, of values, or none (then a clusterer when its
# answer is predict's, as kkmeans's clusters; else neither, as kpca).
_TARGET_TYPES = {"classes": "classifier", "values": "regressor"}


def _estimator_type_of(client, algorithm):
    entry = client.algorithm_capabilities(algorithm)
    if entry is None:
        return None
    kind = _TARGET_TYPES.get(entry.get("target"))
    if kind is None and entry.get("target") == "none":
        routes = {o.get("route") for o in client.capabilities().get("outputs") or ()
                  if algorithm in (o.get("algorithms") or ())}
        kind = "clusterer" if "predict" in routes else None
    return kind


def _set_if(params, key, value):
    """params[key] = value unless value is None (the server's default)."""
    if value is not None:
        params[key] = value
    return params


class GaussianProcessRegressor(_Regressor):
    """Gaussian process regression on a kmserve server (algorithm gpr),
    with scikit-learn's GaussianProcessRegressor parameters where they
    apply: alpha -> params.noise (added to the kernel matrix's diagonal,
    default 1e-10 as scikit-learn's); optimizer "fmin_l_bfgs_b" (default)
    -> params.optimizer "lbfgs" (the server maximises the log marginal
    likelihood over signal_variance, noise and gamma), None -> "none" (the
    kernel as given); n_restarts_optimizer and random_state (an int) ->
    params.n_restarts and params.seed (with the optimizer only);
    normalize_y -> params.normalize_y. The kernel is given as for
    KernelRidge (kernel "rbf" default, gamma, degree, coef0,
    kernel_params), times signal_variance (scikit-learn's ConstantKernel;
    None: the server's default 1).

    predict(X, return_std=False, return_cov=False) answers as
    scikit-learn's: the mean, and (mean, std) or (mean, cov) (the server's
    outputs mean, std, cov; cov in one request for all rows). score is the
    server's r2. kmserve's own: preprocess, max_length, server_params,
    model_name, keep_model, client, as for KernelRidge."""

    _algorithm = "gpr"
    _optimizers = {"fmin_l_bfgs_b": "lbfgs", None: "none"}

    def __init__(self, kernel="rbf", *, alpha=1e-10, optimizer="fmin_l_bfgs_b",
                 n_restarts_optimizer=0, normalize_y=False, random_state=None,
                 gamma=None, degree=3, coef0=1, kernel_params=None, signal_variance=None,
                 preprocess=None, max_length=None,
                 server_params=None, model_name=None, keep_model=False,
                 client=None):
        _store(self, locals())

    def _params_object(self, X, y):
        optimizer = self._optimizers.get(self.optimizer, self.optimizer)
        params = {"noise": self.alpha, "normalize_y": self.normalize_y,
                  "optimizer": optimizer}
        _set_if(params, "signal_variance", self.signal_variance)
        if optimizer != "none":
            params["n_restarts"] = self.n_restarts_optimizer
            _set_if(params, "seed", self.random_state)
        return params

    def fit(self, X, y, progress=None):
        self._fit(X, y, progress)
        self.log_marginal_likelihood_value_ = self.metadata_["training"].get(
            "log_marginal_likelihood")
        return self

    def partial_fit(self, X, y, progress=None):
        """Fits on the first call; then adds the rows X, y to the model
        without a full refit (the server's update of an exact model: its
        next version equals a refit on all the rows so far at the
        hyperparameters of the first fit, which the optimizer does not
        run again)."""
        self._partial_fit(X, y, progress)
        self.log_marginal_likelihood_value_ = self.metadata_["training"].get(
            "log_marginal_likelihood")
        return self

    def predict(self, X, return_std=False, return_cov=False):
        if return_std and return_cov:
            raise RuntimeError("At most one of return_std or return_cov can be requested.")
        mean = self._out(self._answer("predict", "predictions", X, {"output": "mean"}))
        if return_std:
            return mean, self._out(self._answer("predict", "predictions", X,
                                                {"output": "std"}))
        if return_cov:
            return mean, self._out(self._answer("predict", "predictions", X,
                                                {"output": "cov"}, batch_size=0))
        return mean


class KernelLogisticRegression(_Classifier):
    """Kernel logistic regression on a kmserve server (algorithm klr),
    with scikit-learn's LogisticRegression parameters where they apply:
    C -> params.lambda = 1 / C (the penalty's weight); tol, max_iter
    (None: the server's defaults), fit_intercept -> params of the same
    names; multi_class "auto" (default: the server's, multinomial),
    "multinomial" or "ovr" -> params.multi_class. The kernel is given as
    for KernelRidge (kernel "rbf" default, gamma (None: 1/n_features),
    degree, coef0, kernel_params).

    predict gives labels, predict_proba rows of probabilities in classes_
    order, decision_function the server's decision values (two classes:
    one per row, the log-odds of classes_[1], as LogisticRegression's;
    more: one per class). kmserve's own: preprocess, max_length,
    server_params, model_name, keep_model, client, as for KernelRidge."""

    _algorithm = "klr"

    def __init__(self, C=1.0, *, kernel="rbf", gamma=None, degree=3, coef0=1,
                 kernel_params=None, tol=None, max_iter=None, fit_intercept=True,
                 multi_class="auto", preprocess=None, max_length=None,
                 server_params=None, model_name=None,
                 keep_model=False, client=None):
        _store(self, locals())

    def _params_object(self, X, y):
        params = {"lambda": 1.0 / self.C, "fit_intercept": self.fit_intercept}
        _set_if(params, "tol", self.tol)
        _set_if(params, "max_iter", self.max_iter)
        if self.multi_class != "auto":
            params["multi_class"] = self.multi_class
        return params


class KernelKMeans(ClusterMixin, _ServerEstimator):
    """Kernel k-means on a kmserve server (algorithm kkmeans), with
    scikit-learn's KMeans parameters where they apply: n_clusters,
    max_iter, tol -> params of the same names; n_init (None: the server's
    default) -> params.n_init; random_state (an int) -> params.seed. The
    kernel is given as for KernelRidge (kernel "linear" default: k-means
    in input space, as KMeans; gamma, degree, coef0, kernel_params).

    fit sets labels_ (the clusters of the training rows, asked of the
    fitted model), inertia_ and n_iter_; predict gives each row's
    cluster; fit_predict is fit(X).labels_. kmserve's own: preprocess,
    max_length, server_params, model_name, keep_model, client, as for
    KernelRidge."""

    _algorithm = "kkmeans"

    def __init__(self, n_clusters=8, *, kernel="linear", gamma=None, degree=3, coef0=1,
                 kernel_params=None, n_init=None, max_iter=300, tol=1e-4,
                 random_state=None, preprocess=None, max_length=None,
                 server_params=None, model_name=None,
                 keep_model=False, client=None):
        _store(self, locals())

    def _params_object(self, X, y):
        params = {"n_clusters": self.n_clusters, "max_iter": self.max_iter, "tol": self.tol}
        _set_if(params, "n_init", self.n_init)
        return _set_if(params, "seed", self.random_state)

    def fit(self, X, y=None, progress=None):
        self._fit(X, None, progress)
        training = self.metadata_["training"]
        self.inertia_ = training.get("inertia")
        self.n_iter_ = training.get("n_iter")
        self.labels_ = self.predict(X)
        return self

    def fit_predict(self, X, y=None, progress=None):
        return self.fit(X, progress=progress).labels_

    def predict(self, X):
        return self._out(self._answer("predict", "predictions", X))


class KernelModel(_ServerEstimator):
    """Any algorithm the server fits, with the server's own names:
    KernelModel(algorithm="klr", kernel="rbf", gamma=0.5, C=1.0).

    algorithm: the server's name (Client.info()["algorithms"]); kernel: a
    type or a kernel object (dict); gamma, degree, coef0: kernel members,
    sent when not None; kernel_params: more kernel members; every other
    keyword argument is a member of the fit's params object, sent as it
    is (and a parameter for get_params / set_params / GridSearchCV).
    preprocess, max_length, model_name, keep_model, client as for
    KernelRidge (strings and "precomputed" too).

    predict(X, output=None) passes the server's output; decision_function
    and predict_proba ask for the outputs "decision_function" and
    "probability"; transform / inverse_transform are project. score(X, y)
    is the server's score: its r2, else accuracy, else minus
    reconstruction_error, else the first number it holds.
    """

    def __init__(self, algorithm=None, kernel="rbf", *, gamma=None, degree=None,
                 coef0=None, kernel_params=None, preprocess=None, max_length=None,
                 model_name=None,
                 keep_model=False, client=None, **params):
        _store(self, locals())

    server_params = None
    _sklearn_kernels = False

    @property
    def _algorithm(self):
        if not self.algorithm:
            raise ValueError("KernelModel needs algorithm (e.g. 'krr', 'svc', 'klr')")
        return self.algorithm

    @property
    def _estimator_type(self):
        if not self.algorithm:
            return None
        try:
            return _estimator_type_of(self._client(), self.algorithm)
        except (KmserveError, ValueError):
            return None  # a server that cannot say: neither

    def _extra_params(self):
        """The keyword arguments beyond the named ones: the params members
        (public attributes that are not fitted ones, which end in _)."""
        named = set(self._get_param_names())
        return {k: v for k, v in vars(self).items()
                if k not in named and not k.startswith("_") and not k.endswith("_")}

    def get_params(self, deep=True):
        out = super().get_params(deep)
        out.update(self._extra_params())
        return out

    def set_params(self, **params):
        """As BaseEstimator's; a name that is not a constructor argument
        becomes (or replaces) a member of the params object."""
        named = set(self._get_param_names())
        for key in [k for k in params if "__" not in k and k not in named]:
            setattr(self, key, params.pop(key))
        return super().set_params(**params) if params else self

    def _params_object(self, X, y):
        return dict(self._extra_params())

    def fit(self, X, y=None, progress=None):
        self._fit(X, y, progress)
        if "classes" in self.metadata_:
            self.classes_ = self._out(self.metadata_["classes"])
        return self

    def predict(self, X, output=None):
        extra = {} if output is None else {"output": output}
        return self._out(self._answer("predict", "predictions", X, extra))

    def decision_function(self, X):
        return self.predict(X, "decision_function")

    def predict_proba(self, X):
        return self.predict(X, "probability")

    def transform(self, X):
        return self._out(self._answer("project", "projections", X))

    def fit_transform(self, X, y=None, progress=None):
        return self.fit(X, y, progress).transform(X)

    def inverse_transform(self, X):
        return self._out(self._answer("project", "projections", X, {"inverse": True}))

    def score(self, X, y=None):
        scoring = self._score_answer(X, y)
        for key, sign in (("r2", 1), ("accuracy", 1), ("reconstruction_error", -1)):
            if isinstance(scoring.get(key), (int, float)):
                return sign * scoring[key]
        for value in scoring.values():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return value
        raise KmserveError(None, None, f"the server's score holds no number: {scoring!r}")
