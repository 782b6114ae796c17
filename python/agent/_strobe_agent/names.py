"""names.py - what a trace pattern selects among a Python program's functions.

Owns the qualified names of Python functions and the pattern rules on them:

- A module is named by its file relative to the project root, "/" turned into "."
  and ".py" dropped ("shop/pricing.py" -> "shop.pricing"; a package's __init__.py
  is the package), also when it runs as __main__: patterns name files, not import
  paths. A file outside the project root keeps its import name (__name__).
- A function's name is its module, then its code object's qualified name without
  the "<locals>" steps: "pricing.Cart.total", "pricing.outer.inner".
- Pattern rules are the native ones (base/pattern_match.h) with "." as the
  separator: "*" matches within one segment, "**" across segments, a "**" segment
  may match zero segments ("app.**.save" matches "app.save"), no wildcard means the
  identical name. "@file:NAME" selects the functions of files whose path ends with
  NAME; "@usercode" those of files under the project root that are not installed
  packages (site-packages, dist-packages, a virtualenv).

Functions are found in the source with ast, file by file, so a pattern can be
answered before a module is imported; a code object met at run time is matched by
its own file and qualified name, so functions made at run time (exec, decorators,
closures) are traced too. Pure: no interpreter hooks here.
"""

import ast
import os
import re

_INSTALLED = ("site-packages", "dist-packages", ".venv", "venv", ".tox", "__pycache__")


def module_name(path, root, fallback):
    """The module name of a file: relative to root when under it, else fallback."""
    if not path or path.startswith("<"):
        return fallback
    ap = os.path.abspath(path)
    if root:
        rel = os.path.relpath(ap, root)
        if not rel.startswith(".." + os.sep) and rel != "..":
            if rel.endswith(".py"):
                rel = rel[:-3]
            parts = [p for p in rel.split(os.sep) if p]
            if parts and parts[-1] == "__init__":
                parts.pop()
            if parts:
                return ".".join(parts)
    return fallback


def qualname(code):
    """A code object's qualified name without "<locals>" steps. Before 3.11 code
    objects have no co_qualname: the name is then looked up in the source by the
    function's first line (source_qualnames), and is its bare name when the file
    has no function starting there."""
    q = getattr(code, "co_qualname", None)
    if q is None:
        q = source_qualnames(code.co_filename).get(code.co_firstlineno, code.co_name)
    return q.replace(".<locals>", "")


_by_line = {}


def source_qualnames(path):
    """{first line: qualified name within its module} of a file's functions, cached."""
    got = _by_line.get(path)
    if got is None:
        got = {line: name[1:] for name, line in source_functions(path, "")}
        _by_line[path] = got
    return got


def is_user_file(path, root):
    """@usercode: under the project root and not an installed package."""
    if not root or not path or path.startswith("<"):
        return False
    ap = os.path.abspath(path)
    if not ap.startswith(root.rstrip(os.sep) + os.sep):
        return False
    return not any(p in _INSTALLED for p in ap[len(root):].split(os.sep))


def _segment_regex(pattern):
    """The regex of a name pattern: "*" within a segment, "**" across segments."""
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        if pattern.startswith("**", i):
            whole = (i == 0 or pattern[i - 1] == ".") and pattern.startswith("**.", i)
            if whole:  # may match zero segments: "a.**.b" matches "a.b"
                out.append(r"(?:.*\.)?")
                i += 3
            else:
                out.append(r".*")
                i += 2
        elif pattern[i] == "*":
            out.append(r"[^.]*")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


class Pattern:
    """One trace pattern, compiled."""

    def __init__(self, text):
        self.text = text
        self.file = None
        self.usercode = False
        self.regex = None
        if text == "@usercode":
            self.usercode = True
        elif text.startswith("@file:"):
            self.file = text[len("@file:"):]
        else:
            self.regex = _segment_regex(text)

    def matches(self, name, path, root):
        if self.usercode:
            return is_user_file(path, root)
        if self.file is not None:
            return bool(path) and (path == self.file or path.endswith(os.sep + self.file)
                                   or os.path.basename(path) == self.file)
        return self.regex.match(name) is not None


def source_functions(path, module):
    """[(qualified name, first line)] of the functions defined in a file, found with
    ast; [] when it cannot be read or parsed."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return []
    found = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                line = child.decorator_list[0].lineno if child.decorator_list else child.lineno
                found.append((module + "." + name, line))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            elif not isinstance(child, (ast.Lambda,)):
                walk(child, prefix)
    walk(tree, "")
    return found


def project_files(root, limit=5000):
    """The .py files of the project, installed packages left out (at most limit)."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in _INSTALLED and not x.startswith("."))
        for f in sorted(files):
            if f.endswith(".py"):
                out.append(os.path.join(d, f))
                if len(out) >= limit:
                    return out
    return out


def _distance(a, b):
    a, b = a.lower(), b.lower()
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def suggest(pattern, names, limit=3):
    """The names nearest to a pattern that matched nothing (the native rules of
    base/pattern_match.h: whole name or last segment, within a third of it)."""
    p = pattern.replace("*", "")
    last = p.rsplit(".", 1)[-1]
    bound = max(2, len(last) // 3)
    scored = []
    for n in set(names):
        d = min(_distance(p, n), _distance(last, n.rsplit(".", 1)[-1]) + ("." in p))
        if d <= bound:
            scored.append((d, _distance(p, n), n))
    return [n for _, _, n in sorted(scored)[:limit]]
