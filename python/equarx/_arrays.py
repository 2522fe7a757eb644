"""equarx internals: checking numpy arrays and handing them to the native module as bytes.

The native module sees only flat C-contiguous uint8 views plus a dtype name ("f32", "bf16",
"f16"); every dtype, layout and shape check happens here so the messages name the argument.
"""

import numpy as np

from .errors import DTypeError, LayoutError

try:
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    BFLOAT16 = None

_NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
_ALIASES = {"f32": "float32", "fp32": "float32", "f16": "float16", "fp16": "float16",
            "half": "float16", "bf16": "bfloat16"}


def to_dtype(dtype):
    """A numpy dtype (float32, float16 or bfloat16) from a dtype, a type or a name."""
    if isinstance(dtype, str):
        dtype = _ALIASES.get(dtype, dtype)
        if dtype == "bfloat16":
            if BFLOAT16 is None:
                raise DTypeError("bfloat16 needs the ml_dtypes package")
            return BFLOAT16
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise DTypeError(f"not a dtype: {dtype!r}") from e
    if dt.name not in _NAMES:
        raise DTypeError(f"unsupported dtype {dt.name} (equarx takes float32, bfloat16, float16)")
    return dt


def dtype_code(dt):
    """The library's name of a supported numpy dtype."""
    return _NAMES[to_dtype(dt).name]


def check_array(a, what="array"):
    """Checks that `a` is a C-contiguous numpy array of a supported dtype; returns its dtype."""
    if not isinstance(a, np.ndarray):
        raise LayoutError(f"{what} must be a numpy.ndarray, got {type(a).__name__}")
    if a.dtype.name not in _NAMES:
        raise DTypeError(f"{what} has dtype {a.dtype.name}; equarx takes float32, bfloat16 or float16")
    if not a.flags.c_contiguous:
        raise LayoutError(f"{what} is not C-contiguous (pass numpy.ascontiguousarray({what}))")
    return a.dtype


def in_bytes(a):
    """Flat read-only uint8 view of a checked array."""
    return a.reshape(-1).view(np.uint8)


def out_bytes(a, what="output"):
    """Flat writable uint8 view of a checked array."""
    if not a.flags.writeable:
        raise LayoutError(f"{what} is read-only")
    return a.reshape(-1).view(np.uint8)
