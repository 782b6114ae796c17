"""Hostile and odd input (docs/PROTOCOL.md "Input rules"): every byte the daemon sends
is valid UTF-8 JSON whatever the target or the request contains, request ids follow
JSON-RPC, strings with NUL are refused, and numeric query fields are parsed strictly.
The daemon keeps serving after each."""

import os
import shutil

import pytest

from conftest import T_SHORT, fixture_path, wait_until


def raw_line(raw, data):
    raw.ch.send_raw(data if data.endswith(b"\n") else data + b"\n")
    line = raw.ch.read_line(T_SHORT)
    assert line is not None, "connection closed after %r" % data[:200]
    line.decode("utf-8")  # strict: raises on any invalid byte
    return line


def error_of(raw, data):
    import json
    msg = json.loads(raw_line(raw, data))
    assert "error" in msg, msg
    return msg


@pytest.mark.valgrind_sample
def test_non_utf8_request_is_a_parse_error(raw):
    """Answered with the request's id when the line reads as a request (the client
    waiting for it gets it), naming the first bad byte; with id null otherwise."""
    line = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"a\xff\xfe"}}'
    msg = error_of(raw, line)
    assert msg["error"]["code"] == -32700 and msg["id"] == 1, msg
    assert msg["error"]["message"].startswith(
        'Parse error: byte 0xFF at offset %d, in "a\\xFF\\xFE" is not UTF-8.'
        % line.index(b"\xff")), msg
    for bad_id in (b"1.5", b"[1]", b"null"):
        msg = error_of(raw, b'{"jsonrpc":"2.0","id":%s,"method":"ping","params":"\xff"}' % bad_id)
        assert msg["error"]["code"] == -32700 and msg["id"] is None, msg
    msg = error_of(raw, b'{"id":3,"x":"\xff"')  # not JSON either
    assert msg["error"]["code"] == -32700 and msg["id"] is None, msg
    assert raw.ch.request("ping", id=2)["result"] == {}


@pytest.mark.parametrize("id_text", ["1e400", "18446744073709551617", "1.5", "-1e300"])
def test_request_ids_must_be_exact_integers(raw, id_text):
    msg = error_of(raw, b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % id_text.encode())
    assert msg["error"]["code"] == -32600 and "integer" in msg["error"]["message"]
    assert msg["id"] is None


@pytest.mark.parametrize("id_value", [9007199254740992, -9007199254740992, 0, "x\u00e9"])
def test_request_ids_in_range_are_echoed_exactly(raw, id_value):
    assert raw.ch.request("ping", id=id_value)["id"] == id_value


@pytest.mark.valgrind_sample
def test_nul_inside_a_string_is_refused(raw):
    raw.initialize()
    msg = error_of(raw, b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":'
                        b'"debug_session","arguments":{"action":"status","sessionId":'
                        b'"abc\\u0000def"}}}')
    assert msg["error"]["code"] == -32600 and "NUL" in msg["error"]["message"]
    assert msg["id"] == 7
    # An escaped backslash followed by u0000 is text, not NUL.
    ok = error_of(raw, b'{"jsonrpc":"2.0","id":8,"method":"nosuch","params":{"x":"\\\\u0000"}}')
    assert ok["error"]["code"] == -32601


