"""The daemon's lifecycle: lazy start by `strobe mcp`, files and permissions, the lock
that keeps two daemons from running, idle shutdown, recovery after kill -9 (through a
new proxy and through the same proxy, which restarts the daemon and replays
initialize), stale socket and pid files.

Every test here starts, kills or waits for the daemon itself, so all are marked
manages_daemon and skipped under STROBE_VALGRIND=1 (see conftest.py)."""

import os
import signal
import socket
import stat
import subprocess

import pytest

from conftest import (T_LONG, T_SHORT, is_strobe_process, pid_alive, socket_answers,
                      stays_true, wait_until, STROBE_BIN)

pytestmark = pytest.mark.manages_daemon


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def kill9_daemon(world):
    pid = world.daemon_pid()
    assert pid and pid_alive(pid) and is_strobe_process(pid)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not pid_alive(pid), T_SHORT, what="the killed daemon to go")
    # (pid_alive() waits for every thread: the descriptors are closed by then)
    return pid


def test_lazy_start_files_and_permissions(world):
    assert not os.path.exists(world.home)
    c = world.mcp()
    assert c.init_result["serverInfo"]["name"] == "strobe"
    pid = world.daemon_pid()
    assert pid and pid_alive(pid) and is_strobe_process(pid)
    # the daemon is detached from the proxy: its own session
    assert os.getsid(pid) != os.getsid(c.proc.pid)
    assert mode(world.home) == 0o700
    sock = world.sock_path()
    assert stat.S_ISSOCK(os.lstat(sock).st_mode)
    assert mode(sock) == 0o600
    for name in ("strobe.pid", "strobe.db", "daemon.log", "strobe.lock"):
        p = world.path(name)
        assert os.path.isfile(p), name
        assert os.lstat(p).st_uid == os.getuid()
    with open(world.path("strobe.pid")) as f:
        assert f.read().strip() == str(pid)
    # a tool call works through the lazily started daemon
    assert c.sessions() == []


def test_home_too_open_is_tightened(world):
    os.makedirs(world.home)
    os.chmod(world.home, 0o755)
    c = world.mcp()
    assert c.sessions() == []
    assert mode(world.home) == 0o700


def test_home_symlink_is_refused(world):
    real = os.path.join(world.base, "real-home")
    os.makedirs(real, mode=0o700)
    os.symlink(real, world.home)
    p = subprocess.run([STROBE_BIN, "daemon"], env=world.env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T_SHORT)
    assert p.returncode != 0
    assert p.stderr.strip(), "the refusal should say why on stderr"
    assert not os.path.exists(os.path.join(real, "strobe.sock"))


def test_second_daemon_refuses_to_start(world):
    first = world.start_daemon()
    pid = world.daemon_pid()
    assert pid == first.pid or pid_alive(pid)
    p = subprocess.run([STROBE_BIN, "daemon"], env=world.env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T_SHORT)
    assert p.returncode != 0, "a second daemon started: %r" % (p,)
    msg = (p.stdout + p.stderr).decode(errors="replace")
    assert msg.strip(), "the second daemon should say why it refuses"
    # the first one is untouched and still owns the socket and the pid file
    assert pid_alive(pid)
    assert world.daemon_pid() == pid
    c = world.raw()
    assert c.ch.result("ping") == {}


def test_two_proxies_share_one_daemon(world):
    a = world.mcp()
    pid = world.daemon_pid()
    b = world.mcp()
    assert world.daemon_pid() == pid
    sid = a.launch("hello_exit3")["sessionId"]
    assert b.wait_ended(sid)["exitCode"] == 3


def test_concurrent_autostart_gives_one_daemon(world):
    clients = [world.mcp(initialize=False) for _ in range(4)]
    for c in clients:
        c.ch.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})
    for c in clients:
        resp = c.ch.read_msg(T_LONG)
        assert resp["id"] == 1 and resp["result"]["serverInfo"]["name"] == "strobe", resp
    pid = world.daemon_pid()

    def strobe_daemons():
        return [p for p in os.listdir("/proc") if p.isdigit()
                and is_strobe_process(int(p)) and _env_home(int(p)) == world.home
                and _is_daemon(int(p))]
    # Daemons that lost the lock race exit at once, but exiting takes a moment (a
    # sanitized build checks for leaks first): wait for them to be gone.
    wait_until(lambda: strobe_daemons() == [str(pid)], T_SHORT,
               what="a single daemon (have %r)" % (strobe_daemons(),))


