"""debug_memory poll (spec 002 phase 1e, 003 debug_read "Response (poll)"): the
targets sampled in the background as variable_snapshot events, interleaved with
traced calls; the poll ends after its duration, with the session, or when the
program exits; the errors (interval and duration bounds, too many targets, unknown
variables answered up front, the fifth poll of a session). Fixture: poll_ticker
(tick() increments g_counter every 20 ms); inprogress (exits on SIGUSR1) for the
poll its program's exit ends."""

import datetime
import os
import re
import signal

import pytest

from conftest import REPO, T_LONG, T_SHORT, VALGRIND, pid_alive, stays_true, wait_until


def launch_ticker(mcp, args=None):
    r = mcp.launch("poll_ticker", project=REPO, args=args)
    sid = r["sessionId"]
    mcp.wait_events(sid, 3, eventType="stdout")
    return sid


def poll(mcp, sid, targets, interval=50, duration=1000, **kw):
    a = {"sessionId": sid, "targets": targets,
         "poll": {"intervalMs": interval, "durationMs": duration}}
    a.update(kw)
    return mcp.call_tool("debug_memory", a)


def snapshots(mcp, sid):
    return mcp.all_events(sid, eventType="variable_snapshot")


def log_time(stamp):
    """Seconds of a daemon.log time stamp (2026-11-28T15:01:01.692Z)."""
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


@pytest.mark.valgrind_sample
def test_poll_answer_and_samples(mcp):
    sid = launch_ticker(mcp)
    # The newest event seen before the poll is asked for: its time comes before the
    # poll's start in the session's clock.
    before = max(e["timestampNs"] for e in mcp.all_events(sid))
    r = poll(mcp, sid, [{"variable": "g_counter"}, {"variable": "g_cfg.max_retries"},
                        {"variable": "g_tempo"}], interval=50, duration=500)
    assert r["polling"] is True and isinstance(r["pollId"], int)
    assert r["variableCount"] == 3
    assert r["intervalMs"] == 50 and r["durationMs"] == 500
    assert r["expectedSamples"] == 10
    assert r["eventType"] == "variable_snapshot"
    assert "variable_snapshot" in r["hint"] and "errors" not in r
    wait_until(lambda: len(snapshots(mcp, sid)) >= 10, T_LONG, what="10 snapshots")
    snaps = snapshots(mcp, sid)
    assert len(snaps) == 10, len(snaps)            # no more once the duration passed
    counters = [s["values"]["g_counter"] for s in snaps]
    assert counters == sorted(counters) and counters[-1] > counters[0], counters
    assert all(s["values"]["g_tempo"] == 120.0 for s in snaps)
    assert all(0 <= s["values"]["g_cfg.max_retries"] < 7 for s in snaps)
    assert all("errors" not in s and "text" not in s for s in snaps)   # summary
    ts = [s["timestampNs"] for s in snaps]
    assert ts == sorted(ts)
    # Every 50 ms on a schedule from the poll's start (no drift): sample k is taken
    # once k intervals have passed, never before. A late sample is not made up by the
    # next (which keeps its own time), so the gap between two can be anything under
    # load: what holds is each sample's distance from the start.
    early = [(k, t - before) for k, t in enumerate(ts) if t - before < k * 50_000_000]
    assert not early, (early, before, ts)
    v = mcp.query(sid, eventType="variable_snapshot", verbose=True, limit=1)["events"][0]
    assert re.match(r"^g_counter=\d+ g_cfg\.max_retries=\d g_tempo=120$", v["text"]), v
    assert v["pid"] == mcp.status(sid)["pid"]
    assert mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_poll_interleaved_with_traced_calls(mcp):
    sid = launch_ticker(mcp)
    mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})
    mcp.wait_events(sid, 2, eventType="function_enter")
    poll(mcp, sid, [{"variable": "g_counter"}], interval=100, duration=30000)

    def interleaved():
        """The first 6 snapshots and the traced calls between them, in time order,
        once there are 10 such calls (about 5 ticks come per sample: how many is the
        machine's speed). Bounded queries, not all_events: the program ticks on, and
        paging through a timeline that grows faster than a starved daemon answers
        (valgrind beside a loaded machine) never ended."""
        snaps = mcp.query(sid, eventType="variable_snapshot", limit=6, verbose=True)["events"]
        if len(snaps) < 6:
            return None
        calls = mcp.query(sid, eventType="function_enter", limit=500, verbose=True,
                          timeFrom=int(snaps[0]["timestampNs"]),
                          timeTo=int(snaps[-1]["timestampNs"]))["events"]
        ev = sorted(snaps + calls, key=lambda e: int(e["timestampNs"]))
        return ev if len(calls) >= 10 else None
    ev = wait_until(interleaved, T_LONG, what="6 snapshots with 10 calls among them")
    mcp.stop(sid)
    # values never go back, and each snapshot follows the ticks that raised the counter
    # to its value: tick(n) finds g_counter at n and raises it, so a snapshot showing v
    # comes after the calls tick(0) .. tick(v - 1) that were recorded
    vals = [e["values"]["g_counter"] for e in ev if e["eventType"] == "variable_snapshot"]
    assert vals == sorted(vals), vals
    for i, e in enumerate(ev):
        if e["eventType"] == "variable_snapshot":
            later = [c["arguments"][0]["value"] for c in ev[i + 1:]
                     if c["eventType"] == "function_enter"]
            assert all(n >= e["values"]["g_counter"] for n in later), (e, later)


