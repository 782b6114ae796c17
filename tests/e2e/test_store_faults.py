"""Faults of the store and of the daemon's start, survived and said (docs/PROTOCOL.md,
"The store's faults"):

- a damaged database (not a database at all, or damaged in its event pages) is set
  aside at start, byte for byte, and a fresh one started; initialize's instructions
  and debug_session list name the file it went to;
- a full disk (a 2 MiB tmpfs as STROBE_HOME) is said in every answer while it lasts
  (storeFull), a session whose end the database refused still reads as ended and its
  end is written once there is room, and the note goes when space returns;
- a daemon says how its start goes on the pipe its starter hands it (--ready-fd):
  each long step, then ready; one that cannot start says why, so strobectl prints the
  daemon's log line and exits, and `strobe mcp` answers initialize with a JSON-RPC
  error naming the cause, instead of a 10 s wait or a silent close. "At once" is
  checked by the message (not the 10 s timeout's) and the exit, never by a clock.

Every test starts the daemon itself from a state directory it prepared, so all are
marked manages_daemon (skipped under STROBE_VALGRIND=1). The tmpfs tests need root
and mount(2); they are skipped with the reason where mounting is refused."""

import errno
import hashlib
import os
import select
import signal
import sqlite3
import subprocess

import pytest

from conftest import (STROBE_BIN, T_SHORT, ToolError, kill_pid, pid_alive, socket_answers,
                      wait_until)

pytestmark = pytest.mark.manages_daemon

INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "strobe-e2e", "version": "1"}}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def db_row(path, session_id):
    """(status, pid) of a session as the database file itself has it (not the
    daemon's answer): read-only, through SQLite, beside the running daemon."""
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)
    try:
        return con.execute("SELECT status, pid FROM sessions WHERE id = ?",
                           (session_id,)).fetchone()
    finally:
        con.close()


def mount_tmpfs(path, options):
    """Mounts a tmpfs on path; skips the test when this machine refuses."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root and mount(2)): %s"
                    % p.stdout.decode(errors="replace").strip())


def stop_everything(world):
    """Clients first (a proxy would start a new daemon), then the daemon: nothing may
    hold the mount when it goes."""
    for c in world.clients:
        c.close()
    pid = world.daemon_pid()
    if pid:
        kill_pid(pid)


def unmount(path):
    if subprocess.run(["umount", path]).returncode != 0:
        subprocess.run(["umount", "-l", path])


@pytest.fixture
def small_home(world):
    """STROBE_HOME on a 2 MiB tmpfs of its own; unmounted at teardown."""
    mount_tmpfs(world.home, "size=2m,mode=0700")
    try:
        yield world
    finally:
        stop_everything(world)
        unmount(world.home)


# --------------------------------------------------------------------------------
# a damaged database

def check_set_aside(world, c, original_sha):
    """The answers name the file the damaged database went to, which holds it byte
    for byte, and the fresh database records a new session."""
    listing = c.call_tool("debug_session", {"action": "list"})
    aside = listing.get("storeSetAside")
    assert aside, "debug_session list does not say the database was set aside: %r" % listing
    path = aside["file"]
    assert os.path.dirname(path) == world.home, aside
    assert os.path.basename(path).startswith("strobe.db.damaged-"), aside
    assert path in aside["note"] and "fresh" in aside["note"], aside
    assert path in c.init_result["instructions"], c.init_result
    assert sha256(path) == original_sha, "the damaged database changed when set aside"
    assert path in world.daemon_log(), world.daemon_log()[-2000:]
    sid = c.launch("hello_exit3")["sessionId"]
    c.wait_ended(sid)
    st = c.wait_events(sid, 1, eventType="stderr")
    assert st["totalCount"] >= 1
    # the fresh database holds the new session alone
    assert [s["sessionId"] for s in c.sessions()] == [sid]


def test_a_file_that_is_not_a_database_is_set_aside(world):
    os.makedirs(world.home, mode=0o700)
    db = world.path("strobe.db")
    with open(db, "wb") as f:
        f.write(bytes((i * 131 + 7) % 256 for i in range(8192)))
    original = sha256(db)
    c = world.mcp()
    check_set_aside(world, c, original)


def test_a_database_damaged_in_its_event_pages_is_set_aside(world):
    c = world.mcp()
    old = c.launch("hello_exit3")["sessionId"]
    c.wait_ended(old)
    c.wait_events(old, 1, eventType="stderr")
    stop_everything(world)  # SIGTERM: the daemon folds its WAL into the file
    db = world.path("strobe.db")
    con = sqlite3.connect(db)
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'").fetchone()[0]
    page = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * page)
        f.write(b"\xa5" * 512)
    damaged = sha256(db)
    c = world.mcp()
    check_set_aside(world, c, damaged)


# --------------------------------------------------------------------------------
# a full disk

def fill(path):
    """Writes path until the file system has no room left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)


