"""debug_launch and output capture: the done-when scenario (hello/oops/exit 3), output
splitting and escaping, arguments/env/cwd, exits and crashes, the output limit."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

from conftest import (FIXTURES, STROBECTL, T_LONG, T_SHORT, fixture_path, pid_alive,
                      socket_answers, wait_until)

SESSION_ID_RE = r"^%s-\d{4}-\d{2}-\d{2}-\d{2}h\d{2}(-\d+)?$"


def texts(events):
    return [e["text"] for e in events]


def is_signal(value, num, name):
    return value in (num, name, "SIG" + name.replace("SIG", ""), str(num))


# ---- the done-when scenario -----------------------------------------------------------

@pytest.mark.valgrind_sample
def test_hello_exit3_done_when(mcp):
    r = mcp.launch("hello_exit3")
    sid = r["sessionId"]
    assert re.match(SESSION_ID_RE % "hello_exit3", sid), sid
    assert isinstance(r["pid"], int) and r["pid"] > 0
    assert isinstance(r["nextSteps"], str) and r["nextSteps"]

    st = mcp.wait_ended(sid)
    assert st["status"] == "exited"
    assert st["exitCode"] == 3
    assert st.get("signal") is None
    assert st["sessionId"] == sid
    assert st["pid"] == r["pid"]
    assert st["pids"] == [r["pid"]]
    assert os.path.realpath(st["binaryPath"]) == os.path.realpath(fixture_path("hello_exit3"))
    assert os.path.realpath(st["projectRoot"]) == os.path.realpath(mcp.world.project)
    assert st["retained"] is False
    assert isinstance(st["startedAt"], (int, float)) and isinstance(st["endedAt"], (int, float))
    assert st["endedAt"] >= st["startedAt"]
    assert st["eventCounts"]["stdout"] == 1
    assert st["eventCounts"]["stderr"] == 1
    assert st["eventCounts"]["process_exit"] == 1
    assert st["totalEvents"] == 3

    q = mcp.query(sid, eventType="stdout")
    assert q["totalCount"] == 1 and q["hasMore"] is False
    assert len(q["events"]) == 1
    ev = q["events"][0]
    assert ev["eventType"] == "stdout"
    assert ev["text"] == "hello"
    assert isinstance(ev["id"], str) and ev["id"].isdigit(), ev["id"]
    assert isinstance(ev["timestampNs"], int) and ev["timestampNs"] >= 0

    q = mcp.query(sid, eventType="stderr")
    assert q["totalCount"] == 1
    assert [(e["eventType"], e["text"]) for e in q["events"]] == [("stderr", "oops")]

    q = mcp.query(sid, eventType="process_exit")
    assert q["totalCount"] == 1
    ex = q["events"][0]
    assert ex["eventType"] == "process_exit"
    assert ex["exitCode"] == 3
    assert ex["pid"] == r["pid"]
    assert isinstance(ex["text"], str) and "3" in ex["text"]

    # the unfiltered timeline: all three, process_exit last, ids increasing
    q = mcp.query(sid)
    assert q["totalCount"] == 3
    types = [e["eventType"] for e in q["events"]]
    assert sorted(types) == ["process_exit", "stderr", "stdout"]
    assert types[-1] == "process_exit"
    ids = [int(e["id"]) for e in q["events"]]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert q["lastEventId"] == q["events"][-1]["id"]
    assert "pids" not in q


def test_process_exit_is_last_and_after_output(mcp):
    sid = mcp.launch("cpp_exit", args=["42"])["sessionId"]
    st = mcp.wait_ended(sid)
    assert (st["status"], st["exitCode"]) == ("exited", 42)
    evs = mcp.query(sid)["events"]
    assert [(e["eventType"], e.get("text")) for e in evs[:-1]] in (
        [("stdout", "cout line"), ("stderr", "cerr line")],
        [("stderr", "cerr line"), ("stdout", "cout line")])
    assert evs[-1]["eventType"] == "process_exit" and evs[-1]["exitCode"] == 42


def test_cpp_default_exit_code(mcp):
    sid = mcp.launch("cpp_exit")["sessionId"]
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 7
    assert texts(mcp.query(sid, eventType="stdout")["events"]) == ["cout line"]
    assert texts(mcp.query(sid, eventType="stderr")["events"]) == ["cerr line"]


# ---- output shapes -------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_output_mix(mcp):
    sid = mcp.launch("output_mix")["sessionId"]
    st = mcp.wait_ended(sid)
    assert (st["status"], st["exitCode"]) == ("exited", 0)
    out = mcp.all_events(sid, eventType="stdout")
    err = mcp.all_events(sid, eventType="stderr")
    assert texts(err) == ["err 1", "err 2", "err 3"]
    t = texts(out)
    assert t[0] == "out 1" and t[1] == "out 2"
    # invalid UTF-8 bytes become \xNN
    assert t[2].lower() == "bad \\xff\\xfe end", t[2]
    # the 100 KiB line is split at 64 KiB: two events (summary text is cut at 500)
    assert len(t) == 7, [x[:40] for x in t]
    assert t[5] == "out 3"
    # the partial last line (no newline) is flushed
    assert t[6] == "partial-no-newline"
    # summary text is cut at 500 characters with a note: appended to the text, or
    # as fields of the event (textTruncated, textBytes)
    for ev, size in ((out[3], 64 * 1024), (out[4], 36 * 1024)):
        piece = ev["text"]
        assert piece.startswith("x" * 500)
        assert len(piece) < 1000, len(piece)
        if len(piece) == 500:
            assert ev.get("textTruncated") is True, ev
            assert ev.get("textBytes") in (None, size), ev
        else:
            assert piece[500:] != "x" * (len(piece) - 500), "no note after 500 chars"
    # verbose gives the whole pieces (up to 64 KiB each) when the answer budget
    # (answers.maxBytes, 16 KB by default) lets them through
    with open(os.path.join(mcp.world.home, "settings.json"), "w") as f:
        json.dump({"answers.maxBytes": 128 * 1024}, f)
    full = []
    for ev in out[3:5]:
        q = mcp.query(sid, eventType="stdout", verbose=True, limit=1,
                      offset=out.index(ev))
        assert len(q["events"]) == 1
        v = q["events"][0]
        assert v["id"] == ev["id"]
        assert set(v["text"]) == {"x"}, v["text"][:100]
        assert len(v["text"]) <= 64 * 1024
        full.append(v["text"])
    assert len(full[0]) + len(full[1]) == 100 * 1024
    assert len(full[0]) == 64 * 1024


def test_output_events_are_in_write_order(mcp):
    sid = mcp.launch("threads")["sessionId"]
    st = mcp.wait_ended(sid)
    assert (st["status"], st["exitCode"]) == ("exited", 0)
    t = texts(mcp.query(sid, eventType="stdout")["events"])
    assert len(t) == 7 and t[-1] == "joined"
    for name in ("worker-a", "worker-b"):
        assert [x for x in t if x.startswith(name)] == ["%s %d" % (name, i) for i in range(3)]


def test_exit_immediately(mcp):
    r = mcp.launch("exit_immediately")
    st = mcp.wait_ended(r["sessionId"])
    assert st["status"] == "exited"
    assert st["exitCode"] == 0
    assert st["totalEvents"] == 1
    q = mcp.query(r["sessionId"])
    assert [e["eventType"] for e in q["events"]] == ["process_exit"]
    assert q["events"][0]["exitCode"] == 0
    assert mcp.query(r["sessionId"], eventType="stdout")["totalCount"] == 0


def test_many_immediate_exits_in_a_row(mcp):
    for _ in range(5):
        sid = mcp.launch("exit_immediately")["sessionId"]
        assert mcp.wait_ended(sid)["exitCode"] == 0
    assert socket_answers(mcp.world.home)


@pytest.mark.valgrind_sample
def test_segv_is_crashed_with_signal(mcp):
    r = mcp.launch("die_by_signal", args=["segv"])
    st = mcp.wait_ended(r["sessionId"])
    assert st["status"] == "crashed"
    assert is_signal(st["signal"], 11, "SIGSEGV"), st
    assert st.get("exitCode") is None
    assert texts(mcp.query(r["sessionId"], eventType="stdout")["events"]) == \
        ["about to die: segv"]
    ex = mcp.query(r["sessionId"], eventType="process_exit")["events"]
    assert len(ex) == 1
    assert is_signal(ex[0]["signal"], 11, "SIGSEGV"), ex
    assert "exitCode" not in ex[0] or ex[0]["exitCode"] is None


def test_sigkill_is_crashed(mcp):
    r = mcp.launch("die_by_signal", args=["kill"])
    st = mcp.wait_ended(r["sessionId"])
    assert st["status"] == "crashed"
    assert is_signal(st["signal"], 9, "SIGKILL"), st


def test_abort_is_crashed_with_sigabrt(mcp):
    r = mcp.launch("abort")
    st = mcp.wait_ended(r["sessionId"])
    assert st["status"] == "crashed"
    assert is_signal(st["signal"], 6, "SIGABRT"), st
    assert texts(mcp.query(r["sessionId"], eventType="stderr")["events"]) == ["aborting"]


# ---- command, args, env, cwd ----------------------------------------------------------

def argv_env_cwd(mcp, sid):
    mcp.wait_ended(sid)
    return texts(mcp.query(sid, eventType="stdout")["events"])


@pytest.mark.valgrind_sample
def test_args_env_and_default_cwd(mcp):
    r = mcp.launch("args_env_cwd", args=["one", "two words", "", "ünï"],
                   env={"STROBE_TEST_VAR": "a=b c"})
    out = argv_env_cwd(mcp, r["sessionId"])
    assert out == ["argv[1]=one", "argv[2]=two words", "argv[3]=", "argv[4]=ünï",
                   "env STROBE_TEST_VAR=a=b c",
                   # cwd defaults to the directory of the command (spec 000)
                   "cwd=" + os.path.realpath(FIXTURES)]


def test_explicit_cwd_and_no_args(mcp):
    d = os.path.realpath(tempfile.mkdtemp(dir=mcp.world.base))
    r = mcp.launch("args_env_cwd", cwd=d)
    out = argv_env_cwd(mcp, r["sessionId"])
    assert out == ["env STROBE_TEST_VAR=(unset)", "cwd=" + d]


def test_env_does_not_leak_between_sessions(mcp):
    r = mcp.launch("args_env_cwd", env={"STROBE_TEST_VAR": "first"})
    assert "env STROBE_TEST_VAR=first" in argv_env_cwd(mcp, r["sessionId"])
    r = mcp.launch("args_env_cwd")
    assert "env STROBE_TEST_VAR=(unset)" in argv_env_cwd(mcp, r["sessionId"])


def test_relative_command_resolves_against_cwd(mcp):
    build = os.path.dirname(FIXTURES)
    r = mcp.launch(os.path.join(".", "fixtures", "args_env_cwd"), cwd=build)
    out = argv_env_cwd(mcp, r["sessionId"])
    assert out[-1] == "cwd=" + os.path.realpath(build)


def test_relative_command_resolves_against_project_root(mcp):
    build = os.path.dirname(FIXTURES)
    r = mcp.call_tool("debug_launch", {"command": "fixtures/hello_exit3",
                                       "projectRoot": build})
    mcp.world.target_pids.add(r["pid"])
    st = mcp.wait_ended(r["sessionId"])
    assert st["exitCode"] == 3
    assert os.path.realpath(st["binaryPath"]) == os.path.realpath(fixture_path("hello_exit3"))


def test_bare_command_is_searched_in_path(mcp):
    r = mcp.call_tool("debug_launch", {"command": "true", "projectRoot": mcp.world.project})
    st = mcp.wait_ended(r["sessionId"])
    assert (st["status"], st["exitCode"]) == ("exited", 0)
    assert os.path.basename(st["binaryPath"]) == "true"
    assert os.path.isabs(st["binaryPath"])


def test_stdin_is_dev_null(mcp):
    # sleeper without arguments reads stdin to EOF then pauses: it must not block on a
    # terminal or pipe; it prints "ready" and stays running.
    r = mcp.launch("sleeper")
    mcp.wait_events(r["sessionId"], 1, eventType="stdout")
    fd0 = os.readlink("/proc/%d/fd/0" % r["pid"])
    assert fd0 == "/dev/null"
    for fd in (1, 2):
        assert os.readlink("/proc/%d/fd/%d" % (r["pid"], fd)).startswith("pipe:")
    mcp.stop(r["sessionId"])


@pytest.mark.valgrind_sample
def test_session_ids_get_suffix_on_collision(mcp):
    ids = []
    for _ in range(3):
        sid = mcp.launch("hello_exit3")["sessionId"]
        mcp.wait_ended(sid)
        ids.append(sid)
    assert len(set(ids)) == 3, ids
    for sid in ids:
        assert re.match(SESSION_ID_RE % "hello_exit3", sid), sid
    # same minute -> the later ones carry -2, -3 (unless the minute turned over)
    base = ids[0]
    if all(s.startswith(base) for s in ids):
        assert ids[1:] == [base + "-2", base + "-3"], ids


# ---- the output limit ----------------------------------------------------------------

def test_flood_hits_output_limit_target_completes(mcp):
    w = mcp.world
    w.write_project_settings({"output.maxBytesPerSession": 1048576})
    pid_before = w.daemon_pid()
    flood = mcp.launch("flood", args=["100"])
    other_project = os.path.join(w.base, "other")
    os.makedirs(other_project)
    other = mcp.launch("sleeper", project=other_project, args=["1"])

    st = mcp.wait_ended(flood["sessionId"], timeout=T_LONG * 2)
    assert (st["status"], st["exitCode"]) == ("exited", 0), st

    # the other session saw its whole output and exit
    ost = mcp.wait_ended(other["sessionId"])
    assert (ost["status"], ost["exitCode"]) == ("exited", 0)
    assert texts(mcp.query(other["sessionId"], eventType="stdout")["events"]) == \
        ["ready", "done"]

    # about 1 MiB of 64-byte lines were stored (counting the bytes read, or the 63
    # bytes of text each line keeps), then one marker, then process_exit
    n_out = st["eventCounts"]["stdout"]
    assert 1048576 // 64 - 2 <= n_out <= 1048576 // 63 + 2, st["eventCounts"]
    total = mcp.query(flood["sessionId"], limit=1)["totalCount"]
    tail = mcp.query(flood["sessionId"], offset=max(0, total - 10), limit=10)["events"]
    marker = ("[strobe] output limit of 1048576 bytes reached; further output discarded "
              "(setting output.maxBytesPerSession)")
    assert sum(1 for e in tail if e.get("text") == marker) == 1, texts(tail)
    assert tail[-1]["eventType"] == "process_exit" and tail[-1]["exitCode"] == 0
    markers = [e for e in tail if e.get("text") == marker]
    assert tail.index(markers[0]) < len(tail) - 1
    # nothing after the limit, and the stored lines are intact
    first = mcp.query(flood["sessionId"], eventType="stdout", limit=2)["events"]
    assert first[0]["text"] == "a" * 63 and first[1]["text"] == "b" * 63

    # the daemon is the same one and still answers
    assert w.daemon_pid() == pid_before and pid_alive(pid_before)
    assert mcp.ch.result("ping") == {}


def test_output_limit_default_keeps_small_output(mcp):
    # 2 MiB under the default 50 MiB limit: every line is stored, no marker
    sid = mcp.launch("flood", args=["2"])["sessionId"]
    st = mcp.wait_ended(sid, timeout=T_LONG)
    assert st["exitCode"] == 0
    assert st["eventCounts"]["stdout"] == 2 * 1024 * 1024 // 64
    assert texts(mcp.query(sid, eventType="stderr")["events"]) == ["flood done"]


def test_invalid_output_limit_setting_falls_back(mcp):
    w = mcp.world
    w.write_project_settings({"output.maxBytesPerSession": 5})  # below the 1024 minimum
    r = mcp.launch("flood", args=["1"])
    st = mcp.wait_ended(r["sessionId"])
    assert st["exitCode"] == 0
    # the default applies, so all 1 MiB is kept
    assert st["eventCounts"]["stdout"] == 1024 * 1024 // 64
    # ...with a warning, in the launch response or the daemon log
    assert any("output.maxBytesPerSession" in x for x in r.get("warnings", [])) or \
        "output.maxBytesPerSession" in w.daemon_log(), r


@pytest.mark.valgrind_sample
def test_target_output_survives_after_stop_while_running(mcp):
    r = mcp.launch("sleeper")
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    st = mcp.status(sid)
    assert st["status"] == "running" and st.get("endedAt") is None
    assert st["eventCounts"]["stdout"] == 1
    res = mcp.stop(sid, retain=True)
    assert res["success"] is True and res["eventsCollected"] >= 1
    wait_until(lambda: not pid_alive(r["pid"]), T_SHORT, what="target killed")
    st = mcp.status(sid)
    assert st["status"] == "stopped"
    assert texts(mcp.query(sid, eventType="stdout")["events"]) == ["ready"]



def test_a_query_says_the_program_still_runs(mcp):
    """An empty or short answer is not "never happened" while the program runs: the
    answer says running and what to wait with; once it ended, nothing."""
    sid = mcp.launch("sleeper")["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    q = mcp.query(sid, eventType="stderr")
    assert q["events"] == [] and q["running"] is True, q
    assert '"until"' in q["runningNote"] and 'afterEventId "0"' in q["runningNote"], q
    q = mcp.query(sid, eventType="stdout")
    assert q["running"] is True and 'afterEventId "%s"' % q["lastEventId"] in q["runningNote"]
    mcp.stop(sid, retain=True)
    q = mcp.query(sid, eventType="stdout")
    assert "running" not in q and "runningNote" not in q, q


@pytest.mark.manages_daemon
def test_a_setuid_program_launched_by_a_user_is_warned_it_runs_without_privileges(world):
    """The kernel drops a setuid program's privileges when a tracer without them traces
    it: the launch says so (passwd -S answered differently under strobe, silently)."""
    if os.geteuid() != 0 or not shutil.which("runuser"):
        pytest.skip("needs root to make a setuid fixture and runuser to launch as nobody")
    if subprocess.run(["runuser", "-u", "nobody", "--", "test", "-x", STROBECTL]).returncode:
        pytest.skip("user nobody cannot run %s (a directory on its path is private)"
                    % STROBECTL)
    base = tempfile.mkdtemp(prefix="strobe-setuid-")
    home = os.path.join(base, "home")
    try:
        os.chmod(base, 0o755)
        exe = os.path.join(base, "whoami_setuid")
        shutil.copy("/usr/bin/id", exe)
        os.chmod(exe, 0o4755)  # setuid root
        os.mkdir(home, 0o700)
        os.chown(home, 65534, 65534)
        env = {"PATH": os.environ["PATH"], "STROBE_HOME": home, "STROBE_IDLE_TIMEOUT": "60"}
        p = subprocess.run(["runuser", "-u", "nobody", "--", STROBECTL, "--json", "launch",
                            "--project-root", base, exe, "--", "-u"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T_LONG)
        assert p.returncode == 0, p
        r = json.loads(p.stdout)
        [w] = [w for w in r.get("warnings", []) if "is setuid" in w]
        assert "runs without them" in w and exe in w, r
        # and indeed: the program ran as nobody, not as root
        def stdout():
            q = subprocess.run(["runuser", "-u", "nobody", "--", STROBECTL, "--json", "query",
                                r["sessionId"], "--type", "stdout"], env=env,
                               stdout=subprocess.PIPE, timeout=T_LONG)
            return json.loads(q.stdout)["events"]
        assert wait_until(stdout, T_LONG, what="id's output")[0]["text"] == "65534"
    finally:
        pid_file = os.path.join(home, "strobe.pid")
        if os.path.exists(pid_file):
            with open(pid_file) as f:
                pid = int(f.read().split()[0])
            os.kill(pid, signal.SIGTERM)
            wait_until(lambda: not pid_alive(pid), T_SHORT, what="the nobody daemon to stop")
        shutil.rmtree(base, ignore_errors=True)