def test_stop_ends_the_poll(mcp):
    sid = launch_ticker(mcp)
    poll(mcp, sid, [{"variable": "g_counter"}], interval=50, duration=30000)
    wait_until(lambda: len(snapshots(mcp, sid)) >= 2, T_LONG, what="2 snapshots")
    mcp.stop(sid, retain=True)   # returns at once though 29 s of polling are left
    n = len(snapshots(mcp, sid))
    st = mcp.status(sid)
    assert st["status"] == "stopped"
    assert len(snapshots(mcp, sid)) == n


def test_process_exit_ends_the_poll(mcp):
    # inprogress waits for SIGUSR1, then exits 0: the program ends once the poll runs,
    # when the test says, not after a time the poll must start within.
    p = mcp.launch("inprogress", project=REPO)
    sid = p["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout", text={"contains": "waiting"})
    r = poll(mcp, sid, [{"variable": "entered"}], interval=50, duration=30000)
    assert r["expectedSamples"] == 600
    wait_until(lambda: snapshots(mcp, sid), T_LONG, what="a snapshot")
    os.kill(p["pid"], signal.SIGUSR1)
    st = mcp.wait_ended(sid)
    assert st["status"] == "exited"
    [end] = mcp.query(sid, eventType="process_exit")["events"]
    snaps = snapshots(mcp, sid)
    n = len(snaps)
    assert 1 <= n < 600 and all(s["values"]["entered"] == 1 for s in snaps), snaps
    # none after the exit but the one being taken then (read before, stamped after)
    assert len([s for s in snaps if s["timestampNs"] > end["timestampNs"]]) <= 1, (end, snaps)
    assert stays_true(lambda: len(snapshots(mcp, sid)) == n, 0.3)
    # a new poll on the ended session
    e = mcp.tool_error("debug_memory", {"sessionId": sid, "targets": [{"variable": "entered"}],
                                        "poll": {"intervalMs": 50, "durationMs": 100}})
    assert e.code == "PROCESS_EXITED", e.code


def test_failing_targets_answered_up_front(mcp):
    sid = launch_ticker(mcp)
    r = poll(mcp, sid, [{"variable": "g_counter"}, {"variable": "g_nope"}],
             interval=50, duration=200)
    assert r["variableCount"] == 1
    assert [(x["target"], x["code"]) for x in r["errors"]] == [("g_nope",
                                                                "VARIABLE_NOT_FOUND")]
    wait_until(lambda: len(snapshots(mcp, sid)) >= 4, T_LONG, what="4 snapshots")
    assert all(set(s["values"]) == {"g_counter"} for s in snapshots(mcp, sid))
    e = mcp.tool_error("debug_memory", {"sessionId": sid,
                                        "targets": [{"variable": "g_nope"},
                                                    {"variable": "nope2"}],
                                        "poll": {"intervalMs": 50, "durationMs": 100}})
    assert e.code == "VARIABLE_NOT_FOUND", e.code
    assert "no poll was started" in e.message and "nope2" in e.message, e.message
    mcp.stop(sid)


