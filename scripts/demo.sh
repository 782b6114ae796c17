#!/bin/sh
# The main job, end to end: stage a trace pattern, launch the bundled sample program
# under strobe, wait for it to finish, query its timeline (stderr first, as an agent
# should, then the traced calls with their arguments and return values), show the
# session's status, then stop the session. Uses the normal state directory
# (~/.strobe, or $STROBE_HOME); the daemon starts on first use.
#
#   scripts/demo.sh BUILD_DIR
set -eu
build=${1:-build}
ctl="$build/strobectl"
app="$(cd "$build/fixtures" && pwd)/demo_orders"
root=$(cd "$(dirname "$0")/.." && pwd)

# The sample exits within milliseconds, so the pattern is staged before launch
# (pending mode); on a long-running program it can be added at any time.
echo "\$ strobectl trace --add validate_order"
"$ctl" trace --add validate_order >/dev/null
echo "\$ strobectl launch $app"
out=$("$ctl" --json launch --project-root "$root" "$app")
sid=$(printf '%s\n' "$out" | sed -n 's/.*"sessionId":[[:space:]]*"\([^"]*\)".*/\1/p' | head -n 1)
[ -n "$sid" ] || { echo "demo: launch failed: $out" >&2; exit 1; }
echo "session $sid"

# The program runs to completion in milliseconds; give it up to 10 s.
i=0
while "$ctl" --json status "$sid" | grep -q '"status":[[:space:]]*"running"'; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "demo: the sample program did not finish" >&2; exit 1; }
    sleep 0.1
done

echo
echo "\$ strobectl query $sid --type stderr     # output first: what went wrong?"
"$ctl" query "$sid" --type stderr
echo
echo "\$ strobectl query $sid                   # the whole timeline"
"$ctl" query "$sid"
echo
echo "\$ strobectl query $sid --function validate_order --type function_exit --verbose"
"$ctl" query "$sid" --function validate_order --type function_exit --verbose
echo
echo "\$ strobectl status $sid"
"$ctl" status "$sid"
echo
echo "\$ strobectl stop $sid"
"$ctl" stop "$sid"
"$ctl" trace --remove validate_order >/dev/null
