"""stacks.py - every Python thread's stack now, and what it waits for.

The "stacks" command answers, for each thread of the interpreter (the agent's own
are marked "agent": true, and nothing else, so the engine leaves them out): tid (the kernel's), name, frames innermost first ({function, file, line}: the
names patterns use), ownFrame (the innermost frame of the project's own code, -1:
none), that frame's locals as previews when asked, and wait: what the thread is
blocked on, when its innermost frame shows it:

- a lock: the frame is on a `with X:` statement or an `X.acquire(...)` call and X
  (a name or an attribute path, looked up without running code) is a threading
  Lock or RLock; the lock is {kind: "lock", variable: "X", id}. Its holder is the
  thread that is inside a `with X:` body of the same lock (a Lock keeps no owner:
  this is read from the source), or an RLock's recorded owner;
- a join, an Event, a Condition or a Queue: the frame is in threading.py's or
  queue.py's waiting functions; the caller's line says on what.

The engine joins these to the native stacks of the same threads (core/session.c)
and names the wait cycles (collector_stacks_diagnose).
"""

import ast
import sys
import threading

from . import names, preview

MAX_FRAMES = 64
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))
_WAITERS = {("threading.py", "join"): "join", ("threading.py", "wait"): "wait",
            ("threading.py", "_wait_for_tstate_lock"): "join",
            ("queue.py", "get"): "queue", ("queue.py", "put"): "queue"}
_sites = {}


def _lock_sites(path):
    """The statements of path's source that may take a lock, read once per file (a
    walk of a whole module per frame made a 16-thread snapshot take a second):
    [(line, body_first, body_last, [dotted])] for `with X, Y:` (body lines set), and
    (line, 0, 0, [dotted]) for `X.acquire()`."""
    found = _sites.get(path)
    if found is None:
        found = []
        try:
            with open(path, "rb") as f:
                tree = ast.parse(f.read(), path)
        except (OSError, SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, (ast.With, ast.AsyncWith)) and node.body:
                names_ = [d for d in (_dotted(i.context_expr) for i in node.items) if d]
                if names_:
                    found.append((node.lineno, node.body[0].lineno,
                                  node.end_lineno or node.body[0].lineno, names_))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "acquire":
                d = _dotted(node.func.value)
                if d:
                    found.append((node.lineno, 0, 0, [d]))
        _sites[path] = found
    return found


def _dotted(node):
    """"a.b.c" of a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _lookup(frame, dotted):
    """The object a dotted path names in frame, found without running code; None."""
    first, *rest = dotted.split(".")
    ns = frame.f_locals
    if first in ns:
        obj = ns[first]
    elif first in frame.f_globals:
        obj = frame.f_globals[first]
    else:
        return None
    for attr in rest:
        try:
            obj = object.__getattribute__(obj, "__dict__")[attr]
        except (AttributeError, KeyError, TypeError):
            return None
    return obj


def _locks_at(frame, line):
    """Locks the statement at line waits on: `with X:` or `X.acquire()`."""
    found = []
    for at, _, _, dotted in _lock_sites(frame.f_code.co_filename):
        if at != line:
            continue
        for d in dotted:
            obj = _lookup(frame, d)
            if isinstance(obj, _LOCK_TYPES):
                found.append((d, obj))
    return found


def _held(frame):
    """Locks frame is inside a `with X:` body of (by the source), as {id: name}."""
    held = {}
    line = frame.f_lineno
    for _, first, last, dotted in _lock_sites(frame.f_code.co_filename):
        if first and first <= line <= last:
            for d in dotted:
                obj = _lookup(frame, d)
                if isinstance(obj, _LOCK_TYPES):
                    held[id(obj)] = d
    return held


def _chain(frame, skip_dir):
    """The thread's frames, innermost first, the agent's own left out (a thread
    paused at a breakpoint waits inside breaks.py)."""
    out = []
    while frame is not None and len(out) < MAX_FRAMES:
        if not (skip_dir and frame.f_code.co_filename.startswith(skip_dir)):
            out.append(frame)
        frame = frame.f_back
    return out


def parameters(code):
    """The names of code's parameters, in order (*args and **kwargs included)."""
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # CO_VARARGS, CO_VARKEYWORDS
    return code.co_varnames[:n]


