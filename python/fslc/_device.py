"""The target of the current device, for fslc.load without `target=` (docs/python.md).

A target of the stdlib (stdlib/targets/*.toml) matches a device when its architecture
has the device's compute capability (sm_90a: 9.0) and it has the device's SM count; when
several do (the H100 SXM and the H200 share both), the one whose memory is nearest the
device's. A device no target matches is refused with the list of targets. The device is
the current one: PyTorch's when torch is imported and has CUDA, else the CUDA driver's
(ctypes, libcuda.so.1: the current context's device, else device 0). Without a GPU (no
driver, or the driver reports no device) there is no device, and the load takes the
stdlib's default target: the paths that need no GPU (prepare with `arch=`, specialize)
keep working.
"""

import ctypes
import glob
import os
import re
import sys

from .errors import FslDriverError, FslTargetError

# CUdevice_attribute (cuda.h).
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CUDA_ERROR_NO_DEVICE = 100

GIB = float(1 << 30)


class Device:
    """A GPU as the target choice sees it."""

    def __init__(self, name, major, minor, sm_count, memory_bytes):
        self.name = name
        self.capability = (int(major), int(minor))
        self.sm_count = int(sm_count)
        self.memory_bytes = int(memory_bytes)

    def __repr__(self):
        return "%s (compute capability %d.%d, %d SMs, %.1f GiB)" % (
            self.name, *self.capability, self.sm_count, self.memory_bytes / GIB)


class Target:
    """A target file of the stdlib: the fields the choice reads."""

    def __init__(self, name, arch, sm_count, memory_bytes, description="", path=None):
        self.name = name
        self.arch = arch
        self.capability = capability(arch)
        self.sm_count = int(sm_count)
        self.memory_bytes = int(memory_bytes)
        self.description = description
        self.path = path

    def __repr__(self):
        return "%s (%s, %d SMs, %.1f GiB)" % (self.name, self.arch, self.sm_count, self.memory_bytes / GIB)


def capability(arch):
    """The compute capability of an architecture name: "sm_90a" -> (9, 0),
    "sm_100a" -> (10, 0), "sm_80" -> (8, 0)."""
    match = re.fullmatch(r"sm_(\d+)(\d)[a-z]?", arch)
    if not match:
        raise FslTargetError("'%s' is not an architecture name (sm_<major><minor>, as sm_90a)" % arch)
    return int(match.group(1)), int(match.group(2))


def read_targets(stdlib):
    """The targets of `stdlib`/targets/*.toml, by name."""
    import tomllib  # Python 3.11: only the choice of a target needs it

    directory = os.path.join(stdlib, "targets")
    targets = []
    for path in sorted(glob.glob(os.path.join(directory, "*.toml"))):
        try:
            with open(path, "rb") as file:
                table = tomllib.load(file)
            targets.append(Target(table["name"], table["arch"], table["sm_count"], table["memory_bytes"],
                                  table.get("description", ""), path))
        except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as error:
            raise FslTargetError("%s: cannot read the target (%s: %s)" % (path, type(error).__name__, error))
    if not targets:
        raise FslTargetError("no target files in %s" % directory)
    return targets


def select_target(device, targets):
    """The target of `targets` for `device` (rule above); None when `device` is None."""
    if device is None:
        return None
    matching = [t for t in targets if t.capability == device.capability and t.sm_count == device.sm_count]
    if not matching:
        raise FslTargetError(
            "no target matches the device %r; the targets: %s; pass target= to compile for one of them"
            % (device, ", ".join(repr(t) for t in targets)))
    return min(matching, key=lambda t: (abs(t.memory_bytes - device.memory_bytes), t.name))


def _torch_device():
    """The current device through PyTorch, when torch is imported; None when torch has
    no CUDA device; False when torch is not imported (ask the driver)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    if not torch.cuda.is_available():
        return None
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    return Device(properties.name, properties.major, properties.minor, properties.multi_processor_count,
                  properties.total_memory)


class Driver:
    """The CUDA driver's calls the query needs (libcuda.so.1 through ctypes). None
    from load() when the driver is not installed."""

    PROTOTYPES = {
        "cuInit": [ctypes.c_uint],
        "cuDeviceGetCount": [ctypes.POINTER(ctypes.c_int)],
        "cuCtxGetCurrent": [ctypes.POINTER(ctypes.c_void_p)],
        "cuCtxGetDevice": [ctypes.POINTER(ctypes.c_int)],
        "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
        "cuDeviceGetAttribute": [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int],
        "cuDeviceTotalMem_v2": [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int],
        "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
        "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
    }

    def __init__(self, handle):
        for name, argtypes in self.PROTOTYPES.items():
            function = getattr(handle, name)
            function.restype = ctypes.c_int
            function.argtypes = argtypes
            setattr(self, name, function)

    @classmethod
    def load(cls):
        try:
            return cls(ctypes.CDLL("libcuda.so.1"))
        except OSError:
            return None


def driver_device(driver):
    """The current device through the CUDA driver: the current context's device, else
    device 0. None without a driver or a device; FslDriverError when the driver fails."""
    if driver is None:
        return None

    def check(status, call):
        if status != 0:
            name = ctypes.c_char_p()
            known = driver.cuGetErrorName(status, ctypes.byref(name)) == 0 and name.value
            raise FslDriverError("%s failed: %s (%d), while choosing the target of the device; "
                                 "pass target= to choose it" % (call, known.decode() if known else "error", status))

    status = driver.cuInit(0)
    if status == CUDA_ERROR_NO_DEVICE:
        return None
    check(status, "cuInit")
    count = ctypes.c_int()
    check(driver.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    if count.value == 0:
        return None
    context = ctypes.c_void_p()
    check(driver.cuCtxGetCurrent(ctypes.byref(context)), "cuCtxGetCurrent")
    device = ctypes.c_int()
    if context.value:
        check(driver.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
    else:
        check(driver.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    values = {}
    for attribute in (CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                      CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT):
        value = ctypes.c_int()
        check(driver.cuDeviceGetAttribute(ctypes.byref(value), attribute, device.value), "cuDeviceGetAttribute")
        values[attribute] = value.value
    memory = ctypes.c_size_t()
    check(driver.cuDeviceTotalMem_v2(ctypes.byref(memory), device.value), "cuDeviceTotalMem")
    name = ctypes.create_string_buffer(256)
    check(driver.cuDeviceGetName(name, len(name), device.value), "cuDeviceGetName")
    return Device(name.value.decode(errors="replace"), values[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR],
                  values[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR],
                  values[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT], memory.value)


def current_device():
    """The current device (PyTorch's when torch is imported, else the driver's), or
    None without a GPU."""
    device = _torch_device()
    if device is not False:
        return device
    return driver_device(Driver.load())


def device_target(stdlib, device=None):
    """The name of the target for `device` (default: the current device) among
    `stdlib`'s targets, or None when there is no GPU."""
    device = current_device() if device is None else device
    if device is None:
        return None
    if stdlib is None:
        raise FslTargetError("no stdlib to read the targets from, to match the device %r; "
                             "pass stdlib= or target=" % (device,))
    return select_target(device, read_targets(stdlib)).name
