"""Current names in the timeline: a thread renamed after its first events shows its new
name at the events after the rename and in the stacks (timeline_rename: tick(0..2),
rename to "renamed-worker", 80 ms, tick(3..5), "renamed" on stdout, then blocks)."""

import os
import re
import subprocess

import pytest

from bp_util import bp_add
from conftest import REPO, wait_until


@pytest.mark.valgrind_sample
def test_renamed_thread(mcp):
    mcp.call_tool("debug_trace", {"add": ["tick"]})
    r = mcp.launch("timeline_rename", project=REPO)
    sid, pid = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout")
    ev = mcp.all_events(sid, eventType="function_enter", verbose=True)
    names = {e["arguments"][0]["value"]: e["threadName"] for e in ev}
    assert names == {0: "timeline_rename", 1: "timeline_rename", 2: "timeline_rename",
                     3: "renamed-worker", 4: "renamed-worker", 5: "renamed-worker"}, names
    st = mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid})
    by_name = {t["name"]: t for t in st["threads"]}
    assert sorted(by_name) == ["renamed-worker", "timeline_rename"], by_name
    assert by_name["timeline_rename"]["tid"] == pid
    mcp.stop(sid)


def test_pause_event_has_the_current_name(mcp):
    """A breakpoint hit 80 ms after the rename (tick(4)): the pause event names the
    thread as it is at the stop."""
    bp_add(mcp, None, {"function": "tick", "condition": "n == 4"})
    r = mcp.launch("timeline_rename", project=REPO)
    sid = r["sessionId"]
    [ev] = mcp.wait_events(sid, 1, eventType="pause", verbose=True)["events"]
    assert ev["threadName"] == "renamed-worker", ev
    mcp.stop(sid)


def libc_debug_info():
    """Whether this machine has glibc's separate debug info (libc6-dbg), found by
    build-id as the daemon finds it: its DWARF names pthread_mutex_lock after the
    internal ___pthread_mutex_lock. Without it the symbol table's shortest name,
    the public one, is the function's own and there is no functionRaw."""
    with open("/proc/self/maps") as f:
        path = next(line.split()[-1] for line in f if "/libc.so" in line)
    notes = subprocess.run(["readelf", "-n", path], check=True, capture_output=True,
                           text=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    return os.path.exists("/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:]))


def check_names(e, public):
    """function is the public name; functionRaw, when libc's debug info names the
    function otherwise, is glibc's internal symbol: the same name behind underscores
    (which ones depends on the glibc build, so the test does not spell them)."""
    assert e["function"] == public, e
    if libc_debug_info():
        raw = e["functionRaw"]
        assert raw != public and raw.lstrip("_") == public, e
    else:
        assert e.get("functionRaw") is None, e


def test_public_name_of_a_libc_function(mcp):
    mcp.call_tool("debug_trace", {"add": ["pthread_mutex_lock"]})
    r = mcp.launch("timeline_mutex", project=REPO)
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    ev = mcp.all_events(sid, eventType="function_enter", verbose=True)
    mine = [e for e in ev if e["threadId"] == r["pid"]]
    assert len(mine) >= 3, ev
    for e in ev:
        check_names(e, "pthread_mutex_lock")
    top = {f["function"]: f for f in st["topFunctions"]}
    assert top["pthread_mutex_lock"]["calls"] == len(ev), st["topFunctions"]
    assert top["pthread_mutex_lock"].get("functionRaw") == ev[0].get("functionRaw")


def test_public_name_in_stacks(mcp):
    """deadlock_abba: both workers wait in pthread_mutex_lock."""
    r = mcp.launch("deadlock_abba")
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")

    def locking():
        st = mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid,
                                             "verbose": True})
        ws = [t for t in st["threads"] if t["name"].startswith("worker-")]
        frames = [f for t in ws for f in t["frames"] if f["function"] == "pthread_mutex_lock"]
        return frames if len(frames) == 2 else None
    for f in wait_until(locking, what="both workers in pthread_mutex_lock"):
        check_names(f, "pthread_mutex_lock")
    mcp.stop(sid)


def test_public_name_in_a_crash(mcp):
    """crash_null_mutex dies inside pthread_mutex_lock(NULL): frame 0 of the crash has
    the public name, as stacks and events do."""
    r = mcp.launch("crash_null_mutex")
    sid = r["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["status"] == "crashed", st
    [crash] = mcp.query(sid, eventType="crash", verbose=True)["events"]
    frames = [f for f in crash["frames"] if "function" in f]
    assert frames[0]["function"] == "pthread_mutex_lock", frames[:3]
    check_names(frames[0], "pthread_mutex_lock")
    assert [f["function"] for f in frames[1:3]] == ["take", "main"], frames[:3]
