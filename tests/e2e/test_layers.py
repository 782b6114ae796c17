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
    ("ptrace/hooks/hooks.c", '#include "core/session.h"\n', "ptrace/hooks/hooks.c includes core/session.h"),
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


# ---- rooms: a row of the table may be a subfolder ---------------------------------

ROOMS = README.replace(
    "| ptrace/ | collector | base, core/collector.h |",
    "| ptrace/ | collector | base, core/collector.h, ptrace/low, ptrace/high |\n"
    "| ptrace/low/ | below | base |\n"
    "| ptrace/high/ | above | base, ptrace/low |")


@pytest.fixture
def rooms(tree):
    write(tree, "README.md", ROOMS)
    write(tree, "ptrace/low/mem.h", "int mem_read(void);\n")
    write(tree, "ptrace/low/mem.c", '#include "ptrace/low/mem.h"\nint mem_read(void) { return 1; }\n')
    write(tree, "ptrace/high/trap.c", '#include "ptrace/low/mem.h"\n'
                                      'int trap(void) { return mem_read(); }\n')
    return tree


def test_rooms_that_follow_the_table_pass(rooms):
    r = check(rooms)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("path,text,said", [
    # a room includes the room above it
    ("ptrace/low/up.c", '#include "ptrace/high/trap.h"\n',
     "ptrace/low/up.c includes ptrace/high/trap.h: ptrace/low/ may include only: base"),
    # a room includes its folder's own files without the row allowing it
    ("ptrace/low/native.c", '#include "ptrace/native.h"\n',
     "ptrace/low/native.c includes ptrace/native.h: ptrace/low/ may include only: base"),
    # the rest of the product sees no room the table does not open to it
    ("core/trap.c", '#include "ptrace/low/mem.h"\n',
     "core/trap.c includes ptrace/low/mem.h: core/ may include only: base"),
])
def test_room_violation_is_named(rooms, path, text, said):
    write(rooms, path, text)
    r = check(rooms)
    assert r.returncode == 1
    assert said in r.stderr


def test_table_that_allows_a_cycle_between_rooms(rooms):
    write(rooms, "README.md", ROOMS.replace("| ptrace/low/ | below | base |",
                                            "| ptrace/low/ | below | base, ptrace/high |"))
    r = check(rooms)
    assert r.returncode == 1
    assert "allows a cycle" in r.stderr


def test_folder_of_more_than_30_c_files(rooms):
    have = len([f for f in os.listdir(os.path.join(rooms, "core")) if f.endswith(".c")])
    for i in range(30 - have):
        write(rooms, "core/f%02d.c" % i, "int f%02d;\n" % i)
    assert check(rooms).returncode == 0  # 30 is fine
    write(rooms, "core/f30.c", "int f30;\n")
    r = check(rooms)
    assert r.returncode == 1
    assert "core/ holds more than 30 C files: give it rooms" in r.stderr


