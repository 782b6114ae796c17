"""No client waits forever (docs/PROTOCOL.md "Transport"): strobectl and the REPL take
an error with id null as the answer to the request in flight, give up on a daemon that
never answers after STROBE_ANSWER_TIMEOUT_MS and say which request timed out, refuse
text that is not UTF-8 naming the byte (exit status 64) instead of sending it, and the
REPL connects anew when the daemon went away under a command. The daemon answers a
line that is not UTF-8 with the request's id.

The fake daemons are python sockets at $STROBE_HOME/strobe.sock: tests that own the
socket are manages_daemon (skipped in valgrind mode)."""

import os
import signal
import socket
import threading

import pytest

from conftest import T_SHORT, fixture_path, pid_alive, wait_until
from repl_util import Repl

BAD = b"t\xff"


class FakeDaemon:
    """Accepts clients on the world's socket; answer(line) gives the line to send back
    for each line read (None: send nothing). Counts the lines it read."""

    def __init__(self, world, answer):
        os.makedirs(world.home, mode=0o700, exist_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(world.sock_path())
        self.sock.listen(4)
        self.answer = answer
        self.lines = []
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn):
        buf = b""
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.lines.append(line)
                out = self.answer(line)
                if out is not None:
                    conn.sendall(out + b"\n")

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.manages_daemon
def test_strobectl_gives_up_on_a_daemon_that_never_answers(world):
    fake = FakeDaemon(world, lambda line: None)
    try:
        r = world.strobectl("sessions", extra_env={"STROBE_ANSWER_TIMEOUT_MS": "1500"})
        assert r.rc == 2, r
        assert r.err.startswith("strobectl: the strobe daemon did not answer initialize "
                                "within 1.5 s: it may be stuck;"), r
        assert "daemon.log" in r.err and "strobe.pid" in r.err, r
        assert len(fake.lines) == 1 and b'"initialize"' in fake.lines[0]
    finally:
        fake.close()


@pytest.mark.manages_daemon
def test_strobectl_takes_an_error_with_id_null_as_its_answer(world):
    """A daemon that cannot read a line answers it with id null (JSON-RPC): strobectl
    had waited for the answer to its id 1 forever."""
    err = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: x"}}'
    fake = FakeDaemon(world, lambda line: err)
    try:
        r = world.strobectl("sessions", timeout=T_SHORT)
        assert r.rc == 1 and r.err == "strobectl: error -32700: Parse error: x\n", r
    finally:
        fake.close()


def test_strobectl_refuses_a_path_argument_or_variable_that_is_not_utf8(world):
    exe = os.path.join(os.fsencode(world.base), BAD)
    with open(fixture_path("hello_exit3"), "rb") as src, open(exe, "wb") as dst:
        dst.write(src.read())
    os.chmod(exe, 0o755)
    for argv in ([b"launch", exe],
                 [b"launch", os.fsencode(fixture_path("hello_exit3")), b"--", BAD],
                 [b"launch", b"--env", b"NAME=" + BAD, os.fsencode(fixture_path("hello_exit3"))]):
        r = world.strobectl(*[os.fsdecode(a) for a in argv], timeout=T_SHORT)
        assert r.rc == 64, (argv, r)
        assert r.err.startswith("strobectl: cannot send debug_launch: byte 0xFF at offset "), r
        assert '\\xFF" is not UTF-8; strobe takes program paths, arguments and environment ' \
            'as UTF-8 text (rename or link the file to a UTF-8 name)' in r.err, r
        assert argv[1] != exe or ', in "%s/t\\xFF"' % world.base in r.err, r
    # nothing was launched, and the daemon serves on
    r = world.strobectl("--json", "sessions")
    assert r.rc == 0 and r.json()["sessions"] == [], r


def test_mcp_answers_a_path_that_is_not_utf8_with_the_request_id(world):
    c = world.mcp()
    line = (b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":'
            b'"debug_launch","arguments":{"command":"/tmp/' + BAD + b'"}}}\n')
    c.ch.send_raw(line)
    msg = c.ch.read_msg(T_SHORT)
    assert msg["id"] == 41 and msg["error"]["code"] == -32700, msg
    assert msg["error"]["message"].startswith(
        'Parse error: byte 0xFF at offset %d, in "/tmp/t\\xFF" is not UTF-8. Send JSON '
        'text in UTF-8' % line.index(b"\xff")), msg
    assert c.ch.request("ping")["result"] == {}


@pytest.mark.manages_daemon
def test_repl_connects_anew_when_the_daemon_went_away(world):
    repl = Repl(world, fixture_path("hello_exit3"))
    try:
        first = repl.cmd("sessions")
        assert "strobe daemon" not in first, first
        pid = world.daemon_pid()
        assert pid and pid_alive(pid)
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(pid), T_SHORT, what="the daemon to die")
        out = repl.cmd("sessions")
        assert "the strobe daemon closed the connection before answering debug_session" \
            in out or "cannot send debug_session" in out, out
        assert "; reconnected to the strobe daemon: run the command again" in out, out
        again = repl.cmd("sessions")
        assert "strobe daemon" not in again, again
        new = world.daemon_pid()
        assert new and new != pid and pid_alive(new)
    finally:
        assert repl.quit() == 0
