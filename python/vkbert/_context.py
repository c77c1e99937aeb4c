"""Devices, contexts, and the lifetime rule every handle follows."""

import ctypes
import os
import weakref

from . import _lib
from ._lib import lib


def _device_dict(index, info):
    v = info.api_version
    return {
        "index": index,
        "name": info.name.decode("utf-8", "replace"),
        "driver": info.driver.decode("utf-8", "replace"),
        "type": lib.vkbert_device_type_name(info.type).decode(),
        "vendor_id": info.vendor_id,
        "device_id": info.device_id,
        # VK_API_VERSION_MAJOR/MINOR/PATCH of the packed number
        "api_version": f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}",
        "device_local_bytes": info.device_local_bytes,
        "subgroup_size": info.subgroup_size,
        "shared_memory_bytes": info.shared_memory_bytes,
        "max_storage_buffer_range": info.max_storage_buffer_range,
        "max_storage_buffers": info.max_storage_buffers,
        "max_workgroup_invocations": info.max_workgroup_invocations,
        "fp16_storage": bool(info.fp16_storage),
        "fp16_arithmetic": bool(info.fp16_arithmetic),
        "usable": bool(info.usable),
    }


def devices():
    """The Vulkan devices, as dicts (vkbert_device_info's fields, "type" by name, and the
    "index" that device= takes)."""
    count = ctypes.c_uint32()
    _lib.check(lib.vkbert_list_devices(None, 0, ctypes.byref(count)))
    infos = (_lib.DeviceInfo * count.value)(*[_lib.new(_lib.DeviceInfo)] * count.value)
    _lib.check(lib.vkbert_list_devices(infos, count.value, ctypes.byref(count)))
    return [_device_dict(i, info) for i, info in enumerate(infos[: count.value])]


def version():
    """The library's version string, such as "0.4.0"."""
    return _lib.version_string().decode()


class Handle:
    """A library object freed exactly once: by close(), by leaving a `with` block, or by the
    finalizer when the object is collected (or at exit, newest first). `_own(h, destroy,
    *keep)` registers it; `keep` are objects that must outlive it (its context)."""

    _finalizer = None
    _handle = None

    def _own(self, handle, destroy, *keep):
        self._handle = handle
        self._finalizer = weakref.finalize(self, _release, destroy, handle, keep)

    @property
    def closed(self):
        return self._finalizer is None or not self._finalizer.alive

    def _live(self):
        if self.closed:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._handle

    def close(self):
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _release(destroy, handle, keep):
    # The finalizer holds `keep` (the context) until this call is done, so the context is
    # destroyed after what was made on it, never before.
    destroy(handle)


class Context(Handle):
    """A device, its memory and pipelines. `device`: a decimal index or a substring of the
    name (None: the environment variable VKBERT_DEVICE, else the best device). `cache_dir`:
    the folder of the on-disk caches (compiled pipelines, tuning results), "off" for none
    (None: the environment variable VKBERT_CACHE_DIR, else the user's cache folder). Models
    and layers made on one context run one call at a time; give each thread its own (the
    default: each Model or Attention makes its own) to run them in parallel. Closing a
    context closes what was made on it first."""

    def __init__(self, device=None, cache_dir=None):
        if device is not None and not isinstance(device, (str, int)):
            raise TypeError(f"device must be an index or a name, not {type(device).__name__}")
        if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
            raise TypeError(f"cache_dir must be a path or None, not {type(cache_dir).__name__}")
        name = None if device is None else os.fsencode(str(device))
        cache = None if cache_dir is None else os.fsencode(cache_dir)
        options = _lib.new(_lib.ContextOptions, device=name, cache_dir=cache)
        out = ctypes.c_void_p()
        _lib.check(lib.vkbert_context_create(ctypes.byref(options), ctypes.byref(out)))
        self._children = weakref.WeakSet()
        self._own(out.value, lib.vkbert_context_destroy)

    def _adopt(self, child):
        self._children.add(child)

    def close(self):
        children, self._children = list(self._children), weakref.WeakSet()
        for child in children:
            child.close()
        super().close()

    @property
    def device(self):
        """The device the context runs on, as a devices() entry (index -1: not looked up)."""
        info = _lib.new(_lib.DeviceInfo)
        handle = self._live()
        _lib.check(lib.vkbert_context_device(handle, ctypes.byref(info)), handle)
        return _device_dict(-1, info)


def _context_for(device, context):
    """The context a Model or Attention runs on, and whether it owns it."""
    if context is None:
        return Context(device), True
    if not isinstance(context, Context):
        raise TypeError(f"context must be a vkbert.Context, not {type(context).__name__}")
    if device is not None:
        raise ValueError("give device or context, not both")
    context._live()
    return context, False


class Made(Handle):
    """An object made on a context: a shared one, or one of its own made on `device` and
    closed with it."""

    _owns_context = False

    def _create(self, device, context, create, destroy):
        """create(ctx, out) makes the object into the c_void_p `out` and returns a status."""
        self._context, owned = _context_for(device, context)
        ctx = self._context._handle
        out = ctypes.c_void_p()
        try:
            _lib.check(create(ctx, ctypes.byref(out)), ctx)
        except BaseException:
            if owned:
                self._context.close()
            raise
        self._own(out.value, destroy, self._context)
        self._owns_context = owned
        self._context._adopt(self)

    def _call(self, function, *args):
        """function(handle, *args), raising Error with the context's message."""
        _lib.check(function(self._live(), *args), self._context._handle)

    def close(self):
        super().close()
        if self._owns_context:
            self._context.close()