def test_folders_and_rules_are_the_tables(rooms):
    r = subprocess.run([os.path.join(rooms, "scripts", "check-layers.sh"), "--folders"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["base", "store", "core", "ptrace", "mcp"]
    r = subprocess.run([os.path.join(rooms, "scripts", "check-layers.sh"), "--rules"],
                       capture_output=True, text=True, check=True)
    assert "ptrace/high:base ptrace/low" in r.stdout.splitlines()


# ---- calls (scripts/check-calls.py) on objects compiled here ------------------------

def build_objects(d):
    """Compiles every .c below d (but strobe.c) into d/build/obj, as the Makefile does."""
    for dirpath, _, names in os.walk(d):
        for name in names:
            src = os.path.relpath(os.path.join(dirpath, name), d)
            if not src.endswith(".c") or "/" not in src or src.startswith("build/"):
                continue
            obj = os.path.join(d, "build", "obj", src[:-2] + ".o")
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            subprocess.run(["cc", "-c", "-I", d, "-o", obj, os.path.join(d, src)], check=True)


def calls(d):
    shutil.copy(os.path.join(ROOT, "scripts", "check-calls.py"), os.path.join(d, "scripts"))
    build_objects(d)
    return subprocess.run([os.path.join(d, "scripts", "check-calls.py"),
                           os.path.join(d, "build")], capture_output=True, text=True)


def test_calls_that_run_one_way_pass(rooms):
    r = calls(rooms)
    assert r.returncode == 0, r.stderr
    assert "calls run one way" in r.stdout


def test_call_up_a_room_is_named(rooms):
    # declared by hand: no include of the room above, only the call
    write(rooms, "ptrace/low/up.c", "int trap(void);\nint up(void) { return trap(); }\n")
    r = calls(rooms)
    assert r.returncode == 1
    assert "ptrace/low/up calls ptrace/high/trap (trap): ptrace/low/ may not call " \
           "ptrace/high/" in r.stderr


def test_call_allowed_by_one_header_is_only_what_it_declares(rooms):
    write(rooms, "core/collector.h", "int collector_launch(void);\n")
    write(rooms, "core/collector.c", "int collector_launch(void) { return 0; }\n"
                                     "int session_x(void) { return 1; }\n")
    write(rooms, "ptrace/native.c", "int collector_launch(void);\n"
                                    "int native(void) { return collector_launch(); }\n")
    assert calls(rooms).returncode == 0
    write(rooms, "ptrace/native.c", "int session_x(void);\n"
                                    "int native(void) { return session_x(); }\n")
    r = calls(rooms)
    assert r.returncode == 1
    assert "ptrace/native calls core/collector (session_x)" in r.stderr


def test_loop_of_more_than_three_files_in_a_room(rooms):
    def ring(n):
        for i in range(n):
            write(rooms, "ptrace/high/r%d.c" % i,
                  "int r%d(int k);\nint r%d(int k) { return k ? r%d(k - 1) : 0; }\n"
                  % ((i + 1) % n, i, (i + 1) % n))
    ring(3)
    assert calls(rooms).returncode == 0  # three files may call each other
    for i in range(3):
        os.remove(os.path.join(rooms, "ptrace/high/r%d.c" % i))
    shutil.rmtree(os.path.join(rooms, "build"))
    ring(4)
    r = calls(rooms)
    assert r.returncode == 1
    assert "4 files of ptrace/high/ call each other in a loop (at most 3): " \
           "ptrace/high/r0 ptrace/high/r1 ptrace/high/r2 ptrace/high/r3" in r.stderr


def test_calls_without_objects_is_an_error(rooms):
    shutil.copy(os.path.join(ROOT, "scripts", "check-calls.py"), os.path.join(rooms, "scripts"))
    os.makedirs(os.path.join(rooms, "build", "obj"))
    r = subprocess.run([os.path.join(rooms, "scripts", "check-calls.py"),
                        os.path.join(rooms, "build")], capture_output=True, text=True)
    assert r.returncode == 2
    assert "no objects" in r.stderr


def test_exported_names_tell_their_file(rooms):
    # after the file, or after a header of its room that declares it
    write(rooms, "ptrace/high/high.h", "int high_trap(void);\n")
    write(rooms, "ptrace/high/trap2.c", '#include "ptrace/high/high.h"\n'
                                       "int trap2_x(void) { return 0; }\n"
                                       "int high_trap(void) { return 1; }\n")
    assert calls(rooms).returncode == 0
    write(rooms, "ptrace/high/trap2.c", "int hk_trap(void) { return 0; }\n"
                                       "int high_other(void) { return 1; }\n")
    r = calls(rooms)
    assert r.returncode == 1
    assert "ptrace/high/trap2.c exports names that tell neither it nor a header of its " \
           "room: high_other hk_trap" in r.stderr


def test_table_that_names_a_file_no_longer_there(rooms):
    write(rooms, "README.md", ROOMS.replace("| ptrace/low/ | below | base |",
                                            "| ptrace/low/ | below (mem.h, gone.h) | base |"))
    r = check(rooms)
    assert r.returncode == 1
    assert "README.md's Layout table names ptrace/low/gone.h, which is not there" in r.stderr
    assert "mem.h" not in r.stderr
