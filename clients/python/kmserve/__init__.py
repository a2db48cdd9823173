"""kmserve - the Python client of kmserve, a network service for kernel
methods.

    from kmserve import Client
    c = Client("http://127.0.0.1:8080")
    c.fit("demo", X, y, algorithm="krr", kernel={"type": "rbf", "gamma": 0.5})
    c.predict("demo", X)

Client covers the HTTP API (kmserve.client); KernelRidge, SVC, SVR,
KernelPCA, GaussianProcessRegressor, KernelLogisticRegression,
KernelKMeans and KernelModel are scikit-learn style estimators that fit
and predict on the server (kmserve.estimators); errors are KmserveError
subclasses (kmserve.errors). Standard library only; numpy and
scikit-learn are used when installed. See README.md beside this package.
"""
from .client import Client, Job
from .errors import (BadRequest, Conflict, InsufficientStorage, Internal, InvalidArgument,
                     InvalidJSON, KmserveConnectionError, KmserveError, LengthRequired,
                     MethodNotAllowed, NotFound, PayloadTooLarge, PermissionDenied,
                     StaleModel, TooManyRequests, Unauthenticated, Unavailable,
                     Unprocessable, UnsupportedMediaType)
from .estimators import (SVC, SVR, GaussianProcessRegressor, KernelKMeans,
                         KernelLogisticRegression, KernelModel, KernelPCA, KernelRidge,
                         default_client, set_default_client)

__version__ = "0.1.0"

__all__ = [
    "Client", "Job", "KernelRidge", "SVC", "SVR", "KernelPCA", "GaussianProcessRegressor",
    "KernelLogisticRegression", "KernelKMeans", "KernelModel",
    "default_client", "set_default_client", "KmserveError", "KmserveConnectionError",
    "InvalidJSON", "InvalidArgument", "BadRequest", "Unauthenticated", "PermissionDenied",
    "NotFound", "MethodNotAllowed", "Conflict", "LengthRequired", "PayloadTooLarge",
    "UnsupportedMediaType", "Unprocessable", "TooManyRequests", "Internal", "Unavailable",
    "InsufficientStorage", "StaleModel",
]
