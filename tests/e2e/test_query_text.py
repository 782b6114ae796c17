"""debug_query's text filter (docs/PROTOCOL.md "debug_query"): text.contains (a
case-sensitive substring) and text.matches (a PCRE2 regular expression) over the
text of stdout/stderr lines and exit texts, composed with the other filters, exact
totalCount, and every error the filter defines; plus the eventType names logpoint
and pause in the schema and the validation.

Fixture: output_mix (stdout "out 1", "out 2", an invalid UTF-8 line, a 100 KiB
line of 'x' in two pieces, "out 3", "partial-no-newline"; stderr "err 1".."err 3";
exit code 0)."""

import json
import os
import sqlite3

from conftest import T_LONG, wait_until


def ended_session(mcp):
    sid = mcp.launch("output_mix")["sessionId"]
    mcp.wait_ended(sid)
    # The exit is recorded after the last line: wait until it is queryable.
    wait_until(lambda: mcp.query(sid, eventType="process_exit")["totalCount"] == 1,
               T_LONG, what="the process_exit event of %s" % sid)
    return sid


def texts(q):
    return [e["text"] for e in q["events"]]


def test_text_contains_and_matches(mcp):
    sid = ended_session(mcp)

    q = mcp.query(sid, text={"contains": "out "})
    assert texts(q) == ["out 1", "out 2", "out 3"]
    assert q["totalCount"] == 3 and q["hasMore"] is False
    assert all(e["eventType"] == "stdout" for e in q["events"])

    # Case-sensitive.
    assert mcp.query(sid, text={"contains": "OUT "})["totalCount"] == 0
    q = mcp.query(sid, text={"contains": "err 2"})
    assert [(e["eventType"], e["text"]) for e in q["events"]] == [("stderr", "err 2")]

    # A regular expression, found anywhere in the text; stdout and stderr alike.
    q = mcp.query(sid, text={"matches": "^(out|err) [13]$"})
    assert sorted(texts(q)) == ["err 1", "err 3", "out 1", "out 3"]
    assert q["totalCount"] == 4
    q = mcp.query(sid, text={"matches": r"no-?newline$"})
    assert texts(q) == ["partial-no-newline"]

    # The process_exit text is searched too.
    q = mcp.query(sid, text={"matches": r"exited with code \d+"})
    assert [e["eventType"] for e in q["events"]] == ["process_exit"]
    assert q["events"][0]["exitCode"] == 0

    # The long line's pieces are found, and shown cut in summary as usual.
    q = mcp.query(sid, text={"matches": "^x{1000}"})
    assert q["totalCount"] == 2
    assert all(e.get("textTruncated") is True for e in q["events"])


def test_text_composes_with_other_filters(mcp):
    sid = ended_session(mcp)

    q = mcp.query(sid, eventType="stderr", text={"matches": "^(out|err) [13]$"})
    assert texts(q) == ["err 1", "err 3"] and q["totalCount"] == 2
    q = mcp.query(sid, eventType="stdout", text={"contains": "err"})
    assert q["events"] == [] and q["totalCount"] == 0

    # Paging: totalCount is the exact number of matches, whatever the page.
    q = mcp.query(sid, text={"matches": "^(out|err) "}, limit=2)
    assert len(q["events"]) == 2 and q["hasMore"] is True
    assert q["totalCount"] == 6 and "totalCountIsLowerBound" not in q
    q2 = mcp.query(sid, text={"matches": "^(out|err) "}, limit=2, offset=4)
    assert len(q2["events"]) == 2 and q2["hasMore"] is False and q2["totalCount"] == 6

    # Polling: afterEventId with a text filter gives only the later matches.
    first = mcp.query(sid, text={"contains": "out 1"})["events"][0]["id"]
    q = mcp.query(sid, text={"contains": "out "}, afterEventId=first)
    assert texts(q) == ["out 2", "out 3"]

    # Time bounds: up to the first line's own timestamp, only it.
    t0 = mcp.query(sid, text={"contains": "out 1"})["events"][0]["timestampNs"]
    q = mcp.query(sid, text={"contains": "out "}, timeTo=t0)
    assert texts(q) == ["out 1"]

    # pid: the program's own; another pid matches nothing.
    pid = mcp.status(sid)["pid"]
    assert mcp.query(sid, text={"contains": "err"}, pid=pid)["totalCount"] == 3
    assert mcp.query(sid, text={"contains": "err"}, pid=pid + 100000)["totalCount"] == 0


def test_new_event_types_accepted(mcp):
    sid = ended_session(mcp)
    for t in ("logpoint", "pause"):
        q = mcp.query(sid, eventType=t)
        assert q["events"] == [] and q["totalCount"] == 0
        q = mcp.query(sid, eventType=t, text={"contains": "out"})
        assert q["totalCount"] == 0
    err = mcp.tool_error("debug_query", {"sessionId": sid, "eventType": "breakpoint"})
    assert err.code == "VALIDATION_ERROR"
    assert "logpoint" in err.message and "pause" in err.message

    tools = {t["name"]: t for t in mcp.ch.result("tools/list")["tools"]}
    props = tools["debug_query"]["inputSchema"]["properties"]
    assert {"logpoint", "pause"} <= set(props["eventType"]["enum"])
    assert set(props["text"]["properties"]) == {"contains", "matches"}
    assert props["text"]["additionalProperties"] is False


def expect_error(mcp, sid, text, *needles):
    err = mcp.tool_error("debug_query", {"sessionId": sid, "text": text})
    assert err.code == "VALIDATION_ERROR", (text, err.code, err.message)
    for n in needles:
        assert n in err.message, (text, n, err.message)
    return err


