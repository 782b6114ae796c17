"""Code patching under running threads (ptrace/tracer/tracer_hold.c: every code write happens
with every thread of the image stopped). patch_torture runs 16 threads calling
pt_leaf (a leaf), pt_rip (first instruction RIP-relative, relocated) and pt_rec
(recursive) in tight loops; trace patterns are added and removed on them 1,000
times. A write under a running thread used to crash a threaded program now and then
(SIGSEGV, SIGILL); here the program must live through all of it, keep computing
right and exit cleanly with the checksum its round counts imply. The same under the
fast path: test_patch_threads_fast.py."""

from conftest import REPO, SANITIZED, VALGRIND

# The valgrind pass is a representative subset of the suite (its daemon runs 20-50x
# slower): there, 8 add/remove iterations under int3s (each pattern twice: 2 minutes
# for 20), and the fast path's daemon
# side is test_fastpath's. The normal build runs 1,000 (100 under the fast path, where
# each change also drains millions of records): the races are its to find. The
# sanitizer build, whose daemon runs 3-4x slower and which is there for memory
# errors, runs 300 and 30: every path of the loop, a third of the time. The fast
# path's variant is a module of its own (test_patch_threads_fast.py), so that the
# two run on different workers.
ITERATIONS = {"int3": 8 if VALGRIND else 300 if SANITIZED else 1000,
              "fast": 30 if SANITIZED else 100}
PATTERNS = ["pt_leaf", "pt_rip", "pt_rec", "pt_*"]
THREADS = 16


def expected_checksum(rounds):
    """Sum over threads t and rounds i < R_t of (i + t) + (7 + i) + (i%16)(i%16+1)/2
    + 3i, mod 2^64 (patch_torture.c)."""
    period = sum(k * (k + 1) // 2 for k in range(16))
    total = 0
    for t, r in enumerate(rounds):
        linear = 5 * r * (r - 1) // 2 + r * t + 7 * r
        rec = (r // 16) * period + sum(k * (k + 1) // 2 for k in range(r % 16))
        total += linear + rec
    return total % (1 << 64)


def count(mcp, sid, **kw):
    return mcp.query(sid, limit=1, **kw)["totalCount"]


def add_remove_under_threads(mcp, tmp_path, mode):
    stop_file = str(tmp_path / "stop")
    r = mcp.launch("patch_torture", project=REPO, args=[stop_file])
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    mcp.call_tool("debug_trace", {"sessionId": sid, "traceMode": mode})

    for i in range(ITERATIONS[mode]):
        pattern = PATTERNS[i % len(PATTERNS)]
        t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": [pattern]})
        assert t["hookedFunctions"] >= 1, t
        t = mcp.call_tool("debug_trace", {"sessionId": sid, "remove": [pattern]})
        assert t["hookedFunctions"] == 0, t

    assert mcp.status(sid)["status"] == "running"
    assert count(mcp, sid, eventType="crash") == 0
    assert count(mcp, sid, eventType="process_exit") == 0
    assert count(mcp, sid, eventType="function_enter") > 0
    threads_seen = [k for k in range(THREADS)
                    if count(mcp, sid, eventType="function_enter",
                             threadName={"contains": "pt-%d" % k}) > 0]
    assert len(threads_seen) >= 2, threads_seen

    with open(stop_file, "w"):
        pass
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    assert st.get("signal") is None, st
    assert count(mcp, sid, eventType="crash") == 0
    exits = mcp.query(sid, eventType="process_exit")["events"]
    assert [e["exitCode"] for e in exits] == [0], exits
    out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert out[0] == "ready", out
    words = out[-1].split()
    assert words[0] == "rounds" and words[-2] == "checksum", out
    rounds = [int(w) for w in words[1:1 + THREADS]]
    assert all(n > 0 for n in rounds), rounds
    assert int(words[-1]) == expected_checksum(rounds), out


def test_add_remove_under_threads(mcp, tmp_path):
    add_remove_under_threads(mcp, tmp_path, "int3")
