#!/bin/sh
# The layering rule, checked: every `#include "dir/file.h"` of a project file must be
# an edge that README.md's "Layout" table allows in its "may include" column.
#
# A row of the table is a folder (`core/`) or a room of one (`ptrace/hooks/`); a
# file belongs to the deepest row its path is under. An entry of "may include"
# allows that folder or room and every room below it (`ptrace` allows all of
# ptrace/), or one header (`core/collector.h`). A file may always include its own
# room. The table itself must allow no cycle between rows, every folder that holds
# C files must sit under a row, and no folder of the product holds more than 30 C
# files (a folder that grows past that gets rooms), and every file the table names
# in its "owns" column must be there. The composition root (strobe.c),
# tests/ and bench/ may include anything. Headers bring in what they include in
# turn, so the rule holds through them too, between folders: no chain of includes
# may take a file into a folder its folder's row does not name (a header the row
# names, dir/file.h, names its folder). That is what keeps the store's types out of
# mcp/ and cli/, whose rows do not name store/: not even a core/ header they include
# may include store/store.h.
#
#   scripts/check-layers.sh            exits 1 and names each forbidden edge
#   scripts/check-layers.sh --rules    prints the table as "row:allowed ..." lines
#   scripts/check-layers.sh --folders  prints the table's top-level folders
#
# --rules and --folders are how the Makefile and scripts/check-calls.py read the
# table: this script is its one parser.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

# "| ptrace/hooks/ | owns ... | base, ptrace/proc |" -> "ptrace/hooks:base ptrace/proc"
rules=$(awk -F'|' '
    /^## Layout/ { in_layout = 1; next }
    /^## / { in_layout = 0 }
    in_layout && $2 ~ /^ *[a-z]+(\/[a-z]+)*\/ *$/ {
        dir = $2; gsub(/[ `]/, "", dir); sub(/\/$/, "", dir)
        allow = $4; gsub(/`|\([^)]*\)/, "", allow); gsub(/,/, " ", allow)
        gsub(/^ +| +$/, "", allow); gsub(/ +/, " ", allow)
        print dir ":" allow
    }' README.md)
if [ -z "$rules" ]; then
    echo "check-layers: README.md has no Layout table with a 'may include' column" >&2
    exit 2
fi
case "${1:-}" in
--rules) printf '%s\n' "$rules"; exit 0 ;;
--folders) printf '%s\n' "$rules" | sed -n 's/^\([a-z]*\):.*/\1/p'; exit 0 ;;
"") ;;
*) echo "usage: $0 [--rules | --folders]" >&2; exit 64 ;;
esac
rows=$(printf '%s\n' "$rules" | sed 's/:.*//')

