"""Compact by default (docs/PROTOCOL.md "debug_query"): summary function events carry
their arguments and return value in one short line (argsShort, retShort, at most 80
bytes), verbose ones the call site (file:line of the call, and the calling function).
trace_c's main calls make_point(i, -2 * i) and move_point(&p, 1, 1) on two lines
in a row (found by their text), and count_flags with a struct of nested arrays.
strobectl prints its next steps as shell commands, each of which runs."""

import os
import re
import shlex

import pytest

from conftest import REPO, fixture_path


def line_with(text):
    with open(os.path.join(REPO, "tests", "fixtures", "trace_c.c")) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def traced_session(mcp):
    mcp.call_tool("debug_trace", {"add": ["make_point", "move_point", "count_flags"]})
    sid = mcp.launch("trace_c", project=REPO)["sessionId"]
    mcp.wait_ended(sid)
    return sid


def first(mcp, sid, fn, event_type, **kw):
    return mcp.query(sid, function={"equals": fn}, eventType=event_type, limit=1,
                     **kw)["events"][0]


@pytest.mark.valgrind_sample
def test_summary_events_show_values_in_short(mcp):
    sid = traced_session(mcp)
    enter = first(mcp, sid, "make_point", "function_enter")
    assert enter["argsShort"] == "x=0, y=0"
    assert "arguments" not in enter and "callSite" not in enter
    exit_ = first(mcp, sid, "make_point", "function_exit")
    assert exit_["retShort"] == "{x=0, y=0}" and exit_["returnType"] == "object"
    move = first(mcp, sid, "move_point", "function_enter")
    # the address of the point p led to, as the verbose form has it
    ptr = first(mcp, sid, "move_point", "function_enter", verbose=True)["arguments"][0]
    assert move["argsShort"] == "p=@%s {x=0, y=0}, dx=1, dy=1" % ptr["value"]["@ptr"], move
    big = first(mcp, sid, "count_flags", "function_enter")["argsShort"]
    # Nested arrays fit in one line (the cut at 80 bytes: test_timeline_values).
    assert re.fullmatch(r"f=@0x[0-9a-f]+ \{ready=1, mode=5, tags=\[0, 0, 0, 0\], "
                        r"grid=\[\[0, 0, 0\], \[0, 0, 2\]\]\}", big), big
    assert first(mcp, sid, "count_flags", "function_exit")["retShort"] == "8"
    # strobectl prints them on the event's line.
    ctl = mcp.world.strobectl("query", sid, "--function-equals", "make_point", "--limit", "2")
    assert ctl.rc == 0, ctl
    assert "make_point (trace_c.c:" in ctl.out and " with x=0, y=0\n" in ctl.out, ctl.out
    assert " => {x=0, y=0}\n" in ctl.out, ctl.out


def test_verbose_events_carry_the_call_site(mcp):
    sid = traced_session(mcp)
    make = first(mcp, sid, "make_point", "function_enter", verbose=True)
    call_line = line_with("make_point(i, -2 * i)")
    assert make["callSite"].endswith("trace_c.c:%d" % call_line), make["callSite"]
    assert make["caller"] == "main"
    move = first(mcp, sid, "move_point", "function_enter", verbose=True)
    assert move["callSite"].endswith("trace_c.c:%d" % (call_line + 1))


def test_strobectl_next_steps_are_shell_commands_that_run(world):
    r = world.strobectl("launch", "--project-root", world.project,
                        fixture_path("sleeper"), "--", "30")
    assert r.rc == 0, r
    assert "debug_" not in r.out, r.out
    steps = [line.strip() for line in r.out.splitlines() if line.startswith("  strobectl ")]
    assert len(steps) == 3, r.out
    for step in steps:
        argv = shlex.split(step)[1:]
        if "PATTERN" in step:
            argv[argv.index("PATTERN")] = "main"
        ran = world.strobectl(*argv)
        assert ran.rc == 0 and "debug_" not in ran.out + ran.err, (step, ran)
    sid = shlex.split(steps[0])[2]
    assert world.strobectl("stop", sid).rc == 0
