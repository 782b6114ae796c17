"""JSON-RPC framing and the MCP lifecycle (docs/PROTOCOL.md: Transport, MCP lifecycle,
Protocol errors), spoken directly on the daemon's socket and through `strobe mcp`."""

import json

import pytest

from conftest import T_SHORT, pid_alive, socket_answers

FOUR_TOOLS = {"debug_launch", "debug_trace", "debug_query", "debug_session"}


def err_of(resp):
    assert "error" in resp, "expected a JSON-RPC error, got %r" % (resp,)
    assert "result" not in resp, resp
    assert resp.get("jsonrpc") == "2.0", resp
    e = resp["error"]
    assert isinstance(e.get("code"), int) and isinstance(e.get("message"), str) and e["message"], e
    return e


def send_line(raw, line):
    raw.ch.send_raw(line if line.endswith("\n") else line + "\n")
    msg = raw.ch.read_msg(T_SHORT)
    assert msg is not None, "connection closed after %r" % line[:200]
    return msg


# ---- initialize ------------------------------------------------------------------

@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_initialize_echoes_supported_version(raw, version):
    r = raw.ch.result("initialize", {"protocolVersion": version, "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}})
    assert r["protocolVersion"] == version
    assert r["serverInfo"]["name"] == "strobe"
    assert isinstance(r["serverInfo"]["version"], str) and r["serverInfo"]["version"]
    assert r["capabilities"]["tools"] == {"listChanged": False}


@pytest.mark.valgrind_sample
def test_initialize_unsupported_version_gets_newest(raw):
    r = raw.ch.result("initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}})
    assert r["protocolVersion"] == "2025-06-18"


@pytest.mark.valgrind_sample
def test_ping_before_and_after_initialize(raw):
    assert raw.ch.result("ping") == {}
    raw.initialize()
    assert raw.ch.result("ping") == {}


def test_response_echoes_string_id(raw):
    resp = raw.ch.request("ping", id="abc-1")
    assert resp == {"jsonrpc": "2.0", "id": "abc-1", "result": {}}


@pytest.mark.parametrize("method,params", [
    ("tools/list", None),
    ("tools/call", {"name": "debug_session", "arguments": {"action": "list"}}),
])
def test_request_before_initialize_is_minus_32002(raw, method, params):
    resp = raw.ch.request(method, params)
    assert err_of(resp)["code"] == -32002
    # and after initialize the same request works
    raw.initialize()
    resp = raw.ch.request(method, params)
    assert "result" in resp, resp


@pytest.mark.valgrind_sample
def test_tools_list_has_the_four_tools_with_schemas(raw):
    raw.initialize()
    tools = raw.ch.result("tools/list")["tools"]
    by_name = {t["name"]: t for t in tools}
    assert FOUR_TOOLS <= set(by_name), sorted(by_name)
    for name in FOUR_TOOLS:
        t = by_name[name]
        assert isinstance(t.get("description"), str) and len(t["description"]) > 20, t
        schema = t["inputSchema"]
        assert schema["type"] == "object", schema
        assert isinstance(schema.get("properties"), dict), schema
    launch = by_name["debug_launch"]["inputSchema"]
    assert {"command", "projectRoot"} <= set(launch.get("required", []))
    assert {"command", "projectRoot", "args", "cwd", "env"} <= set(launch["properties"])
    assert "sessionId" in by_name["debug_query"]["inputSchema"].get("required", [])
    assert "action" in by_name["debug_session"]["inputSchema"].get("required", [])
    assert set(by_name["debug_session"]["inputSchema"]["properties"]["action"]["enum"]) == \
        {"status", "stop", "list", "delete", "stacks"}


# An agent loads the whole tool list into its context at every start: it stays within
# 16 KiB as tools are added (issue 28): descriptions teach the workflow once, schemas
# say nothing twice.
TOOLS_LIST_MAX_BYTES = 16384


def test_tools_list_fits_16_kib(mcp):
    """The tools/list answer as `strobe mcp` writes it (one compact line and its
    newline, as an agent's client reads it), with the size of each tool on failure."""
    mcp.ch.send({"jsonrpc": "2.0", "id": 77, "method": "tools/list"})
    line = mcp.ch.read_line(T_SHORT)
    resp = json.loads(line)
    assert resp.get("id") == 77, resp
    size = len(line) + 1
    tools = resp["result"]["tools"]
    per_tool = ["%-18s %6d" % (t["name"], len(json.dumps(t, separators=(",", ":"),
                                                           ensure_ascii=False).encode()))
                for t in tools]
    report = "tools/list is %d bytes (limit %d):\n%s" % (
        size, TOOLS_LIST_MAX_BYTES, "\n".join(per_tool))
    print(report)
    assert size <= TOOLS_LIST_MAX_BYTES, report


def test_notification_gets_no_response(raw):
    raw.initialize()
    raw.ch.notify("notifications/initialized")
    raw.ch.notify("notifications/cancelled", {"requestId": 99})
    raw.ch.notify("some/unknown/notification")
    # the next line on the wire is the ping's answer, nothing for the notifications
    raw.ch.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    assert raw.ch.read_msg(T_SHORT) == {"jsonrpc": "2.0", "id": 7, "result": {}}


# ---- protocol errors ---------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "{not json",
    '{"jsonrpc":"2.0","id":1,"method":"ping"',
    "\x01\x02garbage",
    '{"jsonrpc":"2.0","id":1,"method":"ping"}}',
])
def test_malformed_json_is_minus_32700_with_null_id(raw, line):
    resp = send_line(raw, line)
    assert err_of(resp)["code"] == -32700
    assert "id" in resp and resp["id"] is None, resp
    # the connection is still usable
    assert raw.ch.result("ping") == {}


@pytest.mark.parametrize("line", [
    "[1,2,3]",
    '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    '"just a string"',
    "42",
    "null",
    '{"jsonrpc":"1.0","id":1,"method":"ping"}',
    '{"id":1,"method":"ping"}',
    '{"jsonrpc":2.0,"id":1,"method":"ping"}',
    '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    '{"jsonrpc":"2.0","id":[1],"method":"ping"}',
    '{"jsonrpc":"2.0","id":1,"method":42}',
    '{"jsonrpc":"2.0","id":1}',
])
def test_invalid_request_is_minus_32600(raw, line):
    resp = send_line(raw, line)
    assert err_of(resp)["code"] == -32600, (line, resp)
    assert raw.ch.result("ping") == {}


@pytest.mark.valgrind_sample
def test_invalid_request_echoes_a_valid_id(raw):
    resp = send_line(raw, '{"jsonrpc":"1.0","id":31,"method":"ping"}')
    assert err_of(resp)["code"] == -32600
    assert resp["id"] == 31


@pytest.mark.valgrind_sample
def test_unknown_method_is_minus_32601(raw):
    raw.initialize()
    resp = raw.ch.request("no/such/method", {}, id=55)
    assert err_of(resp)["code"] == -32601
    assert resp["id"] == 55
    # before initialize as well (it is not a known method either way)
    raw2 = raw.world.raw()
    resp = raw2.ch.request("resources/list", {}, id=56)
    assert err_of(resp)["code"] in (-32601, -32002), resp


@pytest.mark.parametrize("params", [[], "x", 5, [{"name": "debug_session"}]])
def test_tools_call_params_not_object_is_minus_32602(raw, params):
    raw.initialize()
    resp = raw.ch.request("tools/call", params)
    assert err_of(resp)["code"] == -32602


@pytest.mark.parametrize("params", [{}, {"name": 5}, {"name": None}, {"arguments": {}}])
def test_tools_call_without_string_name_is_minus_32602(raw, params):
    raw.initialize()
    resp = raw.ch.request("tools/call", params)
    assert err_of(resp)["code"] == -32602


@pytest.mark.valgrind_sample
def test_unknown_tool_is_minus_32602_unknown_tool(raw):
    raw.initialize()
    resp = raw.ch.request("tools/call", {"name": "debug_teleport", "arguments": {}})
    e = err_of(resp)
    assert e["code"] == -32602
    assert e["data"]["code"] == "UNKNOWN_TOOL"
    assert "debug_teleport" in e["message"]


def test_tools_call_arguments_not_object(raw):
    raw.initialize()
    resp = raw.ch.request("tools/call", {"name": "debug_session", "arguments": [1]})
    # a bad arguments value is either a -32602 or a VALIDATION_ERROR tool result
    if "error" in resp:
        assert resp["error"]["code"] == -32602
    else:
        r = resp["result"]
        assert r["isError"] is True
        assert r["structuredContent"]["error"]["code"] == "VALIDATION_ERROR"


@pytest.mark.valgrind_sample
def test_line_over_1mib_is_minus_32600_and_connection_survives(raw):
    raw.initialize()
    big = '{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"' + \
          "x" * (1024 * 1024 + 100) + '"}}\n'
    raw.ch.send_raw(big)
    resp = raw.ch.read_msg(T_SHORT)
    assert resp is not None, "connection closed after an overlong line"
    assert err_of(resp)["code"] == -32600
    # the rest of the long line was discarded: the next request is answered normally
    assert raw.ch.request("ping", id=10) == {"jsonrpc": "2.0", "id": 10, "result": {}}
    assert raw.ch.result("tools/list")["tools"]


def test_line_just_under_1mib_is_accepted(raw):
    pad = "y" * (1024 * 1024 - 200)
    line = '{"jsonrpc":"2.0","id":11,"method":"ping","params":{"pad":"%s"}}\n' % pad
    assert len(line) < 1024 * 1024
    raw.ch.send_raw(line)
    assert raw.ch.read_msg(T_SHORT) == {"jsonrpc": "2.0", "id": 11, "result": {}}


@pytest.mark.valgrind_sample
def test_many_requests_in_one_write_all_answered(raw):
    raw.initialize()
    batch = "".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) + "\n"
                    for i in range(1, 51))
    raw.ch.send_raw(batch)
    ids = []
    for _ in range(50):
        m = raw.ch.read_msg(T_SHORT)
        assert m["result"] == {}
        ids.append(m["id"])
    assert sorted(ids) == list(range(1, 51))


