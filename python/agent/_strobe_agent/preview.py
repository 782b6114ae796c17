"""preview.py - a Python value as bounded, typed JSON, without running program code.

The rules follow the native ones (dwarf/value.h, docs/PROTOCOL.md "Function
events") where Python has the same thing:

- None, bool, and int within 2**53 are JSON; a larger int is its decimal string.
  float is a number; NaN and the infinities are "NaN", "Infinity", "-Infinity".
- str is the string, cut at max_string characters with "...(truncated)" appended;
  bytes and bytearray are their repr, cut the same way.
- list and tuple are arrays of their first max_array items, then "...(N more)";
  set and frozenset are {"@type": "set", "items": [...]} the same way.
- dict is an object of its first max_array items (keys that are not str are shown
  as their preview in JSON text), then "...": "(N more)".
- Any other object is {"@type": "Cart", "@id": "0x...", attribute: value...}: the
  attributes in its instance __dict__ and __slots__, read without calling
  __getattr__, properties or __repr__ (a preview must not change the program).
  An enum member is "Color.RED"; an exception is {"@type", "message", "args"}; a
  function, class or module is "<function pricing.discount>".
- Depth: each container or object opened is a level; past max_depth an object is
  "<Cart at 0x...>", a container "<list of 3>". An object already open on the
  current path is "<cycle 0x...>".
- Output budget: once about max_output characters were written, the remaining
  items of every open container collapse into "...(N more)".
"""

import enum
import math
import types

MAX_STRING = 256
MAX_ARRAY = 16
MAX_OUTPUT = 8192

_SCALARS = (type(None), bool, int, float, str)
_FUNCS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
          types.BuiltinMethodType)


class _Budget:
    __slots__ = ("left",)

    def __init__(self, n):
        self.left = n


def _cut(s, n):
    if len(s) > n:
        return s[:n] + "...(truncated)"
    return s


def _scalar(v, b):
    t = type(v)
    if v is None or t is bool:
        b.left -= 5
        return v
    if t is int or isinstance(v, int) and not isinstance(v, enum.Enum):
        v = int(v)
        b.left -= 8
        return v if -(2 ** 53) <= v <= 2 ** 53 else str(v)
    if t is float or isinstance(v, float):
        v = float(v)
        b.left -= 12
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    s = _cut(str.__str__(v), MAX_STRING)
    b.left -= len(s) + 2
    return s


def _id(v):
    return "0x%x" % id(v)


def _attrs(v):
    """The instance attributes of v, read without running its code."""
    out = []
    try:
        d = object.__getattribute__(v, "__dict__")
        if type(d) is dict:
            out.extend(d.items())
    except Exception:
        pass
    for klass in type(v).__mro__:
        for name in klass.__dict__.get("__slots__", ()) if isinstance(
                klass.__dict__.get("__slots__", ()), (tuple, list)) else ():
            desc = klass.__dict__.get(name)
            if desc is not None and type(desc).__name__ == "member_descriptor":
                try:
                    out.append((name, desc.__get__(v, type(v))))
                except AttributeError:
                    pass
    return out


def _items(seq, depth, max_depth, path, b):
    out = []
    n = len(seq)
    for i, item in enumerate(seq):
        if i >= MAX_ARRAY or b.left <= 0:
            out.append("...(%d more)" % (n - i))
            break
        out.append(_preview(item, depth, max_depth, path, b))
    return out