# room_of PATH: the deepest row PATH is under (empty when none).
room_of() {
    best=""
    for r in $rows; do
        case "$1" in
        "$r"/*) [ ${#r} -gt ${#best} ] && best=$r ;;
        esac
    done
    printf '%s' "$best"
}

# allows ALLOWED ROOM HEADER: whether one of ALLOWED admits HEADER of ROOM.
allows() {
    for a in $1; do
        case "$2" in "$a" | "$a"/*) return 0 ;; esac
        [ "$a" = "$3" ] && return 0
    done
    return 1
}

# The C files of the project: the ones git tracks in a checkout; without git (a
# source tarball, a machine without it) every .c and .h below the folders, minus
# build output. An empty list means something is wrong, not that all is well.
if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.c' '*.h')
else
    files=$(find . -name .git -prune -o -name 'build*' -prune -o -name node_modules -prune \
                -o -type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
fi
if [ -z "$files" ]; then
    echo "check-layers: found no C files under $root" >&2
    exit 2
fi

status=0
incs=""  # "file header" for every include of a project header: the reach below
# The table itself must be a DAG of rows: an allowed edge both ways would make a
# cycle the include check could not see. An entry stands for every row it admits
# (one header counts as its row).
edges=$(printf '%s\n' "$rules" | while IFS=: read -r dir allow; do
    for a in $allow; do
        hit=0
        for r in $rows; do
            case "$r" in
            "$a" | "$a"/*) [ "$r" != "$dir" ] && printf '%s %s\n' "$dir" "$r"; hit=1 ;;
            esac
        done
        if [ $hit = 0 ]; then
            t=$(room_of "$a"); printf '%s %s\n' "$dir" "${t:-${a%%/*}}"
        fi
    done
done)
if [ -n "$edges" ] && ! printf '%s\n' "$edges" | tsort >/dev/null 2>&1; then
    echo "check-layers: README.md's Layout table allows a cycle between folders:" >&2
    printf '%s\n' "$edges" | tsort 2>&1 >/dev/null | sed 's/^/check-layers:   /' >&2
    status=1
fi

for f in $files; do
    case "$f" in
    */*) ;;
    *) continue ;;                      # strobe.c: the composition root
    esac
    case "${f%%/*}" in tests|bench) continue ;; esac
    room=$(room_of "$f")
    if [ -z "$room" ]; then
        echo "check-layers: $f: folder ${f%%/*}/ is not in README.md's Layout table" >&2
        status=1
        continue
    fi
    allow=$(printf '%s\n' "$rules" | sed -n "s#^$room:##p")
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        case "$inc" in */*) ;; *) continue ;; esac   # a generated header beside the file
        [ -f "$inc" ] && incs="$incs$f $inc
"
        iroom=$(room_of "$inc")
        [ -z "$iroom" ] && iroom=${inc%%/*}
        [ "$iroom" = "$room" ] && continue
        if ! allows "$allow" "$iroom" "$inc"; then
            echo "check-layers: $f includes $inc: $room/ may include only: ${allow:-nothing}" >&2
            status=1
        fi
    done
done

# A folder of more than 30 C files is one nobody holds in their head.
big=$(printf '%s\n' "$files" | grep '\.c$' | grep -vE '^(tests|bench|fuzz)/' |
      sed -n 's#/[^/]*$##p' | sort | uniq -c | awk '$1 > 30 { print $2 }')
for b in $big; do
    echo "check-layers: $b/ holds more than 30 C files: give it rooms" >&2
    status=1
done

# The reach: from each file, every header its includes lead to, through headers of
# any folder. A direct include was judged above; a header reached through others is
# judged by its folder, and named with the chain that leads to it.
reach=$(printf '%s' "$incs" | awk -v rules="$rules" '
    BEGIN {   # "dir:allow ..." lines -> the folders each dir may reach, " dir a b "
        n = split(rules, r, "\n")
        for (i = 1; i <= n; i++) {
            dir = r[i]; sub(/:.*/, "", dir)
            allow[dir] = r[i]; sub(/^[^:]*:/, "", allow[dir])
            k = split(allow[dir], a, " ")
            ok[dir] = " " dir " "
            for (j = 1; j <= k; j++) { sub(/\/.*/, "", a[j]); ok[dir] = ok[dir] a[j] " " }
        }
    }
    { inc[$1] = inc[$1] " " $2 }
    END {
        for (f in inc) {
            dir = f; sub(/\/.*/, "", dir)
            delete via; delete seen
            top = 0
            k = split(inc[f], d, " ")
            for (i = 1; i <= k; i++) if (!(d[i] in seen)) { seen[d[i]] = 1; stack[++top] = d[i] }
            while (top > 0) {
                h = stack[top--]
                k = split(inc[h], d, " ")
                for (i = 1; i <= k; i++) {
                    if (d[i] in seen) continue
                    seen[d[i]] = 1; via[d[i]] = h; stack[++top] = d[i]
                    hdir = d[i]; sub(/\/.*/, "", hdir)
                    if (index(ok[dir], " " hdir " ")) continue
                    chain = d[i]
                    for (x = h; x != ""; x = via[x]) chain = x " -> " chain
                    print "check-layers: " f " reaches " d[i] " (" f " -> " chain "): " \
                          dir "/ may include only: " allow[dir]
                }
            }
        }
    }' | sort)
if [ -n "$reach" ]; then
    printf '%s\n' "$reach" >&2
    status=1
fi

# The table names files as it describes its rows ("the tracer thread (tracer.h)"): a
# name that is no longer there is a table that no longer matches the tree.
named=$(awk -F'|' '
    /^## Layout/ { in_layout = 1; next }
    /^## / { in_layout = 0 }
    in_layout && $2 ~ /^ *[a-z]+(\/[a-z]+)*\/ *$/ {
        dir = $2; gsub(/[ `]/, "", dir)
        owns = $3
        while (match(owns, /[a-z_0-9\/]+\.(h|c|json)/)) {
            f = substr(owns, RSTART, RLENGTH); owns = substr(owns, RSTART + RLENGTH)
            print (f ~ /\// ? f : dir f)
        }
    }' README.md | sort -u)
for f in $named; do
    if [ ! -e "$f" ]; then
        echo "check-layers: README.md's Layout table names $f, which is not there" >&2
        status=1
    fi
done

[ $status = 0 ] && echo "check-layers: every include follows README.md's Layout table"
exit $status
