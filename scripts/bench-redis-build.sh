#!/bin/sh
# Builds redis-server from Debian bookworm's own source package (its patches
# applied by dpkg-source, -g as redis builds by default) for bench/bench_redis.c,
# into OUT_DIR/redis-server. A second run finds it there and does nothing (remove
# OUT_DIR to build the newest again).
#
# The source package is fetched with private apt directories under OUT_DIR: an
# `apt-get update` with another sources list in the system's own directories would
# replace the machine's binary package lists, and the system's apt lock and caches
# are no business of a benchmark. Needs the network, apt, debian-archive-keyring,
# dpkg-dev (dpkg-source), gcc and make.
#
#   scripts/bench-redis-build.sh OUT_DIR
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
has_dwarf() { [ -x "$1" ] && readelf -S "$1" 2>/dev/null | grep -q '\.debug_info'; }
has_dwarf "$out/redis-server" && exit 0

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if [ ! -r "$keyring" ]; then
    echo "$0: $keyring is missing (package debian-archive-keyring)" >&2
    exit 1
fi
work="$out/work"
rm -rf "$work"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/dl"
cat >"$work/sources.list" <<EOF
deb-src [signed-by=$keyring] http://deb.debian.org/debian bookworm main
deb-src [signed-by=$keyring] http://deb.debian.org/debian-security bookworm-security main
EOF
log="$out/build.log"
: >"$log"
# Every apt directory this writes to is under $work; NoLocking because the system's
# lock guards the system's lists, which are not touched. Sandbox::User is whoever
# runs this: the download directory is ours, not _apt's (apt would warn, then do
# the same).
aptget() {
    apt-get -q -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=- \
        -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" \
        -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)" "$@" >>"$log" 2>&1
}
fail() { echo "$0: $1; the end of $log:" >&2; tail -n 20 "$log" >&2; exit 1; }

echo "bench-redis-build: fetching Debian's redis source package" >&2
aptget update || fail "apt-get update (private lists) failed"
(cd "$work/dl" && aptget source --download-only redis) || fail "apt-get source failed"
dsc=""
for f in "$work/dl"/redis_*.dsc; do
    if [ -e "$f" ]; then dsc=$f; fi
done
[ -n "$dsc" ] || fail "no redis .dsc downloaded"
# apt checked every file of the package against the signed Sources index; the
# uploader's own signature of the .dsc needs a keyring that is not installed, and
# dpkg-source only warns about it.
dpkg-source -x "$dsc" "$work/src" >>"$log" 2>&1 || fail "dpkg-source -x failed"

echo "bench-redis-build: building $(basename "$dsc" .dsc) (a few minutes)" >&2
# libc malloc, no TLS, no systemd: no library beyond libc is needed to build.
make -C "$work/src" -j2 MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no >>"$log" 2>&1 ||
    fail "make failed"
has_dwarf "$work/src/src/redis-server" || fail "redis-server has no .debug_info"
cp "$work/src/src/redis-server" "$out/redis-server.tmp"
mv "$out/redis-server.tmp" "$out/redis-server"
basename "$dsc" .dsc >"$out/VERSION"
rm -rf "$work"
echo "bench-redis-build: $out/redis-server" >&2
