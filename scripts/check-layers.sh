#!/bin/sh
# The layering rule, checked: every `#include "dir/file.h"` of a project file must be
# an edge that README.md's "Layout" table allows in its "may include" column (a
# folder name allows the whole folder; dir/file.h allows that one header). A file
# may always include its own folder, and the table itself must allow no cycle
# between folders. The composition root (strobe.c), tests/ and
# bench/ may include anything. Headers bring in what they include in turn, so the
# rule holds through them too: no chain of includes may take a file into a folder
# its row does not name (a header the row names, dir/file.h, names its folder). That
# is what keeps the store's types out of mcp/ and cli/, whose rows do not name
# store/: not even a core/ header they include may include store/store.h.
#
#   scripts/check-layers.sh        exits 1 and names each forbidden edge
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

# "| base/ | owns ... | (nothing) |" -> "base: ..." lines, one per folder.
rules=$(awk -F'|' '
    /^## Layout/ { in_layout = 1; next }
    /^## / { in_layout = 0 }
    in_layout && $2 ~ /^ *[a-z]+\/ *$/ {
        dir = $2; gsub(/[ \/`]/, "", dir)
        allow = $4; gsub(/`|\([^)]*\)/, "", allow); gsub(/,/, " ", allow)
        gsub(/^ +| +$/, "", allow); gsub(/ +/, " ", allow)
        print dir ":" allow
    }' README.md)
if [ -z "$rules" ]; then
    echo "check-layers: README.md has no Layout table with a 'may include' column" >&2
    exit 2
fi

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
edges=""  # "file header" for every include of a project header: the reach below
# The table itself must be a DAG of folders (dir/file.h counts as its folder): an
# allowed edge both ways would make a cycle the include check could not see.
folders=$(printf '%s\n' "$rules" | while IFS=: read -r dir allow; do
    for a in $allow; do printf '%s %s\n' "$dir" "${a%%/*}"; done
done)
if [ -n "$folders" ] && ! printf '%s\n' "$folders" | tsort >/dev/null 2>&1; then
    echo "check-layers: README.md's Layout table allows a cycle between folders:" >&2
    printf '%s\n' "$folders" | tsort 2>&1 >/dev/null | sed 's/^/check-layers:   /' >&2
    status=1
fi

for f in $files; do
    dir=${f%%/*}
    case "$f" in
    */*) ;;
    *) continue ;;                      # strobe.c: the composition root
    esac
    case "$dir" in tests|bench) continue ;; esac
    allow=$(printf '%s\n' "$rules" | sed -n "s/^$dir://p")
    if ! printf '%s\n' "$rules" | grep -q "^$dir:"; then
        echo "check-layers: $f: folder $dir/ is not in README.md's Layout table" >&2
        status=1
        continue
    fi
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        [ -f "$inc" ] && edges="$edges$f $inc
"
        idir=${inc%%/*}
        [ "$idir" = "$dir" ] && continue
        ok=0
        for a in $allow; do
            if [ "$a" = "$idir" ] || [ "$a" = "$inc" ]; then ok=1; break; fi
        done
        if [ $ok = 0 ]; then
            echo "check-layers: $f includes $inc: $dir/ may include only: ${allow:-nothing}" >&2
            status=1
        fi
    done
done

# The reach: from each file, every header its includes lead to, through headers of
# any folder. A direct include was judged above; a header reached through others is
# judged by its folder, and named with the chain that leads to it.
reach=$(printf '%s' "$edges" | awk -v rules="$rules" '
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

[ $status = 0 ] && echo "check-layers: every include follows README.md's Layout table"
exit $status
