"""One exception class per gRPC status code the kernel service answers with.

Every class derives from WardenError, which carries the status code and the server's
message (the same words the `warden` command prints).
"""

import grpc


class WardenError(Exception):
    """A call the kernel service refused or could not complete."""

    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgument(WardenError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(WardenError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(WardenError):
    code = grpc.StatusCode.ALREADY_EXISTS


class FailedPrecondition(WardenError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class ResourceExhausted(WardenError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class DeadlineExceeded(WardenError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Cancelled(WardenError):
    code = grpc.StatusCode.CANCELLED


class Unavailable(WardenError):
    code = grpc.StatusCode.UNAVAILABLE


class Unauthenticated(WardenError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(WardenError):
    code = grpc.StatusCode.PERMISSION_DENIED


class Unimplemented(WardenError):
    code = grpc.StatusCode.UNIMPLEMENTED


class DataLoss(WardenError):
    code = grpc.StatusCode.DATA_LOSS


class Internal(WardenError):
    code = grpc.StatusCode.INTERNAL


class VerificationFailed(WardenError):
    """What the server sent does not hold up: a checkpoint whose fields disagree with its
    signed note, or a note the caller's verifier key did not sign. Raised by the client, not
    a status code: the server is not trusted to say it lied."""


_BY_CODE = {cls.code: cls for cls in WardenError.__subclasses__() if cls.code is not None}


def from_rpc_error(error):
    """The WardenError subclass for a grpc.RpcError (WardenError itself for other codes)."""
    code = error.code()
    cls = _BY_CODE.get(code, WardenError)
    return cls(error.details() or str(code), code)
