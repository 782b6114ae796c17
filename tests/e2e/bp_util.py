"""Helpers of the breakpoint and stepping tests (test_breakpoints.py,
test_stepping.py): source lines by marker comment, debug_breakpoint and
debug_continue shorthands, and waits on a fixture's output."""

import os
import re

from conftest import REPO, SLOW, T_LONG, wait_until

# How long a debug_continue waits for a stop that must come: the tool's default, the
# most it allows under valgrind (whose daemon runs many times slower).
WAIT_MS = min(60000, int(10000 * SLOW))

FIXTURES_SRC = os.path.join(REPO, "tests", "fixtures")


def line_of(fixture, marker):
    """The 1-based line of fixture's source holding the marker comment (C's
    /* MARKER */ or a // MARKER comment in C++ and Rust)."""
    pat = re.compile(r"(/\*|//) %s\b" % re.escape(marker))
    with open(os.path.join(FIXTURES_SRC, fixture)) as f:
        for n, line in enumerate(f, 1):
            if pat.search(line):
                return n
    raise AssertionError("no %s marker in %s" % (marker, fixture))


def bp_add(mcp, sid, *specs):
    a = {"add": list(specs)}
    if sid is not None:
        a["sessionId"] = sid
    return mcp.call_tool("debug_breakpoint", a)


def bp_add_error(mcp, sid, *specs):
    a = {"add": list(specs)}
    if sid is not None:
        a["sessionId"] = sid
    return mcp.tool_error("debug_breakpoint", a)


def bp_list(mcp, sid):
    a = {} if sid is None else {"sessionId": sid}
    return mcp.call_tool("debug_breakpoint", a)["breakpoints"]


def bp_remove(mcp, sid, ids):
    return mcp.call_tool("debug_breakpoint", {"sessionId": sid, "remove": ids})


def cont(mcp, sid, action=None, timeout=None, **kw):
    """debug_continue; returns the answer. The tool itself waits (timeoutMs), so the
    JSON-RPC timeout leaves room above it."""
    a = {"sessionId": sid, "timeoutMs": WAIT_MS}
    if action:
        a["action"] = action
    a.update(kw)
    rpc_timeout = max(T_LONG, a["timeoutMs"] / 1000.0 + 10)
    return mcp.call_tool("debug_continue", a, timeout=timeout or rpc_timeout)


def cont_error(mcp, sid, action=None, **kw):
    a = {"sessionId": sid}
    if action:
        a["action"] = action
    a.update(kw)
    return mcp.tool_error("debug_continue", a, timeout=T_LONG)


def until_bp(mcp, sid, bp_id, timeoutMs=WAIT_MS):
    return cont(mcp, sid, "until", condition={"breakpoint": bp_id}, timeoutMs=timeoutMs)


def vars_of(answer, key):
    """{name: value} of a pause answer's arguments or locals."""
    return {v["name"]: v["value"] for v in answer.get(key) or []}


def mem_read(mcp, sid, *names, **kw):
    a = {"sessionId": sid, "targets": [{"variable": n} for n in names]}
    a.update(kw)
    return mcp.call_tool("debug_memory", a)["results"]


def mem_write(mcp, sid, values, **kw):
    a = {"action": "write", "sessionId": sid,
         "targets": [{"variable": n, "value": v} for n, v in values]}
    a.update(kw)
    return mcp.call_tool("debug_memory", a)["results"]


def texts(mcp, sid, event_type):
    return [e.get("text", "") for e in mcp.all_events(sid, eventType=event_type)]


def wait_text(mcp, sid, event_type, pattern, timeout=None):
    """Waits until a line of event_type matches pattern; returns the match."""
    def seen():
        for t in texts(mcp, sid, event_type):
            m = re.search(pattern, t)
            if m:
                return m
        return None
    return wait_until(seen, timeout or T_LONG,
                      what="%r on %s of %s" % (pattern, event_type, sid))


def launch_ready(mcp, fixture, ready, event_type="stdout", **kw):
    """Launches fixture and waits for a line matching ready; returns the launch answer."""
    r = mcp.launch(fixture, **kw)
    wait_text(mcp, r["sessionId"], event_type, ready)
    return r


def wait_paused(mcp, sid, n=1, timeout=None):
    """Polls debug_session status until n threads are paused; returns the paused list.
    (For stops that happen before the test asks: a staged oneShot breakpoint is gone
    from the list once its thread pauses.)"""
    def paused():
        p = mcp.status(sid).get("paused") or []
        return p if len(p) >= n else None
    def count():
        return len(mcp.status(sid).get("paused") or [])
    try:
        return wait_until(paused, timeout or T_LONG, what="%d paused thread(s) in %s" % (n, sid))
    except AssertionError as e:
        raise AssertionError("%s; %d paused now" % (e, count()))