def test_text_errors(mcp):
    sid = ended_session(mcp)

    # A regex PCRE2 refuses: what it said, where, and what to do instead.
    err = expect_error(mcp, sid, {"matches": "out("}, "'text.matches'",
                       "not a valid regular expression", "at byte", "text.contains")
    assert "missing closing parenthesis" in err.message
    expect_error(mcp, sid, {"matches": "[unclosed"}, "'text.matches'", "escape")

    # Exactly one of contains / matches.
    expect_error(mcp, sid, {"contains": "out", "matches": "out"}, "not both",
                 "text.contains", "text.matches")
    expect_error(mcp, sid, {}, "needs contains", "matches")

    # Empty or too long.
    expect_error(mcp, sid, {"contains": ""}, "'text.contains' is empty",
                 "leave out the text filter")
    expect_error(mcp, sid, {"matches": ""}, "'text.matches' is empty")
    expect_error(mcp, sid, {"contains": "a" * 1025}, "'text.contains' is 1025 bytes",
                 "at most 1024")
    expect_error(mcp, sid, {"matches": "a" * 1025}, "'text.matches' is 1025 bytes")
    # 1024 bytes is fine.
    assert mcp.query(sid, text={"contains": "a" * 1024})["totalCount"] == 0

    # Shape: an object of strings, with only those two keys.
    expect_error(mcp, sid, "out", "'text'")
    expect_error(mcp, sid, {"contains": 3}, "'text.contains' must be a string")
    expect_error(mcp, sid, {"regex": "out"}, "unknown field 'regex'", "contains")

    # A pattern that compiles but costs too much on some event's text: told as the
    # pattern's fault, with what to do.
    err = expect_error(mcp, sid, {"matches": "^(x|xx)+(?!)"}, "'text.matches'",
                       "too costly", "text.contains")

    # With function.matches too, a failure names both patterns as suspects.
    err = mcp.tool_error("debug_query", {"sessionId": sid, "text": {"matches": "out"},
                                         "function": {"matches": "("}})
    assert err.code == "VALIDATION_ERROR"
    assert "function name pattern" in err.message
    assert "function.matches or text.matches" in err.message

    # The session still answers after every error.
    assert mcp.query(sid, text={"contains": "out 1"})["totalCount"] == 1


def add_events(mcp, sid, rows):
    """Stores events of types the engine does not produce yet (logpoint, pause) in
    the ended session sid, as the writer would: written to the daemon's database
    directly, with ids above every id it gave. rows: (type, ts_ns, tid, text, data)."""
    db = sqlite3.connect(os.path.join(mcp.world.home, "strobe.db"), timeout=10)
    try:
        key = db.execute("SELECT key FROM sessions WHERE id = ?", (sid,)).fetchone()[0]
        next_id = db.execute("SELECT max(id) FROM events").fetchone()[0] + 1000
        for i, (etype, ts, tid, text, data) in enumerate(rows):
            db.execute("INSERT INTO events(id, session, ts_ns, type, pid, tid, text, data)"
                       " VALUES(?, ?, ?, ?, 1, ?, ?, ?)",
                       (next_id + i, key, ts, etype, tid, text, json.dumps(data)))
        db.execute("UPDATE meta SET value = ? WHERE key = 'next_event_id'",
                   (next_id + len(rows),))
        db.commit()
    finally:
        db.close()


def test_logpoint_and_pause_shapes(mcp):
    sid = ended_session(mcp)
    logpoint = {"breakpointId": 2, "file": "/src/x.c", "line": 42, "function": "compute"}
    pause = {"reason": "breakpoint", "breakpointId": 1, "file": "/src/x.c", "line": 40,
             "function": "compute"}
    add_events(mcp, sid, [
        (9, 10**12, 1234, "i = 7, total = 49", logpoint),
        (10, 10**12 + 1, 1234, "thread 1234 paused at x.c:40 in compute (breakpoint 1)",
         pause),
        (10, 10**12 + 2, 1235, "thread 1235 paused at x.c:41 in compute (step)",
         {"reason": "step", "file": "/src/x.c", "line": 41, "function": "compute"}),
    ])

    q = mcp.query(sid, eventType="logpoint")
    assert q["totalCount"] == 1
    ev = q["events"][0]
    assert {k: ev[k] for k in ("eventType", "text", "threadId", "breakpointId", "file",
                               "line", "function")} == {
        "eventType": "logpoint", "text": "i = 7, total = 49", "threadId": 1234,
        "breakpointId": 2, "file": "/src/x.c", "line": 42, "function": "compute"}
    assert isinstance(ev["id"], str) and isinstance(ev["timestampNs"], int)

    q = mcp.query(sid, eventType="pause")
    assert q["totalCount"] == 2
    first, second = q["events"]
    assert first["reason"] == "breakpoint" and first["breakpointId"] == 1
    assert (first["threadId"], first["file"], first["line"], first["function"]) == \
        (1234, "/src/x.c", 40, "compute")
    assert first["text"].startswith("thread 1234 paused at x.c:40")
    assert second["reason"] == "step" and "breakpointId" not in second
    assert second["threadId"] == 1235

    # The text filter reaches logpoint messages and pause texts.
    q = mcp.query(sid, text={"matches": r"total = \d+"})
    assert [e["eventType"] for e in q["events"]] == ["logpoint"]
    q = mcp.query(sid, text={"contains": "paused at"}, eventType="pause")
    assert [e["threadId"] for e in q["events"]] == [1234, 1235]
    q = mcp.query(sid, text={"contains": "(breakpoint 1)"})
    assert [e["eventType"] for e in q["events"]] == ["pause"]
    # Verbose keeps the same fields (threadId once).
    q = mcp.query(sid, eventType="logpoint", verbose=True)
    assert q["events"][0]["threadId"] == 1234 and q["events"][0]["breakpointId"] == 2
