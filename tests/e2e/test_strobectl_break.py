"""strobectl break, breakpoints, delete SESSION ID...|all, continue, next, step,
finish, pause and until: debug_breakpoint and debug_continue from a shell (docs/
PROTOCOL.md), printed as gdb prints a stop, with the exit codes of strobectl --help
(1 a tool error with "CODE: sentence" on stderr, 5 a wait that timed out, 64 usage).

Fixtures: poll_ticker (tick(n) every 20 ms, n counting from 0; `poll_ticker N` exits 0
after N ticks printing "done N"; line 38 is tick's `g_counter++;`, 39 the next line,
57 main's call `tick((int)i);`) and demo_orders (order_total, line 27, runs for the
accepted orders; it exits 1: one order is rejected)."""

import re

import pytest

from conftest import REPO, T_LONG, fixture_path, wait_until

TICK_LINE = 38      # poll_ticker.c: g_counter++; in tick(int n)
TICK_NEXT = 39      # g_cfg.max_retries = g_counter % 7;
MAIN_CALL = 57      # tick((int)i); in main
# finish stops at the return address: its row in the line table is the next line (the
# call's result is unused), where gdb's finish stops too.
MAIN_AFTER_CALL = MAIN_CALL + 1
ORDER_TOTAL = 27    # demo_orders.c: return o->qty * o->price; in order_total

PAUSED = r"^Thread \d+ paused at %s:%d in %s \((breakpoint \d+|step)\)$"


def ctl_json(world, *args):
    r = world.strobectl("--json", *args)
    assert r.rc == 0, r
    return r.json()


def launch(world, fixture, *args):
    res = ctl_json(world, "launch", "--project-root", REPO, fixture_path(fixture), *args)
    world.target_pids.add(res["pid"])
    return res["sessionId"]


def launch_ticker(world, *args):
    sid = launch(world, "poll_ticker", *args)
    wait_until(lambda: ctl_json(world, "query", sid, "--type", "stdout")["totalCount"] >= 3,
               T_LONG, what="the ticker's ready line")
    return sid


@pytest.mark.valgrind_sample
def test_break_continue_next_finish_delete(world):
    # ticks for hours: the test ends the program itself, by writing main's tick limit
    # once it has stepped back into main (not within a time the steps must fit in)
    sid = launch_ticker(world, "1000000")
    r = world.strobectl("break", sid, "poll_ticker.c:%d" % TICK_LINE, "--if", "n >= 40")
    assert r.rc == 0, r
    assert re.search(r"^ID +KIND +WHERE +HITS +CONDITION$", r.out, re.M), r.out
    assert re.search(r"^(\d+) +breakpoint +poll_ticker\.c:%d in tick +0  n >= 40$"
                     % TICK_LINE, r.out, re.M), r.out
    bps = ctl_json(world, "breakpoints", sid)["breakpoints"]
    assert len(bps) == 1 and bps[0]["kind"] == "breakpoint", bps
    bp_id = bps[0]["id"]

    r = world.strobectl("continue", sid)
    assert r.rc == 0, r
    lines = r.out.splitlines()
    assert re.match(PAUSED % (r"poll_ticker\.c", TICK_LINE, "tick"), lines[0]), r.out
    assert "(breakpoint %d)" % bp_id in lines[0], r.out
    assert lines[1] == "#0 tick (poll_ticker.c:%d)" % TICK_LINE, r.out
    assert lines[2] == "#1 main (poll_ticker.c:%d)" % MAIN_CALL, r.out
    m = re.search(r"^arguments:\n  n = (\d+)$", r.out, re.M)
    assert m and int(m.group(1)) >= 40, r.out
    n = int(m.group(1))

    # The paused frame's locals read and write by name (the thread that paused last).
    assert ctl_json(world, "memory", sid, "n")["results"][0]["value"] == n
    r = world.strobectl("memory", sid, "--set", "n=1000")
    assert r.rc == 0, r
    assert ctl_json(world, "memory", sid, "n")["results"][0]["value"] == 1000

    r = world.strobectl("next", sid)
    assert r.rc == 0, r
    assert re.match(PAUSED % (r"poll_ticker\.c", TICK_NEXT, "tick"), r.out.splitlines()[0]), r.out
    assert r.out.splitlines()[0].endswith("(step)"), r.out

    r = world.strobectl("finish", sid)
    assert r.rc == 0, r
    assert re.match(PAUSED % (r"poll_ticker\.c", MAIN_AFTER_CALL, "main"), r.out.splitlines()[0]), r.out
    assert re.search(r"^returned 1001$", r.out, re.M), r.out  # tick returns n + 1
    assert re.search(r"^#0 main \(poll_ticker\.c:%d\)$" % MAIN_AFTER_CALL, r.out, re.M), r.out

    r = world.strobectl("delete", sid, "all")
    assert r.rc == 0, r
    assert "deleted breakpoint %d" % bp_id in r.out and "no breakpoints" in r.out, r.out
    assert ctl_json(world, "breakpoints", sid)["breakpoints"] == []
    assert ctl_json(world, "status", sid)["status"] == "running"  # delete kept the session

    r = world.strobectl("memory", sid, "--set", "ticks=0")  # main's loop ends
    assert r.rc == 0, r
    r = world.strobectl("continue", sid, "--timeout", "60000")  # strobectl's longest
    assert r.rc == 0, r
    assert r.out == "program exited with code 0\n", r.out


