"""The shared library and every ctypes declaration of the package, in one place.

Everything that mirrors include/vkbert.h lives here (structs, enums, prototypes), so that a
change of the C API is a change of this file only. Opaque handles are c_void_p.

ctypes.CDLL (unlike PyDLL) releases the GIL for the whole of every foreign call, so a long
embed or forward on one thread lets the others run; calls on separate contexts run in
parallel in the library too (vkbert.h, "Threads").
"""

import ctypes
import ctypes.util
import glob
import os
import sys
import sysconfig

from ctypes import POINTER, c_char, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t
from ctypes import c_uint32, c_uint64, c_void_p


# ---------------------------------------------------------------- finding the library ----


def _names():
    if sys.platform == "win32":
        return ["vkbert.dll"]
    if sys.platform == "darwin":
        return ["libvkbert.dylib"]
    return ["libvkbert.so"]


def _directories():
    """Where an install puts the library: beside the package (a copy), then the prefixes."""
    here = os.path.dirname(os.path.abspath(__file__))
    libs = ["lib", "lib64"]
    multiarch = sysconfig.get_config_var("MULTIARCH")  # Debian's GNUInstallDirs with /usr
    if multiarch:
        libs.append(os.path.join("lib", multiarch))
    prefixes = [sys.prefix, "/usr/local", sys.base_prefix, "/usr"]
    seen, out = set(), [here]
    for prefix in prefixes:
        for lib in libs:
            path = os.path.join(prefix, lib)
            if path not in seen:
                seen.add(path)
                out.append(path)
    return out


def _candidates():
    for directory in _directories():
        for name in _names():
            yield os.path.join(directory, name)
            # A runtime-only install has the versioned file without the plain name.
            yield from sorted(glob.glob(os.path.join(directory, name + ".*")))


def _load():
    """VKBERT_LIBRARY (a path) when set, and only it; else the install prefixes, else the
    system's search (ctypes.util.find_library)."""
    given = os.environ.get("VKBERT_LIBRARY")
    if given:
        try:
            return ctypes.CDLL(given)
        except OSError as e:
            raise ImportError(f"vkbert: VKBERT_LIBRARY={given} cannot be loaded: {e}") from e
    tried = []
    for path in _candidates():
        if not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
    found = ctypes.util.find_library("vkbert")
    if found:
        try:
            return ctypes.CDLL(found)
        except OSError as e:
            tried.append(f"{found} ({e})")
    tried.append('ctypes.util.find_library("vkbert")')
    raise ImportError(
        "vkbert: libvkbert was not found; set VKBERT_LIBRARY to its path (for a build tree, "
        "build/libvkbert.so) or install it (cmake --install). Tried: " + ", ".join(tried)
    )


lib = _load()


# ---------------------------------------------------------------- structs and enums ----

STATUS_NOT_READY = 10  # not an error (vkbert_job_poll)

PRECISIONS = {"fp32": 0, "fp16": 1, "int8": 2}

DTYPE_FLOAT32, DTYPE_BOOL, DTYPE_UINT8, DTYPE_INT32, DTYPE_INT64 = 0, 1, 2, 3, 4

MAX_DIMS = 4


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),  # set by new(), as the header's _INIT macros do
        ("name", c_char * 256),
        ("driver", c_char * 256),
        ("type", c_int),
        ("vendor_id", c_uint32),
        ("device_id", c_uint32),
        ("api_version", c_uint32),
        ("device_local_bytes", c_uint64),
        ("subgroup_size", c_uint32),
        ("shared_memory_bytes", c_uint32),
        ("max_storage_buffer_range", c_uint32),
        ("max_storage_buffers", c_uint32),
        ("max_workgroup_invocations", c_uint32),
        ("fp16_storage", c_int),
        ("fp16_arithmetic", c_int),
        ("usable", c_int),
        ("subgroup_size_control", c_int),
        ("min_subgroup_size", c_uint32),
        ("max_subgroup_size", c_uint32),
    ]


class ContextOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),  # set by new(), as the header's _INIT macros do
        ("device", c_char_p),
        ("validation", c_int),
        ("timestamps", c_int),
        ("limits", c_char_p),
        ("timeout_ms", c_uint32),
        ("cache_dir", c_char_p),
    ]


class AttentionWeights(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32)] + [
        (name, POINTER(c_float))
        for name in (
            "q_weight", "q_bias", "k_weight", "k_bias",
            "v_weight", "v_bias", "out_weight", "out_bias",
        )
    ]


class Mask(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),  # set by new(), as the header's _INIT macros do
        ("data", c_void_p),
        ("dtype", c_int),
        ("ndim", c_int),
        ("shape", c_int64 * MAX_DIMS),
    ]


class AttentionOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),  # set by new(), as the header's _INIT macros do
        ("causal", c_int),
        ("dropout", c_float),
        ("seed", c_uint64),
        ("additive_mask", c_int),
    ]


class AttentionConfig(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("precision", c_int)]


class ModelConfig(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),  # set by new(), as the header's _INIT macros do
        ("precision", c_int),
        ("pooling", c_char_p),
        ("normalize", c_int),
        ("max_length", c_int),
        ("no_truncate", c_int),
    ]


class EmbedOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),  # set by new(), as the header's _INIT macros do
        ("prompt_name", c_char_p),
        ("prompt", c_char_p),
        ("normalize", c_int),  # 0: the model's; 1 always; -1 never
    ]


