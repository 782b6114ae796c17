"""The layering check (scripts/check-layers.sh) on small trees of its own: it must
fail on an include edge README.md's Layout table does not allow, whether the file
includes the header itself or reaches it through other headers (mcp/ must not see the
store's types through an engine header), and on a folder the table does not list, and
pass on a tree that follows the table. The real tree is checked by `make check`
itself."""

import os
import shutil
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

README = """# t

## Layout

| dir | owns | may include |
| --- | --- | --- |
| base/ | utilities | (nothing) |
| store/ | database | base |
| core/ | engine | base, store |
| ptrace/ | collector | base, core/collector.h |
| mcp/ | tools | base, core |

## Next
"""


@pytest.fixture
def tree():
    d = tempfile.mkdtemp(prefix="strobe-layers-")
    os.makedirs(os.path.join(d, "scripts"))
    shutil.copy(os.path.join(ROOT, "scripts", "check-layers.sh"), os.path.join(d, "scripts"))
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write(README)
    files = {
        "base/str.h": "#include <stddef.h>\n",
        "store/store.h": '#include "base/str.h"\n',
        "core/timeline.h": '#include "base/str.h"\n',
        "core/timeline.c": '#include "core/timeline.h"\n#include "store/store.h"\n',
        "core/collector.h": '#include "base/str.h"\n',
        "core/session.h": '#include "core/collector.h"\n',
        "ptrace/native.c": '#include "base/str.h"\n#include "core/collector.h"\n',
        "mcp/tool.c": '#include "core/session.h"\n#include "core/timeline.h"\n',
        "strobe.c": '#include "ptrace/native.c"\n#include "mcp/tool.c"\n',
    }
    for path, text in files.items():
        write(d, path, text)
    yield d
    shutil.rmtree(d)


def write(d, path, text):
    os.makedirs(os.path.dirname(os.path.join(d, path)) or d, exist_ok=True)
    with open(os.path.join(d, path), "w") as f:
        f.write(text)


def check(d):
    return subprocess.run([os.path.join(d, "scripts", "check-layers.sh")],
                          capture_output=True, text=True)


def test_tree_that_follows_the_table_passes(tree):
    r = check(tree)
    assert r.returncode == 0, r.stderr
    assert "every include follows" in r.stdout


@pytest.mark.parametrize("path,text,said", [
    # an edge the table does not allow, named with what is allowed
    ("core/trace.c", '#include "ptrace/native.h"\n',
     "core/trace.c includes ptrace/native.h: core/ may include only: base"),
    # one header allowed is not the whole folder
    ("ptrace/hooks.c", '#include "core/session.h"\n', "ptrace/hooks.c includes core/session.h"),
    # base/ includes nothing outside itself
    ("base/log.c", '#include "core/session.h"\n', "base/ may include only: nothing"),
    # tool handlers reach the database through the engine, never the store itself
    ("mcp/query.c", '#include "store/store.h"\n',
     "mcp/query.c includes store/store.h: mcp/ may include only: base core"),
    # nor through an engine header that includes the store's: the chain is named
    ("core/timeline.h", '#include "base/str.h"\n#include "store/store.h"\n',
     "mcp/tool.c reaches store/store.h (mcp/tool.c -> core/timeline.h -> store/store.h): "
     "mcp/ may include only: base core"),
    # however long the chain
    ("core/collector.h", '#include "base/str.h"\n#include "store/store.h"\n',
     "mcp/tool.c reaches store/store.h (mcp/tool.c -> core/session.h -> core/collector.h "
     "-> store/store.h)"),
    # a folder the table does not list
    ("repl/repl.c", '#include "base/str.h"\n', "folder repl/ is not in README.md's Layout table"),
])
def test_violation_is_named(tree, path, text, said):
    write(tree, path, text)
    r = check(tree)
    assert r.returncode == 1
    assert said in r.stderr


def test_tree_in_a_git_checkout_lists_tracked_files_only(tree):
    if not shutil.which("git"):
        pytest.skip("git is not installed: the check reads the tree with find")
    subprocess.run(["git", "init", "-q", tree], check=True)
    subprocess.run(["git", "-C", tree, "add", "-A"], check=True)
    write(tree, "core/scratch.c", '#include "ptrace/native.h"\n')  # not tracked
    assert check(tree).returncode == 0
    subprocess.run(["git", "-C", tree, "add", "core/scratch.c"], check=True)
    r = check(tree)
    assert r.returncode == 1
    assert "core/scratch.c includes ptrace/native.h" in r.stderr


def test_empty_tree_is_an_error(tree):
    for sub in ("base", "store", "core", "ptrace", "mcp"):
        shutil.rmtree(os.path.join(tree, sub))
    os.remove(os.path.join(tree, "strobe.c"))
    r = check(tree)
    assert r.returncode == 2
    assert "found no C files" in r.stderr


def test_table_that_allows_a_cycle(tree):
    write(tree, "README.md", README.replace("| base/ | utilities | (nothing) |",
                                            "| base/ | utilities | mcp |"))
    r = check(tree)
    assert r.returncode == 1
    assert "allows a cycle between folders" in r.stderr


def test_readme_without_table(tree):
    write(tree, "README.md", "# nothing here\n")
    r = check(tree)
    assert r.returncode == 2
    assert "no Layout table" in r.stderr