def test_staged_breakpoint_json_and_exit_code(world):
    """break without SESSION stages for the next launch: demo_orders runs for
    milliseconds and still stops in order_total."""
    r = world.strobectl("break", "demo_orders.c:%d" % ORDER_TOTAL)
    assert r.rc == 0, r
    assert "staged for the next launch" in r.out, r.out
    assert "demo_orders.c:%d" % ORDER_TOTAL in world.strobectl("breakpoints").out
    sid = launch(world, "demo_orders")
    r = world.strobectl("--json", "continue", sid)
    assert r.rc == 0, r
    a = r.json()
    assert a["state"] == "paused" and a["reason"] == "breakpoint", a
    assert a["file"].endswith("demo_orders.c") and a["line"] == ORDER_TOTAL, a
    assert a["function"] == "order_total" and a["frames"][1]["function"] == "main", a
    r = world.strobectl("delete", sid, "all")
    assert r.rc == 0, r
    r = world.strobectl("continue", sid)
    assert r.rc == 0, r
    assert r.out == "program exited with code 1\n", r.out


def test_logpoint_and_query(world):
    sid = launch_ticker(world)
    r = world.strobectl("break", sid, "tick", "--log", "n={n} counter={g_counter}")
    assert r.rc == 0, r
    assert re.search(r"^\d+ +logpoint +poll_ticker\.c:\d+ in tick +\d+  "
                     r"log \"n=\{n\} counter=\{g_counter\}\"$", r.out, re.M), r.out
    wait_until(lambda: ctl_json(world, "query", sid, "--type", "logpoint")["totalCount"] >= 3,
               10, what="3 logpoint events")
    q = world.strobectl("query", sid, "--type", "logpoint", "--limit", "3")
    assert q.rc == 0, q
    lines = [l for l in q.out.splitlines() if "logpoint" in l]
    assert len(lines) == 3, q.out
    assert all(re.search(r"logpoint n=\d+ counter=\d+$", l) for l in lines), q.out
    # A logpoint never pauses: continue waits for a stop that does not come.
    r = world.strobectl("continue", sid, "--timeout", "200")
    assert r.rc == 5 and "still running" in r.out, r
    world.strobectl("stop", sid)


def test_until_text_and_timeout(world):
    sid = launch_ticker(world, "50")  # prints "done 50" after 1 s
    r = world.strobectl("until", sid, "--text", "done", "--stream", "stdout",
                        "--timeout", "20000")
    assert r.rc == 0, r
    # The ticker exits right after its last line: when it has by the answer, the end
    # follows the line.
    assert re.match(r"^condition met: \[ *[\d.]+ ms\] stdout +done 50\n"
                    r"(program exited with code 0\n)?$", r.out), r.out

    sid = launch_ticker(world)
    # Already in the timeline: answers at once.
    r = world.strobectl("until", sid, "--matches", "^g_tempo 0x[0-9a-f]+$")
    assert r.rc == 0, r
    assert re.match(r"^condition met: .*stdout +g_tempo 0x[0-9a-f]+$", r.out), r.out
    r = world.strobectl("until", sid, "--text", "never printed", "--timeout", "300")
    assert r.rc == 5, r
    assert re.match(r"^still running after \d+ ms: \d+ events", r.out), r.out
    world.strobectl("stop", sid)


def test_pause_then_continue(world):
    sid = launch_ticker(world)
    r = world.strobectl("pause", sid)
    assert r.rc == 0, r
    assert re.match(r"^Thread \d+ paused .*\(pause\)$", r.out.splitlines()[0]), r.out
    assert re.search(r"^#0 ", r.out, re.M), r.out
    r = world.strobectl("continue", sid, "--timeout", "300")
    assert r.rc == 5 and r.out.startswith("still running after"), r
    world.strobectl("stop", sid)


def test_errors(world):
    sid = launch_ticker(world)
    r = world.strobectl("continue", sid, "--thread", "1")
    assert r.rc == 1 and r.err.startswith("strobectl: NOT_PAUSED: "), r
    for cmd in ("next", "step", "finish"):
        r = world.strobectl(cmd, sid)
        assert r.rc == 1, r
        assert r.err.startswith("strobectl: NOT_PAUSED: "), r
        assert r.out == "", r
    r = world.strobectl("break", sid, "no_such_file.c:10")
    assert r.rc == 1 and "FILE_NOT_FOUND" in r.err, r
    r = world.strobectl("break", sid, "no_such_function_anywhere")
    assert r.rc == 1 and "FUNCTION_NOT_FOUND" in r.err, r
    r = world.strobectl("break", sid, "poll_ticker.c:%d" % TICK_LINE, "--if", "n >")
    assert r.rc == 1 and "BAD_EXPRESSION" in r.err, r
    r = world.strobectl("delete", sid, "99")
    assert r.rc == 1 and "BREAKPOINT_NOT_FOUND" in r.err, r
    r = world.strobectl("until", sid, "--breakpoint", "99", "--timeout", "200")
    assert r.rc == 1 and "BREAKPOINT_NOT_FOUND" in r.err, r
    r = world.strobectl("continue", "no-such-session-1")
    assert r.rc == 1 and "SESSION_NOT_FOUND" in r.err, r
    world.strobectl("stop", sid)


def test_usage_errors(world):
    """Refused before any call: exit 64 with the sentence and the usage line."""
    cases = [
        (("break", "s", "f", "--hit", "0"), "--hit must be between 1 and"),
        (("break", "s", "f", "--hit", "two"), "--hit needs a whole number, not 'two'"),
        (("break", "s", "f", "--bogus"), "unknown option --bogus"),
        (("until", "s"), "until needs a condition"),
        (("until", "s", "--text", "a", "--breakpoint", "1"), "until waits for one condition"),
        (("continue",), "continue needs a SESSION id"),
        (("delete", "s", "x"), "delete needs breakpoint IDs (numbers) or 'all', not 'x'"),
    ]
    for args, sentence in cases:
        r = world.strobectl(*args, timeout=T_LONG)
        assert r.rc == 64, r
        assert sentence in r.err and "usage: strobectl %s" % args[0] in r.err, r
