"""Hostile and odd input (docs/PROTOCOL.md "Input rules"): every byte the daemon sends
is valid UTF-8 JSON whatever the target or the request contains, request ids follow
JSON-RPC, strings with NUL are refused, and numeric query fields are parsed strictly.
The daemon keeps serving after each."""

import os
import shutil

import pytest

from conftest import T_SHORT, fixture_path


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


def test_non_utf8_request_is_a_parse_error(raw):
    msg = error_of(raw, b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe"}}')
    assert msg["error"]["code"] == -32700 and "UTF-8" in msg["error"]["message"]
    assert msg["id"] is None
    assert raw.ch.request("ping", id=2)["result"] == {}


@pytest.mark.parametrize("id_text", ["1e400", "18446744073709551617", "1.5", "-1e300"])
def test_request_ids_must_be_exact_integers(raw, id_text):
    msg = error_of(raw, b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % id_text.encode())
    assert msg["error"]["code"] == -32600 and "integer" in msg["error"]["message"]
    assert msg["id"] is None


@pytest.mark.parametrize("id_value", [9007199254740992, -9007199254740992, 0, "x\u00e9"])
def test_request_ids_in_range_are_echoed_exactly(raw, id_value):
    assert raw.ch.request("ping", id=id_value)["id"] == id_value


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