def test_request_split_across_writes(raw):
    msg = '{"jsonrpc":"2.0","id":77,"method":"ping"}\n'
    for part in (msg[:5], msg[5:20], msg[20:]):
        raw.ch.send_raw(part)
    assert raw.ch.read_msg(T_SHORT) == {"jsonrpc": "2.0", "id": 77, "result": {}}


@pytest.mark.valgrind_sample
def test_client_disconnect_mid_request_daemon_stays_up(daemon):
    pid = daemon.daemon_pid()
    # 1. half a line, then hang up
    c1 = daemon.raw()
    c1.ch.send_raw('{"jsonrpc":"2.0","id":1,"method":"pi')
    c1.close()
    # 2. a full tool call, then hang up before the answer is read
    c2 = daemon.raw()
    c2.initialize()
    c2.ch.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "debug_session", "arguments": {"action": "list"}}})
    c2.close()
    # 3. a launch, then hang up at once
    c3 = daemon.raw()
    c3.initialize()
    c3.ch.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "debug_launch", "arguments": {
                    "command": "/bin/true", "projectRoot": daemon.project}}})
    c3.close()
    # 4. half of an overlong line
    c4 = daemon.raw()
    c4.ch.send_raw("x" * (300 * 1024))
    c4.close()
    c5 = daemon.raw()
    assert c5.ch.result("ping") == {}
    c5.initialize()
    assert isinstance(c5.call_tool("debug_session", {"action": "list"})["sessions"], list)
    assert daemon.daemon_pid() == pid and pid_alive(pid)
    assert socket_answers(daemon.home)


