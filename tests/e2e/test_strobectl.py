"""strobectl: the same scenarios through the command-line client, human and --json
output, exit codes (0 ok, 1 tool/daemon error with the error code printed, 64 usage
error) as in its --help."""

import os
import re

import pytest

from conftest import VALGRIND, T_LONG, fixture_path, pid_alive, wait_until


def ctl_json(world, *args):
    r = world.strobectl("--json", *args)
    assert r.rc == 0, r
    return r.json()


def launch_json(world, fixture, *args, project=None):
    res = ctl_json(world, "launch", "--project-root", project or world.project,
                   fixture_path(fixture), *args)
    world.target_pids.add(res["pid"])
    return res


def wait_ended_ctl(world, sid):
    def ended():
        st = ctl_json(world, "status", sid)
        return st if st["status"] != "running" else None
    return wait_until(ended, T_LONG, what="session %s to end (strobectl)" % sid)


@pytest.mark.valgrind_sample
def test_done_when_json(world):
    res = launch_json(world, "hello_exit3")
    sid = res["sessionId"]
    assert sid.startswith("hello_exit3-")
    assert isinstance(res["pid"], int)
    st = wait_ended_ctl(world, sid)
    assert st["status"] == "exited" and st["exitCode"] == 3
    q = ctl_json(world, "query", sid, "--type", "stdout")
    assert q["totalCount"] == 1
    assert [(e["eventType"], e["text"]) for e in q["events"]] == [("stdout", "hello")]
    q = ctl_json(world, "query", sid, "--type", "stderr")
    assert [(e["eventType"], e["text"]) for e in q["events"]] == [("stderr", "oops")]
    q = ctl_json(world, "query", sid, "--type", "process_exit")
    assert len(q["events"]) == 1 and q["events"][0]["exitCode"] == 3
    sess = ctl_json(world, "sessions")["sessions"]
    assert [s["sessionId"] for s in sess] == [sid]
    assert sess[0]["status"] == "exited" and sess[0]["exitCode"] == 3


def test_done_when_human(world):
    r = world.strobectl("launch", "--project-root", world.project, fixture_path("hello_exit3"))
    assert r.rc == 0, r
    m = re.search(r"hello_exit3-\d{4}-\d{2}-\d{2}-\d{2}h\d{2}(-\d+)?", r.out)
    assert m, r
    sid = m.group(0)
    pid_m = re.search(r"\b(\d{2,})\b", r.out.replace(sid, ""))
    assert pid_m, "launch should print the pid: %r" % r.out

    def ended():
        s = world.strobectl("status", sid)
        assert s.rc == 0, s
        return s if "running" not in s.out else None
    st = wait_until(ended, T_LONG, what="human status to leave running")
    assert "exited" in st.out, st
    assert re.search(r"\b3\b", st.out), st

    q = world.strobectl("query", sid, "--type", "stdout")
    assert q.rc == 0, q
    assert "hello" in q.out and "oops" not in q.out, q
    q = world.strobectl("query", sid, "--type", "stderr")
    assert q.rc == 0 and "oops" in q.out and "hello" not in q.out, q
    q = world.strobectl("query", sid)
    assert q.rc == 0, q
    assert "hello" in q.out and "oops" in q.out and "process_exit" in q.out, q
    ls = world.strobectl("sessions")
    assert ls.rc == 0 and sid in ls.out and "exited" in ls.out, ls


def test_launch_args_env_cwd(world):
    d = os.path.join(world.base, "wd")
    os.makedirs(d)
    res = ctl_json(world, "launch", "--project-root", world.project, "--cwd", d,
                   "--env", "STROBE_TEST_VAR=x=y", fixture_path("args_env_cwd"),
                   "--", "--flag", "two words")
    world.target_pids.add(res["pid"])
    wait_ended_ctl(world, res["sessionId"])
    q = ctl_json(world, "query", res["sessionId"], "--type", "stdout")
    assert [e["text"] for e in q["events"]] == [
        "argv[1]=--flag", "argv[2]=two words", "env STROBE_TEST_VAR=x=y",
        "cwd=" + os.path.realpath(d)]


def test_launch_default_project_root_is_cwd(world):
    r = world.strobectl("--json", "launch", fixture_path("hello_exit3"))
    assert r.rc == 0, r
    sid = r.json()["sessionId"]
    st = wait_ended_ctl(world, sid)
    assert os.path.realpath(st["projectRoot"]) == os.path.realpath(os.getcwd())