@pytest.fixture
def ended(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(sid)
    return sid


@pytest.mark.parametrize("field,value", [
    ("afterEventId", " 5"), ("afterEventId", "5 "), ("afterEventId", "+5"),
    ("afterEventId", "1.5"), ("afterEventId", 1.5), ("afterEventId", -1),
    ("afterEventId", 2 ** 60), ("afterEventId", "99999999999999999999"),
    ("timeFrom", 2 ** 63), ("timeFrom", -1), ("timeFrom", 1.5), ("timeFrom", "NaN"),
    ("timeFrom", "inf"), ("timeFrom", " 5"), ("timeFrom", "1e3"), ("timeTo", "5 s"),
    ("timeTo", "9223372036854775808"),
])
def test_query_numbers_are_parsed_strictly(mcp, ended, field, value):
    e = mcp.tool_error("debug_query", {"sessionId": ended, field: value})
    assert e.code == "VALIDATION_ERROR" and field in e.message, (e.code, e.message)


@pytest.mark.parametrize("field,value,count", [
    ("afterEventId", "0", 3), ("afterEventId", 0, 3), ("timeFrom", 0, 3),
    ("timeFrom", "-1h", 3), ("timeTo", 2 ** 62, 3),
])
def test_query_numbers_in_range_work(mcp, ended, field, value, count):
    assert len(mcp.query(ended, **{field: value})["events"]) == count


@pytest.mark.valgrind_sample
def test_non_utf8_binary_path_gives_valid_answers(mcp, raw):
    odd = os.path.join(mcp.world.base, b"odd-\xff\xfe".decode("utf-8", "surrogateescape"))
    os.makedirs(odd)
    exe = os.path.join(odd, "hello_exit3")
    shutil.copy(fixture_path("hello_exit3"), exe)
    # The request names the path with \\xNN text: it cannot carry the raw bytes.
    # Launch it through a symlink with a clean name instead, then read the session
    # back: its binary path (resolved by the daemon) holds the raw bytes.
    link = os.path.join(mcp.world.base, "clean-link")
    os.symlink(exe, link)
    sid = mcp.launch(link)["sessionId"]
    mcp.wait_ended(sid)
    raw.initialize()
    for method, params in [("tools/call", {"name": "debug_session",
                                           "arguments": {"action": "list"}}),
                           ("tools/call", {"name": "debug_session",
                                           "arguments": {"action": "status",
                                                         "sessionId": sid}})]:
        import json
        raw.ch.send(dict(jsonrpc="2.0", id=raw.ch.next_id(), method=method, params=params))
        line = raw.ch.read_line(T_SHORT)
        text = line.decode("utf-8")  # strict
        assert "odd-\\\\xFF\\\\xFE" in text, text[:600]
        json.loads(text)


@pytest.mark.valgrind_sample
def test_non_utf8_thread_name_gives_valid_answers(mcp, raw):
    import json
    sid = mcp.launch("odd_names")["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    raw.initialize()
    raw.ch.send(dict(jsonrpc="2.0", id=5, method="tools/call",
                     params={"name": "debug_session",
                             "arguments": {"action": "stacks", "sessionId": sid}}))
    text = raw.ch.read_line(T_SHORT).decode("utf-8")  # strict
    msg = json.loads(text)
    names = [t["name"] for t in msg["result"]["structuredContent"]["threads"]]
    assert names == ["w\\xFF\\xFE"], names
    inner = json.loads(msg["result"]["content"][0]["text"])
    assert inner["threads"][0]["name"] == "w\\xFF\\xFE"
    mcp.stop(sid)


# ---- connections ----------------------------------------------------------------------

MAX_CLIENTS = 128  # DAEMON_MAX_CLIENTS, core/daemon.h


@pytest.mark.valgrind_sample
def test_connection_cap_refuses_clearly_and_recovers(daemon):
    import json
    clients = [daemon.raw() for _ in range(MAX_CLIENTS)]
    for i, c in enumerate(clients):
        assert c.ch.request("ping", id=i)["result"] == {}
    extra = daemon.raw()
    msg = json.loads(extra.ch.read_line(T_SHORT))
    assert msg["error"]["code"] == -32000 and msg["id"] is None
    assert "too many connections" in msg["error"]["message"]
    assert extra.ch.read_line(T_SHORT) is None  # closed after saying why
    clients[0].close()

    def served():
        c = daemon.raw()
        try:
            c.ch.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        except OSError:  # refused and closed already: the old one is not reaped yet
            return False
        msg = c.ch.read_msg(T_SHORT)  # refused: the error, then EOF
        c.close()
        return msg is not None and msg.get("result") == {}
    wait_until(served, T_SHORT, what="a connection served after one closed")


def _cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.manages_daemon  # it runs a daemon of its own, with few descriptors
def test_descriptor_limit_pauses_accepts_without_spinning(world):
    import resource
    import subprocess
    from conftest import STROBE_BIN, socket_answers

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
    os.makedirs(world.home, mode=0o700, exist_ok=True)
    p = subprocess.Popen([STROBE_BIN, "daemon"], env=world.env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, preexec_fn=low_limit)
    world.children.append(p)
    wait_until(lambda: socket_answers(world.home), T_SHORT, what="the daemon socket")
    clients = [world.raw() for _ in range(60)]  # more than the daemon has descriptors for
    wait_until(lambda: "cannot accept connections" in world.daemon_log(), T_SHORT,
               what="the descriptor-limit warning in daemon.log")
    before = _cpu_seconds(p.pid)
    served = sum(1 for c in clients[:5] if c.ch.request("ping", id=1)["result"] == {})
    assert served == 5
    import time
    time.sleep(1.0)  # a measurement window, not a wait for a condition:
    # spinning on accept would burn most of that second; a paused accept burns almost none.
    assert _cpu_seconds(p.pid) - before < 0.5
    for c in clients:
        c.close()
    c = world.raw()
    assert c.ch.request("ping", id=2, timeout=T_SHORT)["result"] == {}


# ---- answer sizes ---------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_status_command_line_is_bounded(mcp):
    args = ["a" * 100000] + ["arg%d" % i for i in range(3000)]
    sid = mcp.launch("hello_exit3", args=args)["sessionId"]
    mcp.wait_ended(sid)
    st = mcp.status(sid)
    cl = st["commandLine"]
    assert cl[1].startswith("a" * 512) and cl[1].endswith("...(99488 more bytes)"), cl[1][-40:]
    assert st["commandLineOmittedArgs"] == 3001 - (len(cl) - 1)
    assert st["commandLineOmittedArgs"] > 2000
    import json
    assert len(json.dumps(st, separators=(",", ":"))) < 16 * 1024


def test_session_list_is_bounded_newest_first(mcp):
    import json
    sids = []
    for _ in range(110):  # one program may run once at a time: each ends before the next
        sid = mcp.launch("hello_exit3")["sessionId"]
        mcp.wait_ended(sid)
        sids.append(sid)
    r = mcp.call_tool("debug_session", {"action": "list"})
    assert len(json.dumps(r, separators=(",", ":"))) < 17 * 1024
    shown = [s["sessionId"] for s in r["sessions"]]
    assert r["omittedSessions"] == 110 - len(shown) > 0
    assert shown[0] == sids[-1]
    assert "debug_session delete" in r["hint"]


# ---- reads of one session never wait on others' writes ---------------------------------

def test_idle_session_answers_while_four_floods_run(mcp):
    """An idle session's status and query answer with its own events while four
    sessions flood the store. That they do not wait behind the floods' writes (they
    did, up to 20 s, before per-session visibility) is a latency: bench/bench_query.c
    measures another session's push + sync + query while 4 sessions flood."""
    floods = []
    for i in range(4):  # one program runs once at a time: four copies
        exe = os.path.join(mcp.world.base, "flood%d" % i)
        shutil.copy(fixture_path("flood"), exe)
        floods.append(mcp.launch(exe, args=["200"])["sessionId"])
    idle = mcp.launch("sleeper")["sessionId"]
    mcp.wait_events(floods[0], 50000, eventType="stdout")  # the floods are in full swing
    for _ in range(5):
        st = mcp.status(idle)
        lines = mcp.query(idle, eventType="stdout")["events"]
        assert st["status"] == "running" and [e["text"] for e in lines] == ["ready"]
    # Each flood stores 50 MiB of 64-byte lines (output.maxBytesPerSession): the
    # answers above came while they were still being written.
    assert mcp.status(floods[0])["totalEvents"] < 800000
    for sid in floods + [idle]:
        mcp.stop(sid)
