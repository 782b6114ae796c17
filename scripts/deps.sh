#!/bin/sh
# Installs the Debian packages Strobe needs to build, test and benchmark, and only
# those missing. Called by the Makefile before every build so that a fresh Debian 12
# machine needs nothing but `make demo` or `make check`.
#
#   scripts/deps.sh build   compiler and libraries (make, make demo)
#   scripts/deps.sh check   + cmocka, pytest (and pytest-xdist), node/npm, valgrind,
#                           clang runtime, pypy3
#   scripts/deps.sh bench   + ltrace, gdb and uftrace, the baselines of the tracing
#                           benchmarks, python3.11-dbg, the real workload of
#                           bench/bench_workload.c (CPython with its symbols), and
#                           for bench/bench_redis.c redis-tools (redis-benchmark,
#                           redis-cli) and what scripts/bench-redis-build.sh needs
#                           to fetch and build Debian's redis source package
#   scripts/deps.sh fuzz    build + clang and its libFuzzer runtime (make fuzz)
set -eu

build="build-essential pkg-config libelf-dev libdw-dev libunwind-dev libsqlite3-dev
       libcjson-dev libcapstone-dev libiberty-dev libpcre2-dev libexpat1-dev libedit-dev"
# The test frameworks debug_test's end-to-end tests drive (jest, vitest and mocha
# come from npm: tests/fixtures/testproj/js/package-lock.json).
frameworks="libgtest-dev catch2 cmake golang-go python3-pytest"
# pypy3: a Python that is not CPython, which the Python collector must name as such.
check="$build libcmocka-dev python3 python3-pexpect python3-pytest-xdist valgrind g++ man-db
       groff-base pypy3 $frameworks"
bench="$check ltrace gdb uftrace python3.11-dbg redis-tools dpkg-dev debian-archive-keyring"
fuzz="$build clang libclang-rt-14-dev"

case "${1:-build}" in
  build) want=$build ;;
  check) want=$check ;;
  bench) want=$bench ;;
  fuzz) want=$fuzz ;;
  *) echo "usage: $0 build|check|bench|fuzz" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
# node, npm and rustc may come from Debian or from elsewhere on PATH; either will do.
case "${1:-build}" in
  build|fuzz) ;;
  *)
    command -v node >/dev/null 2>&1 || missing="$missing nodejs"
    command -v npm >/dev/null 2>&1 || missing="$missing npm"
    command -v rustc >/dev/null 2>&1 || missing="$missing rustc"
    command -v cargo >/dev/null 2>&1 || missing="$missing cargo"
    ;;
esac
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "strobe: missing Debian packages:$missing" >&2
  echo "strobe: run as root, or: sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "strobe: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