def test_address_targets(mcp):
    r = mcp.launch("poll_ticker", project=REPO)
    sid = r["sessionId"]
    out = mcp.wait_events(sid, 3, eventType="stdout")["events"]
    addr = re.match(r"^g_counter (0x[0-9a-f]+)$", out[0]["text"]).group(1)
    poll(mcp, sid, [{"address": addr, "type": "i32"}], interval=50, duration=150)
    wait_until(lambda: len(snapshots(mcp, sid)) >= 3, T_LONG, what="3 snapshots")
    s = snapshots(mcp, sid)[0]
    assert len(s["values"]) == 1 and isinstance(list(s["values"].values())[0], int), s
    mcp.stop(sid)


def test_at_most_four_polls(mcp):
    sid = launch_ticker(mcp)
    for _ in range(4):
        poll(mcp, sid, [{"variable": "g_counter"}], interval=1000, duration=30000)
    e = mcp.tool_error("debug_memory", {"sessionId": sid, "targets": [{"variable": "g_counter"}],
                                        "poll": {"intervalMs": 1000, "durationMs": 30000}})
    assert e.code == "LIMIT_EXCEEDED" and "4" in e.message, (e.code, e.message)
    mcp.stop(sid)


@pytest.mark.parametrize("p, words", [
    ({"intervalMs": 10, "durationMs": 1000}, "intervalMs"),
    ({"intervalMs": 6000, "durationMs": 10000}, "intervalMs"),
    ({"intervalMs": 100, "durationMs": 50}, "durationMs"),
    ({"intervalMs": 100, "durationMs": 40000}, "durationMs"),
    ({"intervalMs": 100}, "durationMs"),
    ({"intervalMs": 100, "durationMs": 1000, "count": 3}, "count"),
])
def test_poll_bounds(mcp, p, words):
    sid = launch_ticker(mcp)
    e = mcp.tool_error("debug_memory", {"sessionId": sid, "targets": [{"variable": "g_counter"}],
                                        "poll": p})
    assert e.code == "VALIDATION_ERROR" and words in e.message, (e.code, e.message)
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_poll_target_errors(mcp):
    sid = launch_ticker(mcp)
    p = {"intervalMs": 100, "durationMs": 1000}
    e = mcp.tool_error("debug_memory", {"sessionId": sid, "poll": p,
                                        "targets": [{"variable": "g%d" % i} for i in range(17)]})
    assert e.code == "LIMIT_EXCEEDED", e.code
    e = mcp.tool_error("debug_memory", {"sessionId": sid, "poll": p, "targets": []})
    assert e.code == "VALIDATION_ERROR"
    e = mcp.tool_error("debug_memory", {"sessionId": sid, "poll": p,
                                        "targets": [{"address": "0x1000", "size": 8,
                                                     "type": "bytes"}]})
    assert e.code == "VALIDATION_ERROR" and "bytes" in e.message, e.message
    e = mcp.tool_error("debug_memory", {"sessionId": "nope-2000-01-01-00h00", "poll": p,
                                        "targets": [{"variable": "g_counter"}]})
    assert e.code == "SESSION_NOT_FOUND"
    mcp.stop(sid)


@pytest.mark.valgrind_sample
def test_daemon_shutdown_joins_running_polls(mcp, world):
    """A daemon stopped while polls run ends them at once (under valgrind the harness
    then checks that nothing leaked)."""
    sid = launch_ticker(mcp)
    poll(mcp, sid, [{"variable": "g_counter"}], interval=50, duration=30000)
    poll(mcp, sid, [{"variable": "g_tempo"}], interval=5000, duration=30000)
    wait_until(lambda: len(snapshots(mcp, sid)) >= 3, T_LONG, what="3 snapshots")
    if VALGRIND:
        return  # the harness stops the daemon and checks valgrind's report
    pid = world.daemon_pid()
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not pid_alive(pid), T_SHORT,
               what="the daemon to stop with polls running")
    # At once: the stop woke the 5 s poll, which ended before its next sample was due,
    # and did not run its 30 s (by the daemon's own log: how long the whole exit took
    # is the machine's load).
    log = world.daemon_log()
    started = re.search(r"^(\S+) \d+ info: poll (\d+) of session %s: 1 target\(s\) every "
                        r"5000 ms for 30000 ms$" % re.escape(sid), log, re.M)
    assert started, log
    ended = re.search(r"^(\S+) \d+ info: poll %s of session %s: ended after (\d+) "
                      r"sample\(s\)$" % (started.group(2), re.escape(sid)), log, re.M)
    assert ended and 1 <= int(ended.group(2)) < 6, log
    took = log_time(ended.group(1)) - log_time(started.group(1))
    assert took < 5.0 * int(ended.group(2)), (took, started.group(0), ended.group(0))