class TimeSplit(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),  # set by new(), as the header's _INIT macros do
        ("load_ms", ctypes.c_double),
        ("tokenize_ms", ctypes.c_double),
        ("prepare_ms", ctypes.c_double),
        ("wait_ms", ctypes.c_double),
        ("read_ms", ctypes.c_double),
        ("gpu_ms", ctypes.c_double),
        ("passes", ctypes.c_uint64),
    ]


class Encoding(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),  # set by new(), as the header's _INIT macros do
        ("ids", POINTER(c_int32)),
        ("type_ids", POINTER(c_int32)),
        ("count", c_int),
        ("prompt_tokens", c_int),
        ("full_count", c_int),
        ("special_tokens_mask", POINTER(c_int32)),
        ("offsets", POINTER(c_int32)),  # [2 * count]: (start, stop) in characters
        ("attention_mask", POINTER(c_int32)),
    ]


def new(struct, **fields):
    """A struct with every field zero (the library's defaults) but those given; a growable
    struct (a first field struct_size) gets its size, as the header's _INIT macros do."""
    s = struct()
    if struct._fields_[0][0] == "struct_size":
        s.struct_size = ctypes.sizeof(struct)
    for name, value in fields.items():
        setattr(s, name, value)
    return s


# ---------------------------------------------------------------- prototypes ----

_status = c_int
_handle = c_void_p
_out = POINTER(c_void_p)


def _declare(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_declare("vkbert_status_name", c_char_p, _status)
_declare("vkbert_last_error", c_char_p, _handle)
_declare("vkbert_device_type_name", c_char_p, c_int)
_declare("vkbert_list_devices", _status, POINTER(DeviceInfo), c_uint32, POINTER(c_uint32))
_declare("vkbert_context_create", _status, POINTER(ContextOptions), _out)
_declare("vkbert_context_destroy", None, _handle)
_declare("vkbert_context_device", _status, _handle, POINTER(DeviceInfo))
_declare("vkbert_validation_messages", c_uint32, _handle, c_char_p, c_size_t)

attention_create = _declare(
    "vkbert_attention_create", _status, _handle, c_int, c_int,
    POINTER(AttentionWeights), POINTER(AttentionConfig), _out,
)
_declare("vkbert_attention_destroy", None, _handle)
_declare(
    "vkbert_attention_forward_host", _status, _handle, c_int, c_int, POINTER(c_float),
    POINTER(Mask), POINTER(AttentionOptions), POINTER(c_float),
)

_declare("vkbert_model_load", _status, _handle, c_char_p, POINTER(ModelConfig), _out)
_declare("vkbert_model_destroy", None, _handle)
_declare("vkbert_model_dimension", c_int, _handle)
_declare("vkbert_model_tokenizer", _handle, _handle)
_declare("vkbert_model_labels", c_int, _handle)
_declare("vkbert_model_label", c_char_p, _handle, c_int)
_declare(
    "vkbert_model_embed", _status, _handle, POINTER(c_char_p), c_int, POINTER(EmbedOptions),
    POINTER(c_float),
)
_declare(
    "vkbert_model_rerank", _status, _handle, c_char_p, POINTER(c_char_p), c_int, c_int,
    POINTER(c_float),
)
_declare("vkbert_model_classify", _status, _handle, POINTER(c_char_p), c_int, POINTER(c_float))
_declare("vkbert_model_time_split", _status, _handle, POINTER(TimeSplit))
_declare("vkbert_tokenizer_load", _status, c_char_p, _out)
_declare("vkbert_tokenizer_destroy", None, _handle)
_declare("vkbert_tokenizer_max_length", c_int, _handle)
_declare("vkbert_tokenizer_encode", _status, _handle, c_char_p, c_char_p, c_int, POINTER(Encoding))
_declare("vkbert_encoding_free", None, POINTER(Encoding))
_declare(
    "vkbert_tokenizer_decode", _status, _handle, POINTER(c_int32), c_int, c_int,
    POINTER(c_void_p),
)
_declare("vkbert_tokenizer_token", c_char_p, _handle, c_int32)
_declare("vkbert_tokenizer_token_id", c_int32, _handle, c_char_p)
_declare("vkbert_free", None, c_void_p)

TOKENIZER_FILE_RULES = -2  # VKBERT_TOKENIZER_FILE_RULES

version_string = _declare("vkbert_version_string", c_char_p)
version_number = _declare("vkbert_version", ctypes.c_uint)

# The structs above are 0.4's: a library of another minor version (before 1.0) may differ.
ABI = (0, 4)
if (version_number() // 10000, version_number() // 100 % 100) != ABI:
    raise ImportError(
        f"{lib._name} is vkbert {version_string().decode()}; this package needs {ABI[0]}.{ABI[1]}.x"
    )


# ---------------------------------------------------------------- errors ----


class Error(RuntimeError):
    """A failed library call: `status` is the status's name ("VKBERT_ERROR_DEVICE_LIMIT"),
    `code` its number, `message` the library's message (vkbert_last_error)."""

    def __init__(self, code, message):
        self.code = code
        self.status = lib.vkbert_status_name(code).decode()
        self.message = message
        super().__init__(f"{self.status}: {message}")


def check(status, ctx=None):
    """Raises Error for a failed status, with the message of the context (None: this thread's
    message of a call without a context)."""
    if status != 0:
        raise Error(status, lib.vkbert_last_error(ctx).decode("utf-8", "replace"))
