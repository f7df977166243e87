"""fslc: FSL fusions from Python, through libfsl.so's C API (ctypes) and the specializing
JIT; with PyTorch, each fusion is a torch.library custom op (docs/python.md).

    import fslc
    prog = fslc.load("stdlib/std/norms.fsl")
    y = prog.rms_norm_add(x, residual, weight)   # residual updated in place

Importing this package does not import torch; loading a program registers its fusions
as custom ops when torch can be imported.
"""

from ._capi import DTYPES, descriptor, load_library
from ._device import Device, Target, current_device, device_target, read_targets, select_target
from ._ops.build import status as op_extension_status
from ._program import Fusion, Program, Signature, load, load_text
from .errors import (
    FslAlignmentError,
    FslArgumentError,
    FslCacheError,
    FslCaptureError,
    FslCompileError,
    FslDeviceError,
    FslDriverError,
    FslDtypeError,
    FslError,
    FslExtensionError,
    FslLaunchError,
    FslLayoutError,
    FslLibraryError,
    FslNullPointerError,
    FslOverlapError,
    FslRankError,
    FslSizeError,
    FslTargetError,
)

__all__ = [
    "DTYPES", "descriptor", "load_library", "Device", "Target", "current_device", "device_target",
    "read_targets", "select_target", "op_extension_status", "Fusion", "Program", "Signature", "load",
    "load_text", "FslAlignmentError", "FslArgumentError", "FslCacheError", "FslCaptureError",
    "FslCompileError", "FslDeviceError", "FslDriverError", "FslDtypeError", "FslError", "FslExtensionError",
    "FslLaunchError", "FslLayoutError", "FslLibraryError", "FslNullPointerError",
    "FslOverlapError", "FslRankError", "FslSizeError", "FslTargetError",
]