def _preview(v, depth, max_depth, path, b):
    t = type(v)
    if t in _SCALARS or (isinstance(v, (int, float, str)) and not isinstance(v, enum.Enum)):
        return _scalar(v, b)
    if isinstance(v, enum.Enum):
        return "%s.%s" % (t.__name__, v.name)
    if t in (bytes, bytearray):
        s = _cut(repr(bytes(v[:MAX_STRING + 1])), MAX_STRING + 3)
        b.left -= len(s)
        return s
    if isinstance(v, _FUNCS) or isinstance(v, type) or t is types.ModuleType:
        name = getattr(v, "__qualname__", None) or getattr(v, "__name__", "?")
        mod = getattr(v, "__module__", None)
        kind = "module" if t is types.ModuleType else "class" if isinstance(v, type) \
            else "function"
        s = "<%s %s%s>" % (kind, mod + "." if mod and kind != "module" else "", name)
        b.left -= len(s)
        return s
    if id(v) in path:
        return "<cycle %s>" % _id(v)
    if depth >= max_depth:
        if isinstance(v, (list, tuple, set, frozenset, dict)):
            return "<%s of %d>" % (t.__name__, len(v))
        return "<%s at %s>" % (t.__name__, _id(v))
    path.add(id(v))
    try:
        b.left -= 2
        if isinstance(v, (list, tuple)):
            return _items(v, depth + 1, max_depth, path, b)
        if isinstance(v, (set, frozenset)):
            return {"@type": t.__name__, "items": _items(list(v), depth + 1, max_depth, path, b)}
        if isinstance(v, dict):
            out = {}
            n = len(v)
            for i, (k, item) in enumerate(list(v.items())):
                if i >= MAX_ARRAY or b.left <= 0:
                    out["..."] = "(%d more)" % (n - i)
                    break
                key = k if type(k) is str else _key(k)
                b.left -= len(key) + 3
                out[key] = _preview(item, depth + 1, max_depth, path, b)
            return out
        if isinstance(v, BaseException):
            return {"@type": t.__name__, "message": _cut(_safe_str(v), MAX_STRING),
                    "args": _items(v.args, depth + 1, max_depth, path, b)}
        out = {"@type": t.__name__, "@id": _id(v)}
        attrs = _attrs(v)
        for i, (k, item) in enumerate(attrs):
            if i >= MAX_ARRAY or b.left <= 0:
                out["..."] = "(%d more)" % (len(attrs) - i)
                break
            b.left -= len(k) + 3
            out[str(k)] = _preview(item, depth + 1, max_depth, path, b)
        return out
    finally:
        path.discard(id(v))


def _key(k):
    if isinstance(k, (int, float, bool, type(None))):
        return repr(k)
    if type(k) is tuple:
        return "(" + ", ".join(_key(x) for x in k[:4]) + (", ..." if len(k) > 4 else "") + ")"
    if isinstance(k, enum.Enum):
        return "%s.%s" % (type(k).__name__, k.name)
    return "<%s at %s>" % (type(k).__name__, _id(k))


def _safe_str(e):
    """An exception's message: str() when its class does not define its own __str__
    (program code), else its args."""
    if type(e).__module__ == "builtins" or type(e).__str__ is BaseException.__str__:
        try:
            return str(e)
        except Exception:
            pass
    return ", ".join(_key(a) if not isinstance(a, str) else a for a in e.args)


def preview(v, max_depth=3, max_output=MAX_OUTPUT):
    """v as a JSON-ready value under the rules above."""
    return _preview(v, 0, max(1, max_depth), set(), _Budget(max_output))


def short(v, limit=40):
    """v in a few characters, for a one-line summary of a call (argsShort):
    scalars as JSON writes them, a string quoted and cut, a container by its size,
    an object by its class."""
    t = type(v)
    if v is None:
        return "None"
    if t is bool or t is int or t is float:
        return repr(v)
    if t is str:
        return repr(v if len(v) <= limit else v[:limit] + "...")
    if isinstance(v, enum.Enum):
        return "%s.%s" % (t.__name__, v.name)
    if isinstance(v, (list, tuple, set, frozenset, dict)):
        return "<%s of %d>" % (t.__name__, len(v))
    return "<%s>" % t.__name__


def exception_summary(e):
    """{"type", "message"} of an exception, as on a function_exit or a crash."""
    t = type(e)
    name = t.__qualname__ if t.__module__ in ("builtins", "__main__") else \
        "%s.%s" % (t.__module__, t.__qualname__)
    return {"type": name, "message": _cut(_safe_str(e), 1024)}