def _values(frame, wanted, depth):
    """[{name, type, value}] of frame's locals in wanted (a predicate on names)."""
    out = []
    for k, v in list(frame.f_locals.items()):
        if wanted(k) and len(out) < 32:
            out.append({"name": k, "type": type(v).__name__, "value": preview.preview(v, depth)})
    return out


def snapshot(root, depth, want_locals, skip_idents, skip_dir="", paused=None, want_args=False):
    """The answer to "stacks": {"threads": [...]}. paused: {native id: frame} of the
    threads stopped at a breakpoint or step; their stacks start at that frame (not
    in the agent's wait) and say "paused": true. want_args: each frame of the
    project's code has its "arguments" (its parameters' values); the innermost's
    "locals" are then its other names."""
    paused = paused or {}
    frames_of = sys._current_frames()
    threads = {t.ident: t for t in threading.enumerate()}
    held_by = {}  # id(lock) -> tid of a thread inside its `with` body
    out = []
    for ident, top in frames_of.items():
        t = threads.get(ident)
        if ident in skip_idents:  # said, so that the native stacks leave it out too
            out.append({"tid": (t.native_id if t else None) or 0, "name": t.name if t else "?",
                        "agent": True, "frames": [], "ownFrame": -1, "wait": None})
            continue
        tid = (t.native_id if t else None) or 0
        chain = _chain(paused.get(tid, top), skip_dir)
        for f in chain:
            for lock_id in _held(f):
                held_by.setdefault(lock_id, tid)
        frames = []
        own = -1
        for i, f in enumerate(chain):
            code = f.f_code
            mod = names.module_name(code.co_filename, root, f.f_globals.get("__name__", "?"))
            fr = {"function": mod + "." + names.qualname(code), "file": code.co_filename,
                  "line": f.f_lineno}
            frames.append(fr)
            if names.is_user_file(code.co_filename, root):
                if own < 0:
                    own = i
                if want_args:
                    params = set(parameters(code))  # not a generator's hidden ".0"
                    fr["arguments"] = _values(f, lambda k: k in params and k[:1] != ".",
                                              depth)
        entry = {"tid": tid, "name": t.name if t else "?", "frames": frames,
                 "ownFrame": own, "wait": None if tid in paused else _wait(chain)}
        if tid in paused:
            entry["paused"] = True
        if want_locals and own >= 0:
            params = set(parameters(chain[own].f_code)) if want_args else set()
            entry["locals"] = _values(chain[own], lambda k: k not in params, depth)
        out.append(entry)
    for e in out:
        w = e["wait"]
        if w and w["kind"] == "lock":
            owner = held_by.get(w["id"])
            if owner is None and w.get("rlockOwner"):
                owner = w["rlockOwner"]
            if owner and owner != e["tid"]:
                w["owner"] = owner
    return {"threads": out}


def _wait(chain):
    """What the innermost frames show the thread waits for, or None."""
    if not chain:
        return None
    top = chain[0]
    base = top.f_code.co_filename.rsplit("/", 1)[-1]
    kind = _WAITERS.get((base, top.f_code.co_name))
    if kind:
        caller = next((f for f in chain[1:] if not f.f_code.co_filename.endswith(
            ("/threading.py", "/queue.py"))), None)
        where = None
        if caller is not None:
            where = "%s:%d" % (caller.f_code.co_filename.rsplit("/", 1)[-1], caller.f_lineno)
        return {"kind": kind, "at": where}
    for name, lock in _locks_at(top, top.f_lineno):
        if lock.locked() if hasattr(lock, "locked") else True:
            w = {"kind": "lock", "variable": name, "id": id(lock)}
            owner = _rlock_owner(lock)
            if owner:
                w["rlockOwner"] = owner
            return w
    return None


def _rlock_owner(lock):
    """The native id of an RLock's owner, read from its repr (C's _thread.RLock
    keeps the owner's ident); 0 when none or a plain Lock."""
    if type(lock) is not _LOCK_TYPES[1]:
        return 0
    r = repr(lock)
    at = r.find("owner=")
    if at < 0:
        return 0
    try:
        ident = int(r[at + 6:].split()[0])
    except ValueError:
        return 0
    t = threading._active.get(ident)
    return (t.native_id or 0) if t else 0
