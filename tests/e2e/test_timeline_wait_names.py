"""debug_session action "stacks": the variable a blocked thread waits on, named as C
names it (docs/PROTOCOL.md "Thread stacks", wait.variable). The wait_named fixture
(its top comment) blocks four threads for good: on a mutex member of a heap struct
reached through the waiting frame's parameter (t->lock), on a mutex inside an array
of structs in a global (g_shards.shards[2].mu), on a condition variable of the heap
struct (t->ready), and on a heap mutex the parameter points to (*m). deadlock_abba's plain globals are in test_stacks.py."""

import pytest

from conftest import T_LONG, wait_until

WAITERS = {"heap-waiter": ("mutex", "t->lock"),
           "shard-waiter": ("mutex", "g_shards.shards[2].mu"),
           "cond-waiter": ("condvar", "t->ready"),
           "bare-waiter": ("mutex", "*m")}


def blocked_stacks(mcp):
    """Launches wait_named and waits until its four waiters block; returns
    (sessionId, the stacks answer)."""
    r = mcp.launch("wait_named")
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")

    def all_blocked():
        res = mcp.call_tool("debug_session", {"action": "stacks", "sessionId": sid})
        names = {t["name"]: t for t in res["threads"]}
        ok = all(names.get(n, {}).get("wait", {}).get("kind") == kind
                 for n, (kind, _) in WAITERS.items())
        return res if ok else None
    return sid, wait_until(all_blocked, T_LONG, what="the four waiters blocked")


@pytest.mark.valgrind_sample
def test_wait_variables_named_from_globals_and_frames(mcp):
    sid, res = blocked_stacks(mcp)
    names = {t["name"]: t for t in res["threads"]}
    for name, (kind, variable) in WAITERS.items():
        w = names[name]["wait"]
        assert w["kind"] == kind and w["variable"] == variable, (name, w)
    # main waits in pthread_join: a join names no variable
    main = names["wait_named"]
    assert main["wait"]["kind"] == "join" and "variable" not in main["wait"], main
    r = mcp.world.strobectl("stacks", sid)
    assert r.rc == 0, r
    heap = names["heap-waiter"]
    assert "Thread %d (heap-waiter) sleeping in futex, waiting for mutex t->lock (%s) " \
           "held by %d:" % (heap["tid"], heap["wait"]["address"], main["tid"]) \
        in r.out.splitlines(), r.out
    cond = names["cond-waiter"]
    assert "Thread %d (cond-waiter) sleeping in futex, waiting for condition variable " \
           "t->ready (%s):" % (cond["tid"], cond["wait"]["address"]) \
        in r.out.splitlines(), r.out
    mcp.stop(sid)
