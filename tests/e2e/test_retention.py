"""Retention: stored sessions older than retention.maxAgeDays are purged when the
daemon starts (and at every periodic check), and while the database uses more than
retention.maxTotalBytes the oldest ended sessions are purged until it fits; running
sessions are never purged. Invalid retention settings are reported like any other
setting.

Tests that restart the daemon, or need STROBE_RETENTION_INTERVAL_MS in its
environment, are marked manages_daemon (skipped under STROBE_VALGRIND=1)."""

import contextlib
import json
import os
import sqlite3

import pytest

from conftest import T_LONG, kill_pid, pid_alive, wait_until

DAY_MS = 86400 * 1000
MIB = 1024 * 1024


def listed(client):
    return {s["sessionId"]: s for s in client.sessions()}


def write_global_settings(world, settings):
    os.makedirs(world.home, mode=0o700, exist_ok=True)
    with open(world.path("settings.json"), "w") as f:
        json.dump(settings, f)


@contextlib.contextmanager
def db(world):
    """The daemon's database, straight through SQLite; commits on success."""
    con = sqlite3.connect(world.path("strobe.db"), timeout=T_LONG)
    try:
        with con:
            yield con
    finally:
        con.close()


def used_bytes(world):
    """What retention measures: the pages in use, not the file size."""
    with db(world) as con:
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        free = con.execute("PRAGMA freelist_count").fetchone()[0]
        size = con.execute("PRAGMA page_size").fetchone()[0]
    return (pages - free) * size


def events_of(world, key):
    with db(world) as con:
        return con.execute("SELECT count(*) FROM events WHERE session = ?",
                           (key,)).fetchone()[0]


def not_found(client, sid):
    return client.tool_error("debug_query", {"sessionId": sid}).code == "SESSION_NOT_FOUND"


@pytest.mark.manages_daemon
def test_sessions_older_than_max_age_are_purged_at_start(world):
    c = world.mcp()
    old = c.launch("hello_exit3")["sessionId"]
    c.wait_ended(old)
    c.stop(old, retain=True)
    young = c.launch("hello_exit3")["sessionId"]
    c.wait_ended(young)
    c.stop(young, retain=True)
    # ended, never stopped, not retained: age counts the same
    stale = c.launch("cpp_exit")["sessionId"]
    c.wait_ended(stale)
    c.close()
    kill_pid(world.daemon_pid())

    with db(world) as con:
        keys = dict(con.execute("SELECT id, key FROM sessions"))
        for sid, days in ((old, 8), (young, 6), (stale, 8)):
            con.execute("UPDATE sessions SET started_at = started_at - ?1,"
                        " ended_at = ended_at - ?1 WHERE id = ?2", (days * DAY_MS, sid))
    assert events_of(world, keys[old]) == 3

    c2 = world.mcp()
    ls = listed(c2)
    assert old not in ls and stale not in ls
    assert ls[young]["retained"] is True
    assert not_found(c2, old) and not_found(c2, stale)
    assert [e["text"] for e in c2.query(young, eventType="stdout")["events"]] == ["hello"]
    assert events_of(world, keys[old]) == 0 and events_of(world, keys[stale]) == 0
    log = world.daemon_log()
    for sid in (old, stale):
        assert "retention: purged session %s: 8.0 days old" % sid in log, log
    assert "purged session %s" % young not in log


@pytest.mark.manages_daemon
def test_size_cap_purges_oldest_ended_sessions_first(world):
    # One `flood 1` session takes about 2.3 MiB: with a 6 MiB cap, two of them fit,
    # three do not.
    cap = 6 * MIB
    c = world.mcp(extra_env={"STROBE_RETENTION_INTERVAL_MS": "100"})
    sleeper = c.launch("sleeper")["sessionId"]  # the oldest, and running throughout
    c.wait_events(sleeper, 1, eventType="stdout")
    ended = c.launch("flood", args=["1"])["sessionId"]  # ended, never stopped
    c.wait_ended(ended)
    retained = []
    for _ in range(4):
        sid = c.launch("flood", args=["1"])["sessionId"]
        c.wait_ended(sid)
        c.stop(sid, retain=True)
        retained.append(sid)

    # Every check re-reads the settings: the cap applies from the next one. (Set
    # only now, so that no purge frees a session id for a later launch to reuse.)
    write_global_settings(world, {"retention.maxTotalBytes": cap})
    # oldest first, retained or not, but never the running sleeper
    purged = [ended] + retained[:2]
    wait_until(lambda: not set(purged) & set(listed(c)), T_LONG,
               what="the three oldest ended sessions to be purged")
    ls = listed(c)
    assert ls[sleeper]["status"] == "running"
    assert ls[retained[2]]["retained"] is True and ls[retained[3]]["retained"] is True
    assert used_bytes(world) <= cap
    for sid in purged:
        assert not_found(c, sid)
    assert c.status(retained[3])["eventCounts"]["stdout"] == MIB // 64
    log = world.daemon_log()
    for sid in purged:
        assert "retention: purged session %s: the database uses" % sid in log, log
    for sid in (sleeper, retained[2], retained[3]):
        assert "purged session %s:" % sid not in log
    c.stop(sleeper)


@pytest.mark.manages_daemon
def test_invalid_retention_interval_is_logged(world):
    world.start_daemon(extra_env={"STROBE_RETENTION_INTERVAL_MS": "soon"})
    assert "STROBE_RETENTION_INTERVAL_MS=soon is not a number" in world.daemon_log()
    assert pid_alive(world.daemon_pid())


def test_invalid_retention_settings_warn_and_keep_defaults(mcp):
    w = mcp.world
    write_global_settings(w, {"retention.maxAgeDays": 0,
                              "retention.maxTotalBytes": "10GB"})
    w.write_project_settings({"retention.maxAgeDays": 30})
    r = mcp.launch("hello_exit3")
    warnings = r.get("warnings", [])
    assert "setting 'retention.maxAgeDays' must be an integer from 1 to 3650; " \
           "default kept" in warnings, warnings
    assert "setting 'retention.maxTotalBytes' must be an integer from 1048576 to " \
           "1125899906842624; default kept" in warnings, warnings
    assert any(x.startswith("setting 'retention.maxAgeDays' in ") and
               "applies to the whole database" in x for x in warnings), warnings
    mcp.wait_ended(r["sessionId"])


@pytest.mark.manages_daemon
def test_invalid_retention_settings_are_logged_at_start(world):
    write_global_settings(world, {"retention.maxAgeDays": 4000})
    world.start_daemon()
    assert "settings: setting 'retention.maxAgeDays' must be an integer from 1 to 3650" \
        in world.daemon_log()