@pytest.mark.valgrind_sample
def test_many_concurrent_connections(daemon):
    clients = [daemon.raw() for _ in range(20)]
    for i, c in enumerate(clients):
        c.ch.send({"jsonrpc": "2.0", "id": i, "method": "ping"})
    for i, c in enumerate(clients):
        assert c.ch.read_msg(T_SHORT) == {"jsonrpc": "2.0", "id": i, "result": {}}


# ---- the same through the stdio proxy ----------------------------------------------

def test_proxy_initialize_and_ping(world):
    c = world.mcp(initialize=False)
    r = c.initialize("2024-11-05")
    assert r["protocolVersion"] == "2024-11-05"
    assert r["serverInfo"]["name"] == "strobe"
    assert c.ch.result("ping") == {}
    names = {t["name"] for t in c.ch.result("tools/list")["tools"]}
    assert FOUR_TOOLS <= names


@pytest.mark.valgrind_sample
def test_proxy_forwards_protocol_errors(world):
    c = world.mcp(initialize=False)
    c.ch.send_raw("{oops\n")
    resp = c.ch.read_msg(T_SHORT)
    assert err_of(resp)["code"] == -32700 and resp["id"] is None
    resp = c.ch.request("tools/list")
    assert err_of(resp)["code"] == -32002
    c.initialize()
    resp = c.ch.request("nope")
    assert err_of(resp)["code"] == -32601
    resp = c.ch.request("tools/call", {"name": "nope", "arguments": {}})
    e = err_of(resp)
    assert e["code"] == -32602 and e["data"]["code"] == "UNKNOWN_TOOL"


def test_proxy_overlong_line(world):
    c = world.mcp()
    c.ch.send_raw('{"jsonrpc":"2.0","id":5,"method":"ping","params":{"p":"' +
                  "z" * (1024 * 1024 + 10) + '"}}\n')
    resp = c.ch.read_msg(T_SHORT)
    assert err_of(resp)["code"] == -32600
    assert c.ch.request("ping", id=6) == {"jsonrpc": "2.0", "id": 6, "result": {}}


def test_proxy_exits_when_stdin_closes(world):
    c = world.mcp()
    c.proc.stdin.close()
    assert c.proc.wait(timeout=T_SHORT) == 0
    # the daemon outlives its proxy
    assert socket_answers(world.home)
