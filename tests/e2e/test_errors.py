"""Tool errors (docs/PROTOCOL.md, Tool errors): VALIDATION_ERROR naming the field,
COMMAND_NOT_FOUND, COMMAND_NOT_EXECUTABLE, SESSION_NOT_FOUND, and the shape of a tool
error result."""

import os

import pytest

from conftest import FIXTURES, fixture_path, socket_answers

NO_SUCH = "nosuch-2000-01-01-00h00"


def launch_args(world, **over):
    a = {"command": fixture_path("hello_exit3"), "projectRoot": world.project}
    a.update(over)
    return {k: v for k, v in a.items() if v is not ...}


def assert_validation(mcp, tool, args, field):
    e = mcp.tool_error(tool, args)
    assert e.code == "VALIDATION_ERROR", (tool, args, e.code, e.message)
    assert field in e.message, "message should name %r: %r" % (field, e.message)
    return e


# ---- shape ---------------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_tool_error_shape(mcp):
    r = mcp.call_tool_raw("debug_session", {"action": "status", "sessionId": NO_SUCH})
    assert r["isError"] is True
    assert r["content"][0]["type"] == "text"
    assert r["content"][0]["text"].startswith("SESSION_NOT_FOUND: ")
    err = r["structuredContent"]["error"]
    assert err["code"] == "SESSION_NOT_FOUND"
    assert NO_SUCH in err["message"]
    assert r["content"][0]["text"] == "SESSION_NOT_FOUND: " + err["message"]


# ---- debug_launch validation ----------------------------------------------------------

@pytest.mark.parametrize("over,field", [
    ({"command": ...}, "command"),
    ({"projectRoot": ...}, "projectRoot"),
    ({"command": 42}, "command"),
    ({"command": ""}, "command"),
    ({"command": None}, "command"),
    ({"projectRoot": ["x"]}, "projectRoot"),
    ({"args": "a b"}, "args"),
    ({"args": ["ok", 3]}, "args"),
    ({"args": {"0": "a"}}, "args"),
    ({"cwd": 5}, "cwd"),
    ({"env": ["A=B"]}, "env"),
    ({"env": {"A": 1}}, "env"),
    ({"env": "A=B"}, "env"),
])
def test_launch_validation(mcp, over, field):
    assert_validation(mcp, "debug_launch", launch_args(mcp.world, **over), field)
    assert mcp.sessions() == []


@pytest.mark.valgrind_sample
def test_launch_no_arguments_at_all(mcp):
    e = mcp.tool_error("debug_launch", {})
    assert e.code == "VALIDATION_ERROR"
    assert "command" in e.message or "projectRoot" in e.message


@pytest.mark.valgrind_sample
def test_launch_cwd_missing_dir(mcp):
    e = mcp.tool_error("debug_launch", launch_args(
        mcp.world, cwd=os.path.join(mcp.world.base, "no-such-dir")))
    assert e.code in ("VALIDATION_ERROR", "ATTACH_FAILED"), (e.code, e.message)
    assert "cwd" in e.message or "no-such-dir" in e.message


@pytest.mark.valgrind_sample
def test_command_not_found_absolute(mcp):
    path = os.path.join(mcp.world.base, "does", "not", "exist")
    e = mcp.tool_error("debug_launch", launch_args(mcp.world, command=path))
    assert e.code == "COMMAND_NOT_FOUND"
    assert path in e.message


def test_command_not_found_bare_name(mcp):
    e = mcp.tool_error("debug_launch", launch_args(mcp.world, command="strobe-no-such-cmd-xyz"))
    assert e.code == "COMMAND_NOT_FOUND"
    assert "strobe-no-such-cmd-xyz" in e.message


def test_command_not_found_relative(mcp):
    e = mcp.tool_error("debug_launch", launch_args(mcp.world, command="bin/nothing-here"))
    assert e.code == "COMMAND_NOT_FOUND"


