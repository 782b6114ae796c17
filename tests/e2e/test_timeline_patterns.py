"""What a pattern did (issue 13, "say what happened"): debug_launch and debug_trace
answer with patterns [{pattern, matched, armed, warning?}], every pattern that
matches nothing has a warning naming it and the likely reason (near names, inlined
everywhere), staged patterns are shown as such and persist until removed, and the
advice fits the program (docs/PROTOCOL.md, debug_trace and debug_launch).

Fixtures: worker_loop (tick/compute every 10 ms for argv[1] seconds), inprogress (a
worker blocked inside wait_release until SIGUSR1; scale_twice exists only inlined),
hello_exit3 (prints and exits at once)."""

import os
import shutil
import signal
import subprocess

import pytest

from bp_util import line_of
from conftest import REPO, fixture_path


def by_pattern(answer):
    return {p["pattern"]: p for p in answer["patterns"]}


@pytest.mark.valgrind_sample
def test_staged_pattern_matching_nothing_warns_at_launch(mcp):
    """A staged typo is not a silent pendingPatternsApplied: 1; the launch answer (and
    the session's status) has its result and a warning naming it and the near name."""
    mcp.call_tool("debug_trace", {"add": ["compte", "tick"]})
    try:
        r = mcp.launch("worker_loop", project=REPO, args=["600"])
    finally:
        mcp.call_tool("debug_trace", {"remove": ["compte", "tick"]})
    assert r["pendingPatternsApplied"] == 2
    res = by_pattern(r)
    assert res["tick"]["matched"] == 1 and res["tick"]["armed"] == 1, r
    assert "warning" not in res["tick"], r
    bad = res["compte"]
    assert bad["matched"] == 0 and bad["armed"] == 0, r
    assert "'compte'" in bad["warning"] and "compute" in bad["warning"], r
    assert bad["warning"] in r["warnings"], r
    st = mcp.status(r["sessionId"])
    assert by_pattern(st) == res, st
    mcp.stop(r["sessionId"])


def test_runtime_typo_and_inlined_function_are_explained(mcp):
    r = mcp.launch("inprogress", project=REPO)
    sid = r["sessionId"]
    assert "patterns" not in r, r
    mcp.wait_events(sid, 1, eventType="stdout")
    t = mcp.call_tool("debug_trace", {"sessionId": sid,
                                      "add": ["wait_relese", "scale_twice", "main"]})
    res = by_pattern(t)
    assert res["main"]["matched"] == 1 and res["main"]["armed"] == 1, t
    typo = res["wait_relese"]
    assert typo["matched"] == 0, t
    assert "'wait_relese'" in typo["warning"] and "wait_release" in typo["warning"], t
    inl = res["scale_twice"]
    assert inl["matched"] == 0 and "inlined" in inl["warning"], t
    assert "'scale_twice'" in inl["warning"], t
    assert set(t["warnings"]) >= {typo["warning"], inl["warning"]}, t
    mcp.stop(sid)


def test_staged_patterns_shown_with_their_program_and_kept(mcp):
    """Staged patterns persist until removed (spec 003): after a launch took them,
    the pending answer shows each with the program and session it was armed in."""
    t = mcp.call_tool("debug_trace", {"add": ["main"]})
    assert t["staged"] == [{"pattern": "main"}], t
    assert "until they are removed" in t["status"], t
    try:
        r = mcp.launch("hello_exit3", project=REPO)
        t = mcp.call_tool("debug_trace", {"add": ["greet_nobody"]})
    finally:
        mcp.call_tool("debug_trace", {"remove": ["main", "greet_nobody"]})
    staged = {s["pattern"]: s for s in t["staged"]}
    assert staged["main"]["lastLaunch"] == {
        "sessionId": r["sessionId"], "program": fixture_path("hello_exit3")}, t
    assert "lastLaunch" not in staged["greet_nobody"], t
    assert t["activePatterns"] == ["main", "greet_nobody"], t


def test_short_program_is_told_to_stage_patterns(mcp):
    """A program that ended in well under a second: adding patterns now is too late,
    and the answer says to stage them before the launch instead."""
    r = mcp.launch("hello_exit3", project=REPO)
    mcp.wait_ended(r["sessionId"])
    err = mcp.tool_error("debug_trace", {"sessionId": r["sessionId"], "add": ["main"]})
    assert err.code == "PROCESS_EXITED", err
    assert "under a second" in err.message, err
    assert "without sessionId), then debug_launch" in err.message, err