@pytest.mark.valgrind_sample
def test_query_limit_offset_after(world):
    res = launch_json(world, "sleeper", "1")
    sid = res["sessionId"]
    wait_ended_ctl(world, sid)
    q = ctl_json(world, "query", sid, "--limit", "1")
    assert q["totalCount"] == 3 and len(q["events"]) == 1 and q["hasMore"] is True
    assert q["events"][0]["text"] == "ready"
    q2 = ctl_json(world, "query", sid, "--offset", "1", "--limit", "1")
    assert q2["events"][0]["text"] == "done"
    q3 = ctl_json(world, "query", sid, "--after", q["lastEventId"])
    assert [e["eventType"] for e in q3["events"]] == ["stdout", "process_exit"]


def test_stop_retain_and_delete(world):
    res = launch_json(world, "sleeper")
    sid = res["sessionId"]
    wait_until(lambda: ctl_json(world, "query", sid, "--type", "stdout")["totalCount"] == 1,
               T_LONG, what="ready line")
    st = ctl_json(world, "stop", sid, "--retain")
    assert st["success"] is True and st["retained"] is True and st["eventsCollected"] >= 1
    wait_until(lambda: not pid_alive(res["pid"]), T_LONG, what="target killed")
    st = ctl_json(world, "status", sid)
    assert st["status"] == "stopped" and st["retained"] is True
    d = ctl_json(world, "delete", sid)
    assert d == {"success": True, "sessionId": sid}
    assert ctl_json(world, "sessions")["sessions"] == []


def test_stop_human(world):
    res = launch_json(world, "sleeper")
    r = world.strobectl("stop", res["sessionId"])
    assert r.rc == 0, r
    wait_until(lambda: not pid_alive(res["pid"]), T_LONG, what="target killed")
    r = world.strobectl("status", res["sessionId"])
    assert r.rc == 1 and "SESSION_NOT_FOUND" in r.out + r.err, r


def test_error_exit_codes(world):
    for args in (["status", "nosuch-2000-01-01-00h00"],
                 ["--json", "status", "nosuch-2000-01-01-00h00"],
                 ["query", "nosuch-2000-01-01-00h00"],
                 ["stop", "nosuch-2000-01-01-00h00"],
                 ["delete", "nosuch-2000-01-01-00h00"]):
        r = world.strobectl(*args)
        assert r.rc == 1, r
        assert "SESSION_NOT_FOUND" in r.out + r.err, r
    r = world.strobectl("launch", "--project-root", world.project,
                        os.path.join(world.base, "missing-binary"))
    assert r.rc == 1 and "COMMAND_NOT_FOUND" in r.out + r.err, r
    r = world.strobectl("launch", "--project-root", world.project, world.base)
    assert r.rc == 1 and "COMMAND_NOT_EXECUTABLE" in r.out + r.err, r


def test_json_error_output(world):
    r = world.strobectl("--json", "status", "nosuch-2000-01-01-00h00")
    assert r.rc == 1, r
    assert "SESSION_NOT_FOUND" in r.out + r.err


def test_session_exists_via_ctl(world):
    res = launch_json(world, "sleeper")
    r = world.strobectl("launch", "--project-root", world.project, fixture_path("sleeper"))
    assert r.rc == 1 and "SESSION_EXISTS" in r.out + r.err, r
    ctl_json(world, "stop", res["sessionId"])


def test_usage_errors_exit_64(world):
    for args in ([], ["launch"], ["query"], ["frobnicate"], ["query", "x", "--limit", "abc"],
                 ["status"], ["stop"], ["launch", "--env", "NOEQUALS", "/bin/true"]):
        r = world.strobectl(*args)
        assert r.rc == 64, r
        assert r.err.strip(), "a usage error should explain itself on stderr: %r" % r


def test_help_and_tools(world):
    r = world.strobectl("--help")
    assert r.rc == 0 and "launch" in r.out and "query" in r.out, r
    r = world.strobectl("--json", "tools")
    assert r.rc == 0, r
    tools = r.json()
    names = {t["name"] for t in (tools["tools"] if isinstance(tools, dict) else tools)}
    assert {"debug_launch", "debug_query", "debug_session", "debug_trace"} <= names


def test_raw_call(world):
    # prints the whole tools/call result
    r = world.strobectl("call", "debug_session", '{"action":"list"}')
    assert r.rc == 0, r
    assert r.json()["structuredContent"] == {"sessions": []}
    assert r.json().get("isError") in (None, False)
    r = world.strobectl("call", "debug_session", '{"action":"bogus"}')
    assert r.rc == 1 and "VALIDATION_ERROR" in r.out + r.err, r


def test_strobectl_starts_the_daemon(world):
    if not VALGRIND:  # in valgrind mode the harness has started it already
        assert world.daemon_pid() is None and not os.path.exists(world.sock_path())
    r = world.strobectl("--json", "sessions")
    assert r.rc == 0, r
    assert r.json() == {"sessions": []}
    pid = world.daemon_pid()
    assert pid and pid_alive(pid)