@pytest.mark.valgrind_sample
def test_command_not_executable_file(mcp):
    p = os.path.join(mcp.world.base, "plain.txt")
    with open(p, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(p, 0o644)
    e = mcp.tool_error("debug_launch", launch_args(mcp.world, command=p))
    assert e.code == "COMMAND_NOT_EXECUTABLE"
    assert p in e.message
    assert mcp.sessions() == []


def test_command_not_executable_directory(mcp):
    e = mcp.tool_error("debug_launch", launch_args(mcp.world, command=FIXTURES))
    assert e.code == "COMMAND_NOT_EXECUTABLE"


@pytest.mark.valgrind_sample
def test_command_executable_bit_but_not_a_binary(mcp):
    # a file with the x bit that exec refuses (no shebang, not ELF): either refused
    # up front or ATTACH_FAILED; never a hang, never a crash of the daemon
    p = os.path.join(mcp.world.base, "junk")
    with open(p, "wb") as f:
        f.write(b"\x00\x01\x02 not an executable\n")
    os.chmod(p, 0o755)
    r = mcp.call_tool_raw("debug_launch", launch_args(mcp.world, command=p))
    if r.get("isError"):
        assert r["structuredContent"]["error"]["code"] in (
            "COMMAND_NOT_EXECUTABLE", "ATTACH_FAILED")
    else:
        st = mcp.wait_ended(r["structuredContent"]["sessionId"])
        assert st["status"] in ("exited", "crashed")
    assert socket_answers(mcp.world.home)


# ---- debug_session validation ----------------------------------------------------------

@pytest.mark.parametrize("args,field", [
    ({}, "action"),
    ({"action": "explode"}, "action"),
    ({"action": 1}, "action"),
    ({"action": "status"}, "sessionId"),
    ({"action": "stop"}, "sessionId"),
    ({"action": "delete"}, "sessionId"),
    ({"action": "status", "sessionId": 12}, "sessionId"),
    ({"action": "stop", "sessionId": NO_SUCH, "retain": "yes"}, "retain"),
])
def test_session_validation(mcp, args, field):
    assert_validation(mcp, "debug_session", args, field)


@pytest.mark.valgrind_sample
@pytest.mark.parametrize("action", ["status", "stop", "delete"])
def test_session_not_found(mcp, action):
    e = mcp.tool_error("debug_session", {"action": action, "sessionId": NO_SUCH})
    assert e.code == "SESSION_NOT_FOUND"
    assert NO_SUCH in e.message


@pytest.mark.valgrind_sample
def test_launch_arguments_too_large_for_the_kernel(mcp):
    # One argument above the kernel's 128 KiB per-string limit: execve fails with
    # E2BIG, which is the caller's input, not a ptrace problem.
    e = mcp.tool_error("debug_launch", launch_args(mcp.world, args=["x" * 200000]))
    assert e.code == "VALIDATION_ERROR", (e.code, e.message)
    assert "E2BIG" in e.message and "file" in e.message, e.message
    assert "ptrace" not in e.message
    assert socket_answers(mcp.world.home)


# ---- debug_query validation ----------------------------------------------------------

@pytest.fixture
def ended(mcp):
    sid = mcp.launch("hello_exit3")["sessionId"]
    mcp.wait_ended(sid)
    return sid


@pytest.mark.parametrize("over,field", [
    ({"sessionId": ...}, "sessionId"),
    ({"sessionId": 5}, "sessionId"),
    ({"limit": 0}, "limit"),
    ({"limit": 501}, "limit"),
    ({"limit": -1}, "limit"),
    ({"limit": "10"}, "limit"),
    ({"limit": 1.5}, "limit"),
    ({"offset": -1}, "offset"),
    ({"offset": "0"}, "offset"),
    ({"eventType": "nonsense"}, "eventType"),
    ({"eventType": 3}, "eventType"),
    ({"function": "main"}, "function"),
    ({"verbose": "yes"}, "verbose"),
    ({"pid": "12"}, "pid"),
    ({"afterEventId": {"x": 1}}, "afterEventId"),
    ({"afterEventId": "not-a-number"}, "afterEventId"),
    ({"function": {"matches": "("}}, "function"),
])
def test_query_validation(mcp, ended, over, field):
    a = {"sessionId": ended}
    a.update(over)
    a = {k: v for k, v in a.items() if v is not ...}
    assert_validation(mcp, "debug_query", a, field)


def test_query_limit_bounds_are_accepted(mcp, ended):
    assert len(mcp.query(ended, limit=1)["events"]) == 1
    assert len(mcp.query(ended, limit=500)["events"]) == 3
    assert len(mcp.query(ended, offset=0)["events"]) == 3


@pytest.mark.valgrind_sample
def test_query_session_not_found(mcp):
    e = mcp.tool_error("debug_query", {"sessionId": NO_SUCH})
    assert e.code == "SESSION_NOT_FOUND"
    assert NO_SUCH in e.message


# ---- debug_trace validation ----------------------------------------------------------

@pytest.mark.parametrize("args,field", [
    ({"add": "main"}, "add"),
    ({"add": [1]}, "add"),
    ({"remove": "main"}, "remove"),
    ({"add": ["main"], "serializationDepth": 11}, "serializationDepth"),
    ({"add": ["main"], "serializationDepth": "3"}, "serializationDepth"),
    ({"sessionId": 7, "add": ["main"]}, "sessionId"),
])
def test_trace_validation(mcp, args, field):
    assert_validation(mcp, "debug_trace", args, field)


@pytest.mark.valgrind_sample
def test_daemon_survives_all_errors(mcp):
    pid = mcp.world.daemon_pid()
    for _ in range(3):
        mcp.tool_error("debug_launch", {"command": "/nonexistent", "projectRoot": "/"})
        mcp.tool_error("debug_query", {"sessionId": NO_SUCH})
    assert mcp.world.daemon_pid() == pid
    assert mcp.ch.result("ping") == {}



def _rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


@pytest.mark.parametrize("pattern,why", [
    # glibc's regcomp allocated until the OOM killer came (23 GB) on the first, and
    # took 4.6 s and 1.1 GB on the second.
    ("(((a{1,255}){1,255}){1,255}){1,255}", "too large"),
    ("((a{1,100}){1,100}){1,100}", "too large"),
    ("(" * 60 + "a" + ")" * 60, "parentheses"),
    ("a" * 1025, "limit is 1024"),
])
def test_query_regex_bombs_are_refused_cheaply(mcp, ended, pattern, why):
    pid = mcp.world.daemon_pid()
    before = _rss_kib(pid)
    e = mcp.tool_error("debug_query", {"sessionId": ended, "function": {"matches": pattern}})
    assert e.code == "VALIDATION_ERROR"
    assert "function.matches" in e.message and why in e.message, e.message
    assert _rss_kib(pid) - before < 64 * 1024, "the daemon grew by more than 64 MiB"
    assert mcp.query(ended)["totalCount"] == 3  # and it still serves the session