@pytest.mark.parametrize("mode", ["int3", "fast"])
def test_calls_in_progress_are_seen_at_their_return(mcp, mode):
    """wait_release (inside the worker thread's worker) and main (in pthread_join) are
    running when their patterns are added: their returns are reported in stack order
    (inProgress, no enter event, the real return values) once released, whichever
    way the functions are traced (their later calls: int3s or the fast path)."""
    r = mcp.launch("inprogress", project=REPO)
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    mcp.call_tool("debug_trace", {"sessionId": sid, "traceMode": mode})
    t = mcp.call_tool("debug_trace", {"sessionId": sid,
                                      "add": ["wait_release", "worker", "main"]})
    assert by_pattern(t)["wait_release"]["armed"] == 1, t
    assert t["inProgressCalls"] == 3 and "inProgressLost" not in t, t
    # hooked again while the same call runs: followed once, not lost
    mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["wait_release"]})
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["wait_release"]})
    assert "inProgressCalls" not in t and "inProgressLost" not in t, (
        t.get("inProgressCalls"), t.get("inProgressLost"), t["warnings"])
    os.kill(r["pid"], signal.SIGUSR1)
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0, st
    out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert out == ["waiting", "released 43"], out
    exits = mcp.all_events(sid, eventType="function_exit", verbose=True)
    assert [x["function"] for x in exits] == ["wait_release", "worker", "main"], exits
    assert all(x["inProgress"] is True and "parentEventId" not in x for x in exits), exits
    assert [x["returnValue"] for x in exits] == [43, None, 0], exits
    assert exits[0]["threadId"] == exits[1]["threadId"] != exits[2]["threadId"], exits
    assert mcp.all_events(sid, eventType="function_enter") == []


def test_staged_pattern_never_armed_says_so(mcp, tmp_path):
    """A program that dies in the dynamic loader (its library is missing) never
    reaches its entry point: the launch answer says the staged pattern is not armed
    instead of counting it as applied in silence."""
    exe = tmp_path / "uses_lib"
    shutil.copy(fixture_path("uses_lib"), exe)
    mcp.call_tool("debug_trace", {"add": ["shape_area"]})
    try:
        r = mcp.launch(str(exe), project=REPO)
    finally:
        mcp.call_tool("debug_trace", {"remove": ["shape_area"]})
    p = by_pattern(r)["shape_area"]
    assert p["matched"] == 0 and "'shape_area' is not armed" in p["warning"], r
    assert p["warning"] in r["warnings"], r


def test_stripped_program_pattern_says_rebuild_with_g(mcp, tmp_path):
    """A stripped program has no symbol for its own functions: the warning says so
    and how to get them, not that the name is misspelt."""
    exe = tmp_path / "hello_stripped"
    shutil.copy(fixture_path("worker_loop"), exe)
    subprocess.run(["strip", str(exe)], check=True)
    r = mcp.launch(str(exe), project=REPO, args=["600"])
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["compute"]})
    w = by_pattern(t)["compute"]["warning"]
    assert w.startswith("'compute' matches nothing: the program has no debug info"), t
    assert "rebuild it with -g" in w, t
    mcp.stop(sid)


def test_call_in_progress_without_frame_info_is_counted_not_guessed(mcp):
    """nocfi_call (assembly, no CFI) is running when its pattern is added: where its
    return address lives cannot be known, so it is counted as not followed and said
    in a warning, and the program runs on unharmed."""
    r = mcp.launch("inprogress_nocfi", project=REPO)
    sid = r["sessionId"]
    mcp.wait_events(sid, 1, eventType="stdout")
    t = mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["nocfi_call"]})
    assert by_pattern(t)["nocfi_call"]["armed"] == 1, t
    assert t["inProgressLost"] == 1 and "inProgressCalls" not in t, t
    assert any(w.startswith("1 in-progress call(s) could not be followed")
               for w in t["warnings"]), t
    os.kill(r["pid"], signal.SIGUSR1)
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0, st
    out = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert out == ["waiting", "got 6"], out
    assert mcp.all_events(sid, eventType="function_exit") == []


def test_an_ifunc_pattern_hooks_the_variant_this_cpu_runs(mcp):
    """glibc's strlen is an IFUNC: its symbol is a resolver the program never calls.
    The pattern hooks the variant the dynamic linker chose (its GOT slot), named
    strlen in events (the variant's own name, with libc6-dbg, in functionRaw)."""
    staged = mcp.call_tool("debug_trace", {"add": ["strlen"]})
    assert staged["staged"], staged
    r = mcp.launch("bp_steps", args=["30"])
    sid = r["sessionId"]
    p = by_pattern(r)["strlen"]
    assert p["armed"] >= 1 and "warning" not in p, r
    mcp.wait_ended(sid)
    calls = mcp.all_events(sid, eventType="function_enter", function={"equals": "strlen"},
                           verbose=True)
    mine = [e for e in calls if e.get("callSite", "").endswith("bp_steps.c:%d"
                                                               % line_of("bp_steps.c", "CALL_STRLEN"))]
    assert len(mine) == 30, calls[:3]
    if os.path.exists("/usr/share/doc/libc6-dbg"):
        assert mine[0]["functionRaw"].startswith("__strlen_"), mine[0]
    mcp.call_tool("debug_trace", {"remove": ["strlen"]})
    mcp.stop(sid)
