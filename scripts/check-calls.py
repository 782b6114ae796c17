#!/usr/bin/env python3
"""The call rule, checked on a build: calls run one way between the rooms of
README.md's Layout table, and no room's files call each other in a loop of more
than MAX_LOOP files.

An #include says what a file may see; this says what it really calls. The file-level
call graph comes from the objects themselves (nm: the global symbols a file defines,
the undefined ones it uses), so a call through a header the include check allowed
for another reason is still seen. A call between two rooms must be one the table's
"may include" column allows (scripts/check-layers.sh --rules, the table's one
parser): since the table is a DAG, no call runs back up. Inside a room, a loop of
files (a strongly connected component of the call graph) is a room nobody can read
one file at a time: more than MAX_LOOP files in one fails.

In the folders of NAMED, a name also tells its file: every function a file exports
is named after the file (`stepper_start` in stepper.c), or after a header of its
room that declares it (`hooks_arm` in hooks_arm.c, `hooks_tick` in sampling.c:
the room's interface, hooks.h, spread over its files).

    scripts/check-calls.py BUILD_DIR     exits 1 and names each upward call and loop

Calls through function pointers (the collector table, a daemon service, a command
table) are not seen: they are the extension points, declared where the table is.
"""
import collections
import os
import re
import subprocess
import sys

MAX_LOOP = 3
NAMED = ("ptrace",)  # the folders whose files name what they export
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rules():
    out = subprocess.run([os.path.join(ROOT, "scripts", "check-layers.sh"), "--rules"],
                         capture_output=True, text=True, check=True).stdout
    table = {}
    for line in out.splitlines():
        row, _, allowed = line.partition(":")
        table[row] = allowed.split()
    return table


def room_of(path, table):
    best = ""
    for row in table:
        if path.startswith(row + "/") and len(row) > len(best):
            best = row
    return best


def declares(header, symbol, cache={}):
    """Whether header (a path below ROOT) names symbol as a word."""
    if header not in cache:
        try:
            with open(os.path.join(ROOT, header)) as f:
                cache[header] = set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", f.read()))
        except OSError:
            cache[header] = set()
    return symbol in cache[header]


def allows(allowed, room, table, symbols):
    """Whether a file of a row allowing `allowed` may call symbols defined in room."""
    for a in allowed:
        if room == a or room.startswith(a + "/"):
            return True
        # one header allowed (dwarf/dwarf.h) admits the functions it declares,
        # wherever its folder defines them
        if a.endswith(".h") and room_of(a, table) == room and \
                all(declares(a, s) for s in symbols):
            return True
    return False


def call_graph(build):
    """({file: {file it calls: [symbols]}}, files, {file: [functions it exports]}) for
    the library's objects, by source path."""
    defined, used, exported = {}, collections.defaultdict(set), collections.defaultdict(list)
    objdir = os.path.join(build, "obj")
    for dirpath, _, names in os.walk(objdir):
        for name in names:
            if not name.endswith(".o"):
                continue
            obj = os.path.join(dirpath, name)
            src = os.path.relpath(obj, objdir)[:-2]
            if "/" not in src:
                continue  # strobe.o: the composition root calls anything
            if not any(os.path.exists(os.path.join(ROOT, src + ext)) for ext in (".c", ".S")):
                continue  # left by a file that moved or went: not part of the build
            nm = subprocess.run(["nm", obj], capture_output=True, text=True, check=True)
            for line in nm.stdout.splitlines():
                f = line.split()
                if len(f) == 3 and f[1] in "TDBRCVW":
                    defined[f[2]] = src
                    if f[1] == "T":
                        exported[src].append(f[2])
                elif len(f) == 2 and f[0] == "U":
                    used[src].add(f[1])
    graph = collections.defaultdict(lambda: collections.defaultdict(list))
    for src, syms in used.items():
        for s in sorted(syms):
            d = defined.get(s)
            if d and d != src:
                graph[src][d].append(s)
    return graph, set(defined.values()) | set(used), exported


def misnamed(src, functions):
    """The functions file src exports under a name that tells neither it nor a header
    of its room declaring them."""
    folder, name = os.path.split(src)
    headers = [h[:-2] for h in os.listdir(os.path.join(ROOT, folder)) if h.endswith(".h")]
    out = []
    for fn in sorted(functions):
        if fn == name or fn.startswith(name + "_"):
            continue
        if any((fn == h or fn.startswith(h + "_")) and declares(os.path.join(folder, h + ".h"), fn)
               for h in headers):
            continue
        out.append(fn)
    return out


def loops(nodes, graph):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in nodes:
                    continue
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def main():
    if len(sys.argv) != 2 or not os.path.isdir(os.path.join(sys.argv[1], "obj")):
        print("usage: scripts/check-calls.py BUILD_DIR (a built tree: BUILD_DIR/obj)",
              file=sys.stderr)
        return 64
    table = rules()
    graph, files, exported = call_graph(sys.argv[1])
    if not files:
        print("check-calls: no objects under %s/obj" % sys.argv[1], file=sys.stderr)
        return 2
    status = 0
    for src in sorted(graph):
        room = room_of(src, table)
        for dst, syms in sorted(graph[src].items()):
            droom = room_of(dst, table)
            if droom == room or allows(table.get(room, []), droom, table, syms):
                continue
            print("check-calls: %s calls %s (%s): %s/ may not call %s/" %
                  (src, dst, ", ".join(syms[:4]), room, droom), file=sys.stderr)
            status = 1
    rooms = collections.defaultdict(set)
    for f in files:
        rooms[room_of(f, table)].add(f)
    for room in sorted(rooms):
        for comp in loops(rooms[room], graph):
            if len(comp) > MAX_LOOP:
                print("check-calls: %d files of %s/ call each other in a loop (at most %d): %s"
                      % (len(comp), room, MAX_LOOP, " ".join(comp)), file=sys.stderr)
                status = 1
    for src in sorted(exported):
        if src.split("/")[0] not in NAMED:
            continue
        wrong = misnamed(src, exported[src])
        if wrong:
            print("check-calls: %s.c exports names that tell neither it nor a header of its "
                  "room: %s" % (src, " ".join(wrong)), file=sys.stderr)
            status = 1
    if status == 0:
        print("check-calls: calls run one way between rooms; no loop of more than %d files; "
              "names tell their files in %s" % (MAX_LOOP, ", ".join(f + "/" for f in NAMED)))
    return status


if __name__ == "__main__":
    sys.exit(main())