def _env_home(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    for kv in env:
        if kv.startswith(b"STROBE_HOME="):
            return kv[len(b"STROBE_HOME="):].decode()
    return None


def _is_daemon(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")[1:2] == [b"daemon"]
    except OSError:
        return False


def test_idle_shutdown(world):
    c = world.mcp(extra_env={"STROBE_IDLE_TIMEOUT": "2"})
    assert c.sessions() == []
    pid = world.daemon_pid()
    # while a client is connected the daemon stays
    assert stays_true(lambda: pid_alive(pid), 3.0)
    c.close()
    wait_until(lambda: not pid_alive(pid), T_LONG, what="idle shutdown")
    assert not socket_answers(world.home)
    log = world.daemon_log()
    assert log.strip(), "daemon.log is empty"
    # the next client starts a fresh daemon
    c2 = world.mcp()
    assert c2.sessions() == []
    assert world.daemon_pid() != pid


def test_no_idle_shutdown_while_a_session_runs(world):
    c = world.mcp(extra_env={"STROBE_IDLE_TIMEOUT": "2"})
    r = c.launch("sleeper")
    sid = r["sessionId"]
    c.wait_events(sid, 1, eventType="stdout")
    pid = world.daemon_pid()
    c.close()
    assert stays_true(lambda: pid_alive(pid), 4.0), "daemon quit with a live session"
    c2 = world.mcp(extra_env={"STROBE_IDLE_TIMEOUT": "2"})
    assert c2.status(sid)["status"] == "running"
    c2.stop(sid)
    c2.close()
    wait_until(lambda: not pid_alive(pid), T_LONG, what="idle shutdown after the stop")


def test_idle_timeout_default_is_long(world):
    c = world.mcp()
    pid = world.daemon_pid()
    c.close()
    assert stays_true(lambda: pid_alive(pid), 3.0)


def test_sigterm_is_graceful(world):
    c = world.mcp()
    r = c.launch("sleeper")
    c.wait_events(r["sessionId"], 1, eventType="stdout")
    pid = world.daemon_pid()
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not pid_alive(pid), T_SHORT, what="the daemon to exit on SIGTERM")
    # the target does not outlive its daemon
    wait_until(lambda: not pid_alive(r["pid"]), T_SHORT, what="the target to die")
    # the session is recorded as stopped, and its output is kept
    c2 = world.mcp()
    st = c2.status(r["sessionId"])
    assert st["status"] == "stopped"
    assert [e["text"] for e in c2.query(r["sessionId"], eventType="stdout")["events"]] == \
        ["ready"]


def test_kill9_then_new_proxy_keeps_data(world):
    c = world.mcp()
    a = c.launch("hello_exit3")["sessionId"]
    c.wait_ended(a)
    c.stop(a, retain=True)
    b = c.launch("cpp_exit")["sessionId"]
    c.wait_ended(b)
    # under int3s the program dies with its tracer (the fast path's survives it:
    # test_fastpath.py)
    world.write_project_settings({"trace.mode": "int3"})
    run = c.launch("sleeper")
    c.wait_events(run["sessionId"], 1, eventType="stdout")
    c.close()
    old = kill9_daemon(world)
    # the stale socket and pid file are still there
    assert os.path.exists(world.sock_path())
    # the target is not left running without its tracer
    wait_until(lambda: not pid_alive(run["pid"]), T_SHORT, what="the orphaned target to die")

    c2 = world.mcp()
    new = world.daemon_pid()
    assert new != old and pid_alive(new)
    ls = {s["sessionId"]: s for s in c2.sessions()}
    assert {a, b, run["sessionId"]} <= set(ls)
    assert ls[a]["retained"] is True
    assert [e["text"] for e in c2.query(a, eventType="stdout")["events"]] == ["hello"]
    assert c2.status(b)["exitCode"] == 7
    assert [e["text"] for e in c2.query(b, eventType="stderr")["events"]] == ["cerr line"]
    # the session that was running when the daemon died is "stopped"
    st = c2.status(run["sessionId"])
    assert st["status"] == "stopped"
    assert st["endedAt"] is not None
    # and a new launch of the same binary is not refused with SESSION_EXISTS
    r2 = c2.launch("sleeper")
    c2.stop(r2["sessionId"])


def test_kill9_same_proxy_restarts_and_replays_initialize(world):
    c = world.mcp()
    sid = c.launch("hello_exit3")["sessionId"]
    c.wait_ended(sid)
    old = kill9_daemon(world)
    # the next request through the same proxy works: it restarted the daemon and
    # replayed initialize (otherwise tools/call would get -32002)
    ls = c.sessions()
    assert sid in [s["sessionId"] for s in ls]
    new = world.daemon_pid()
    assert new != old and pid_alive(new)
    assert c.proc.poll() is None
    assert [e["text"] for e in c.query(sid, eventType="stdout")["events"]] == ["hello"]
    # twice in a row
    kill9_daemon(world)
    assert c.ch.result("tools/list")["tools"]
    sid2 = c.launch("exit_immediately")["sessionId"]
    assert c.wait_ended(sid2)["exitCode"] == 0


def test_kill9_in_flight_request_gets_retry_error(world):
    c = world.mcp()
    pid = world.daemon_pid()
    # a request the daemon holds while we kill it: send and kill at once
    c.ch.send({"jsonrpc": "2.0", "id": 4242, "method": "tools/call", "params": {
        "name": "debug_session", "arguments": {"action": "list"}}})
    os.kill(pid, signal.SIGKILL)
    resp = c.ch.read_msg(T_LONG)
    assert resp["id"] == 4242, resp
    if "error" in resp:   # it was in flight
        assert resp["error"]["code"] == -32603
        assert "retry" in resp["error"]["message"].lower(), resp
    else:                 # it was answered before the kill
        assert resp["result"]["structuredContent"]["sessions"] == []
    assert c.sessions() == []


def test_stale_socket_and_pid_are_replaced(world):
    os.makedirs(world.home, mode=0o700)
    # a socket file nobody listens on
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(world.sock_path())
    s.close()
    # a pid file naming a process that is gone
    p = subprocess.Popen(["/bin/true"])
    p.wait()
    with open(world.path("strobe.pid"), "w") as f:
        f.write("%d\n" % p.pid)
    assert not socket_answers(world.home)
    c = world.mcp()
    assert c.sessions() == []
    pid = world.daemon_pid()
    assert pid != p.pid and pid_alive(pid) and is_strobe_process(pid)
    assert mode(world.sock_path()) == 0o600


def test_stale_files_after_kill9_strobectl(world):
    world.start_daemon()
    kill9_daemon(world)
    r = world.strobectl("--json", "sessions")
    assert r.rc == 0, r
    assert r.json() == {"sessions": []}
    assert pid_alive(world.daemon_pid())


def test_daemon_log_records_start(world):
    c = world.mcp()
    c.sessions()
    log = world.daemon_log()
    assert str(world.daemon_pid()) in log or "start" in log.lower(), log[:2000]


def _refused_start(world):
    p = subprocess.run([STROBE_BIN, "daemon"], env=world.env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T_SHORT)
    assert p.returncode != 0, "the daemon started"
    return p.stderr.decode(errors="replace")


def test_symlinked_database_is_refused_and_left_alone(world):
    os.makedirs(world.home, mode=0o700)
    victim = os.path.join(world.base, "victim.txt")
    with open(victim, "w") as f:
        f.write("not a database\n")
    os.symlink(victim, world.path("strobe.db"))
    msg = _refused_start(world)
    assert "strobe.db is a symbolic link" in msg and "remove it" in msg, msg
    with open(victim) as f:
        assert f.read() == "not a database\n"
    assert not os.path.exists(victim + "-wal")


def test_symlinked_lock_says_so(world):
    os.makedirs(world.home, mode=0o700)
    os.symlink(os.path.join(world.base, "elsewhere"), world.path("strobe.lock"))
    msg = _refused_start(world)
    assert "strobe.lock is a symbolic link" in msg, msg
    assert "another daemon" not in msg


def test_database_files_are_private(world):
    c = world.mcp()
    sid = c.launch("hello_exit3")["sessionId"]
    c.wait_ended(sid)
    for name in ("strobe.db", "strobe.db-wal", "strobe.db-shm"):
        p = world.path(name)
        assert os.path.isfile(p), name
        assert mode(p) == 0o600, (name, oct(mode(p)))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_database_of_another_user_is_refused(world):
    os.makedirs(world.home, mode=0o700)
    db = world.path("strobe.db")
    with open(db, "w"):
        pass
    os.chown(db, 65534, 65534)
    msg = _refused_start(world)
    assert "belongs to uid 65534" in msg and "move it away" in msg, msg
