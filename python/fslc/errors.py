"""The exceptions of the fslc package.

Every error of the C API comes back as an FslError subclass chosen by its status
(fsl/runtime.h), carrying the C API's message; each also derives from the built-in
exception a Python caller would expect (TypeError for a wrong dtype, ValueError for wrong
sizes or layouts, RuntimeError for compile and launch failures).
"""


class FslError(Exception):
    """An error of the FSL C API or of this package's checks.

    ``status`` is the C API's fsl_status (an int) or None for checks this package makes
    itself (devices, CUDA-graph capture); ``message`` is the C API's message."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        self.status = status


class FslNullPointerError(FslError, ValueError):
    """FSL_ERROR_NULL_POINTER: a null descriptor or data pointer."""


class FslDtypeError(FslError, TypeError):
    """FSL_ERROR_DTYPE: another element type than the fusion declares."""


class FslRankError(FslError, ValueError):
    """FSL_ERROR_RANK: another number of dimensions."""


class FslSizeError(FslError, ValueError):
    """FSL_ERROR_SIZE: sizes that disagree, a static dimension of the wrong size, a
    launch beyond the target's limits."""


class FslLayoutError(FslError, ValueError):
    """FSL_ERROR_LAYOUT: strides that are not contiguous row-major."""


class FslAlignmentError(FslError, ValueError):
    """FSL_ERROR_ALIGNMENT: a data pointer not aligned to the kernel's accesses."""


class FslOverlapError(FslError, ValueError):
    """FSL_ERROR_OVERLAP: an output overlapping another tensor."""


class FslLaunchError(FslError, RuntimeError):
    """FSL_ERROR_LAUNCH: the launch itself failed."""


class FslCompileError(FslError, RuntimeError):
    """FSL_ERROR_COMPILE: the .fsl file has errors, or a specialization does not compile
    (a matmul at a K whose rows TMA cannot step), or needs what the JIT cannot launch yet."""


class FslCacheError(FslError, RuntimeError):
    """FSL_ERROR_CACHE: the JIT's on-disk cache could not be read or written."""


class FslDriverError(FslError, RuntimeError):
    """FSL_ERROR_DRIVER: the CUDA driver, a context or the device's architecture."""


class FslArgumentError(FslError, ValueError):
    """FSL_ERROR_ARGUMENT: an unknown fusion or dimension, a wrong number of tensors or
    scalars, a scalar its type cannot hold, bad options (runtime_dims, policy)."""


class FslDeviceError(FslError, ValueError):
    """A tensor that is not a CUDA tensor, or tensors on different devices."""


class FslCaptureError(FslError, RuntimeError):
    """A call inside CUDA-graph capture whose kernels were never launched on this device
    at these sizes: make one call before capturing (docs/python.md)."""


class FslTargetError(FslError, RuntimeError):
    """No target given and none of the stdlib's targets matches the current device (or
    the targets cannot be read): pass target= (docs/python.md)."""


class FslLibraryError(FslError, RuntimeError):
    """libfsl.so could not be found or loaded."""


class FslExtensionError(FslError, RuntimeError):
    """The compiled op path was asked for (FSLC_OPS=compiled, ops="compiled") and cannot be
    built or loaded: the message names why, with the compiler's command and output."""


# fsl_status (fsl/runtime.h) -> exception class.
STATUS_ERRORS = {
    1: FslNullPointerError,
    2: FslDtypeError,
    3: FslRankError,
    4: FslSizeError,
    5: FslLayoutError,
    6: FslAlignmentError,
    7: FslOverlapError,
    8: FslLaunchError,
    9: FslCompileError,
    10: FslCacheError,
    11: FslDriverError,
    12: FslArgumentError,
}

STATUS_NAMES = {
    0: "FSL_OK",
    1: "FSL_ERROR_NULL_POINTER",
    2: "FSL_ERROR_DTYPE",
    3: "FSL_ERROR_RANK",
    4: "FSL_ERROR_SIZE",
    5: "FSL_ERROR_LAYOUT",
    6: "FSL_ERROR_ALIGNMENT",
    7: "FSL_ERROR_OVERLAP",
    8: "FSL_ERROR_LAUNCH",
    9: "FSL_ERROR_COMPILE",
    10: "FSL_ERROR_CACHE",
    11: "FSL_ERROR_DRIVER",
    12: "FSL_ERROR_ARGUMENT",
}


# The exceptions the compiled op path's kernel (fslc/_ops/ext.cpp) raises by name, as
# "<class>: <message>" in a built-in exception: every class above but the ones of loading.
OP_ERRORS = {cls.__name__: cls for cls in list(STATUS_ERRORS.values()) + [
    FslError, FslDeviceError, FslCaptureError]}
STATUS_OF = {cls: status for status, cls in STATUS_ERRORS.items()}


def op_error(error):
    """The fslc exception of an exception the compiled op path raised ("FslSizeError:
    residual: size 9 ..." in a ValueError), or None for any other exception."""
    if isinstance(error, FslError):
        return None
    text = str(error)
    name, colon, message = text.partition(": ")
    cls = OP_ERRORS.get(name) if colon else None
    if cls is None:
        return None
    return cls(message, STATUS_OF.get(cls))


def error_for(status, message):
    """The exception for a C API status and its message."""
    cls = STATUS_ERRORS.get(status, FslError)
    return cls(message, status)
