#!/bin/sh
# The layering rule, checked: every `#include "dir/file.h"` of a project file must be
# an edge that README.md's "Layout" table allows in its "may include" column (a
# folder name allows the whole folder; dir/file.h allows that one header). A file
# may always include its own folder, and the table itself must allow no cycle
# between folders. The composition root (strobe.c), tests/ and
# bench/ may include anything. It also fails when an mcp/ file calls a store_*
# function: tool handlers reach the database through the engine (core/timeline.h).
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
# The table itself must be a DAG of folders (dir/file.h counts as its folder): an
# allowed edge both ways would make a cycle the include check could not see.
edges=$(printf '%s\n' "$rules" | while IFS=: read -r dir allow; do
    for a in $allow; do printf '%s %s\n' "$dir" "${a%%/*}"; done
done)
if [ -n "$edges" ] && ! printf '%s\n' "$edges" | tsort >/dev/null 2>&1; then
    echo "check-layers: README.md's Layout table allows a cycle between folders:" >&2
    printf '%s\n' "$edges" | tsort 2>&1 >/dev/null | sed 's/^/check-layers:   /' >&2
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

for f in $(printf '%s\n' "$files" | grep '^mcp/'); do
    calls=$(grep -on '\bstore_[a-z_]*[[:space:]]*(' "$f" | sed 's/[[:space:]]*($//')
    if [ -n "$calls" ]; then
        echo "check-layers: $f calls the store directly (use core/timeline.h):" $calls >&2
        status=1
    fi
done

[ $status = 0 ] && echo "check-layers: every include follows README.md's Layout table"
exit $status
