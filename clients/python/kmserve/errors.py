"""kmserve.errors - the exceptions the client raises.

Every error answer of the server ({"error": {"code", "message"}}) becomes
the KmserveError subclass of its code, carrying the HTTP status, the code
and the server's message unchanged (it names the field: "kernel.gamma must
be a finite number > 0"). A failed or cancelled job raises the class of
its error's code too, with the job attached. A server that cannot be
reached raises KmserveConnectionError.

Thread-safety: the module holds only constant tables.
"""


class KmserveError(Exception):
    """An error answer of the server (or of a job).

    status: the HTTP status (400, 404, ...); for a job's error, the status
        a synchronous fit would have answered; None when there was no
        answer (KmserveConnectionError).
    code: the server's stable code ("invalid_argument", ...), or None.
    message: the server's message as it wrote it, naming the field.
    request_id: the X-Request-Id of the answer, if any (find it in the
        server's access log).
    job: for a failed or cancelled job, the Job; else None.
    """

    def __init__(self, status, code, message, request_id=None, job=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.job = job

    def __str__(self):
        head = " ".join(str(p) for p in (self.status, self.code) if p is not None)
        return f"{head}: {self.message}" if head else self.message


class InvalidJSON(KmserveError):
    """400 invalid_json: the body is not one JSON value."""


class InvalidArgument(KmserveError, ValueError):
    """400 invalid_argument: a member is missing, unknown, mistyped or out
    of range (the message names it)."""


class BadRequest(KmserveError):
    """400 bad_request: the HTTP request's framing is ambiguous."""


class Unauthenticated(KmserveError):
    """401 unauthenticated: no bearer token, or one the server does not know."""


class PermissionDenied(KmserveError):
    """403 permission_denied: the token's scope does not allow this."""


class NotFound(KmserveError, LookupError):
    """404 not_found: no such route, model or job."""


class MethodNotAllowed(KmserveError):
    """405 method_not_allowed."""


class Conflict(KmserveError):
    """409 conflict: the request does not apply to the model or job as it
    is (probability not fitted, a cancelled fit, a finished job)."""


class LengthRequired(KmserveError):
    """411 length_required."""


class PayloadTooLarge(KmserveError):
    """413 payload_too_large: over the body limit or the memory budget."""


class UnsupportedMediaType(KmserveError):
    """415 unsupported_media_type."""


class Unprocessable(KmserveError):
    """422 unprocessable: valid input, but the problem cannot be solved."""


class TooManyRequests(KmserveError):
    """429 too_many_requests: the fit queue or the job table is full."""


class Internal(KmserveError):
    """500 internal: a fault of the server."""


class Unavailable(KmserveError):
    """503 unavailable: loading, draining or shutting down."""


class InsufficientStorage(KmserveError):
    """507 insufficient_storage: the model file could not be written or
    removed."""


class KmserveConnectionError(KmserveError, ConnectionError):
    """The server could not be reached, the connection broke before an
    answer, or TLS failed (status and code are None)."""


class StaleModel(KmserveError):
    """An estimator's model was refitted under it: the server answered
    with another version than the one the estimator fitted."""


# code -> (class, HTTP status): the server's table (api/api_error.h).
_CODES = {
    "invalid_json": (InvalidJSON, 400),
    "invalid_argument": (InvalidArgument, 400),
    "bad_request": (BadRequest, 400),
    "unauthenticated": (Unauthenticated, 401),
    "permission_denied": (PermissionDenied, 403),
    "not_found": (NotFound, 404),
    "method_not_allowed": (MethodNotAllowed, 405),
    "conflict": (Conflict, 409),
    "length_required": (LengthRequired, 411),
    "payload_too_large": (PayloadTooLarge, 413),
    "unsupported_media_type": (UnsupportedMediaType, 415),
    "unprocessable": (Unprocessable, 422),
    "too_many_requests": (TooManyRequests, 429),
    "internal": (Internal, 500),
    "unavailable": (Unavailable, 503),
    "insufficient_storage": (InsufficientStorage, 507),
}
_BY_STATUS = {}
for _cls, _status in _CODES.values():
    _BY_STATUS.setdefault(_status, _cls)


def error_for(status, code, message, request_id=None, job=None):
    """The exception for an error: by code, else by HTTP status, else
    KmserveError itself. status None: the status the code maps to."""
    cls, code_status = _CODES.get(code, (None, None))
    if status is None:
        status = code_status
    if cls is None:
        cls = _BY_STATUS.get(status, KmserveError)
    return cls(status, code, message, request_id, job)