def test_a_full_disk_is_said_and_its_recovery_too(small_home):
    world = small_home
    c = world.mcp()
    sid = c.launch("sleeper")["sessionId"]
    pid = c.status(sid)["pid"]
    c.wait_events(sid, 1, eventType="stdout")  # "ready" is stored
    db = world.path("strobe.db")
    # The WAL folded into the file and emptied, then no room at all: the next write
    # of any size fails (a WAL with room left from earlier commits would take a
    # small one).
    con = sqlite3.connect(db, timeout=10)
    wait_until(lambda: con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0,
               T_SHORT, what="the WAL checkpointed and emptied")
    con.close()
    filler = os.path.join(world.home, "filler")
    fill(filler)

    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not pid_alive(pid), T_SHORT, what="the target to die")
    st = c.wait_ended(sid)  # the database refused its end: the answer has it anyway
    assert st["status"] == "crashed" and st["signal"] == "SIGKILL", st
    assert db_row(db, sid)[0] == "running", "the end reached a full disk's database?"
    assert "is full" in st.get("storeFull", "") and db in st["storeFull"], st
    for answer in (c.call_tool("debug_session", {"action": "list"}),
                   c.query(sid, eventType="stdout"),
                   c.call_tool("debug_trace", {})):
        assert "is full" in answer.get("storeFull", ""), answer
    listed = [s for s in c.sessions() if s["sessionId"] == sid]
    assert listed and listed[0]["status"] == "crashed", listed
    err = pytest.raises(ToolError, c.launch, "hello_exit3").value
    assert err.code == "STORE_FULL" and db in err.message, (err.code, err.message)

    os.unlink(filler)  # space returns
    wait_until(lambda: "storeFull" not in c.call_tool("debug_session", {"action": "list"}),
               T_SHORT, what="the full-disk note to go")
    wait_until(lambda: db_row(db, sid)[0] == "crashed", T_SHORT,
               what="the refused end to be written")
    assert db_row(db, sid)[1] == pid
    st = c.status(sid)
    assert st["status"] == "crashed" and "storeFull" not in st, st
    new = c.launch("hello_exit3")["sessionId"]
    c.wait_ended(new)
    q = c.wait_events(new, 1, eventType="stderr")
    assert "storeFull" not in q, q
    assert "lostEvents" not in c.status(new)


# --------------------------------------------------------------------------------
# a daemon that cannot start

def starter_lines(world, fd):
    """What a daemon says on its --ready-fd pipe, up to its end of file."""
    data = b""
    while True:
        ready, _, _ = select.select([fd], [], [], T_SHORT)
        assert ready, "the daemon said nothing for %s s: %r" % (T_SHORT, data)
        chunk = os.read(fd, 4096)
        if not chunk:
            return data.decode().splitlines()
        data += chunk


def test_the_starter_hears_each_step_then_ready(world):
    r, w = os.pipe()
    p = subprocess.Popen([STROBE_BIN, "daemon", "--ready-fd", str(w)], env=world.env,
                         pass_fds=(w,), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    world.children.append(p)
    os.close(w)
    try:
        # the end of file comes right after "ready": nothing else holds the pipe
        lines = starter_lines(world, r)
    finally:
        os.close(r)
    assert lines[0] == "wait checking the database %s" % world.path("strobe.db"), lines
    assert lines[-1] == "ready", lines
    assert all(line.startswith("wait ") for line in lines[:-1]), lines
    assert socket_answers(world.home) and p.poll() is None

def newer_database(world):
    os.makedirs(world.home, mode=0o700)
    con = sqlite3.connect(world.path("strobe.db"))
    con.execute("CREATE TABLE x(a)")
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    return "schema version 99"


def read_only_home(world):
    mount_tmpfs(world.home, "ro,size=1m,mode=0700")
    return "Read-only file system"


@pytest.mark.parametrize("make_fault", [newer_database, read_only_home],
                         ids=["store_unopenable", "home_unwritable"])
def test_a_daemon_that_cannot_start_says_why_at_once(world, make_fault):
    cause = make_fault(world)
    try:
        r = world.strobectl("sessions")
        assert r.rc == 2, r
        prefix = "strobectl: the strobe daemon could not start: "
        assert r.err.startswith(prefix) and cause in r.err, r
        assert "did not accept connections" not in r.err, r
        sentence = r.err[len(prefix):].split(" (log: ")[0].strip()
        if os.path.exists(world.path("daemon.log")):
            assert sentence in world.daemon_log(), (sentence, world.daemon_log()[-2000:])

        c = world.mcp(initialize=False)
        resp = c.ch.request("initialize", INIT)
        assert "error" in resp, resp
        assert resp["error"]["code"] == -32603, resp
        assert cause in resp["error"]["message"], resp
        assert "could not start" in resp["error"]["message"], resp
        # the proxy stays to answer, and goes when its client does
        assert c.proc.poll() is None
        c.close()
        assert c.proc.returncode == 0
        assert not world.daemon_pid()
    finally:
        stop_everything(world)
        if make_fault is read_only_home:
            unmount(world.home)
