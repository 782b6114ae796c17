"""Crash capture through MCP (issue 4, docs/PROTOCOL.md "Crash events"): every crash
fixture launched with no patterns, the crash event read with one debug_query, and its
signal, crashing frame, stack, arguments, locals, language-level account and the
events that led to it asserted exactly; forks and execs with per-pid events.

The facts asserted are the ones each fixture's top comment records (checked there
against gdb)."""

import os
import subprocess

import pytest

from conftest import fixture_path, wait_stable, wait_until

PROCESS_EXIT = "process_exit"


def crash_events(mcp, sid, verbose=False, **kw):
    q = mcp.query(sid, eventType="crash", verbose=verbose, **kw)
    return q["events"]


def only_crash(mcp, sid, verbose=False):
    evs = crash_events(mcp, sid, verbose)
    assert len(evs) == 1, evs
    return evs[0]


def frame_summary(ev):
    """(function, basename of file, line) of each frame, omitted-frame markers out."""
    return [(f["function"], os.path.basename(f.get("file") or ""), f.get("line"))
            for f in ev["frames"] if "index" in f]


def args_of(frame):
    return {a["name"]: a["value"] for a in frame.get("arguments", [])}


def crash_frame(ev):
    frames = [f for f in ev["frames"] if "index" in f]
    return next(f for f in frames if f["index"] == ev["crashFrame"])


def run_to_end(mcp, fixture, **kw):
    r = mcp.launch(fixture, **kw)
    st = mcp.wait_ended(r["sessionId"])
    return r["sessionId"], r["pid"], st


def wait_callers(mcp, sid, n):
    """The pids of the traced calls once n distinct processes have made some."""
    def callers():
        q = mcp.query(sid, eventType="function_enter", verbose=True, limit=500)
        pids = {e["pid"] for e in q["events"]}
        return pids if len(pids) == n else None
    return wait_until(callers, what="traced calls from %d processes" % n)


def texts_by_id(mcp, sid):
    return {e["id"]: e.get("text") for e in mcp.all_events(sid)}


# ---- signals ----------------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_null_dereference_three_calls_deep(mcp):
    sid, pid, st = run_to_end(mcp, "crash_null")
    assert st["status"] == "crashed" and st["signal"] == "SIGSEGV"
    ev = only_crash(mcp, sid)
    assert ev["eventType"] == "crash"
    assert ev["kind"] == "signal"
    assert ev["signal"] == "SIGSEGV" and ev["signalNumber"] == 11
    assert ev["signalCode"] == "SEGV_MAPERR"
    assert ev["faultAddress"] == "0x0"
    assert ev["pid"] == pid and ev["threadId"] == pid
    assert ev["function"] == "read_field" and ev["line"] == 54
    assert ev["sourceFile"].endswith("tests/fixtures/crash_null.c")
    assert ev["text"] == "SIGSEGV (SEGV_MAPERR) at address 0x0 in read_field (crash_null.c:54)"
    assert "stackOverflow" not in ev and "handlerInstalled" not in ev
    assert frame_summary(ev)[:4] == [
        ("read_field", "crash_null.c", 54), ("validate", "crash_null.c", 60),
        ("process_order", "crash_null.c", 66), ("main", "crash_null.c", 75)]
    assert ev["crashFrame"] == 0
    frames = ev["frames"]
    assert args_of(frames[0]) == {"n": None, "depth": 2}
    o = args_of(frames[1])["o"]
    assert (o["id"], o["customer"], o["items"]) == (42, "bob", None)
    assert args_of(frames[1])["strict"] == 1
    assert args_of(frames[2]) == {"id": 42}
    assert [(v["name"], v["value"]) for v in ev["locals"]] == [
        ("count", 3), ("ratio", 0.75), ("label", "widget"), ("owner", "alice"),
        ("origin", {"x": 4, "y": -2}), ("cursor", None), ("state", "STATE_PAID")]
    types = {v["name"]: v["type"] for v in ev["locals"]}
    assert types["count"] == "int" and types["ratio"] == "double"
    assert types["label"] == "char[16]" and types["state"] == "enum order_state"
    assert types["origin"] == "struct point" and types["cursor"] == "struct node *"
    # The events that led there: the two lines the program wrote before dying.
    by_id = texts_by_id(mcp, sid)
    assert [by_id[i] for i in ev["lastEventIds"]] == ["processing order 42",
                                                      "validating order 42"]
    assert ev["lastEvents"] == [
        {"id": ev["lastEventIds"][0], "eventType": "stdout", "text": "processing order 42"},
        {"id": ev["lastEventIds"][1], "eventType": "stderr", "text": "validating order 42"}]
    # Summary mode leaves raw machine state to verbose.
    assert "registers" not in ev and all("pc" not in f for f in frames)


def test_crash_verbose_has_registers_and_pcs(mcp):
    sid, _, _ = run_to_end(mcp, "crash_divzero")
    ev = only_crash(mcp, sid, verbose=True)
    regs = ev["registers"]
    for name in ("rip", "rsp", "rbp", "rax", "rdi", "eflags"):
        assert regs[name].startswith("0x"), (name, regs)
    # SIGFPE's si_addr is the faulting instruction.
    assert ev["faultAddress"] == regs["rip"]
    assert ev["frames"][0]["pc"] == regs["rip"]
    assert ev["frames"][0]["module"].endswith("/fixtures/crash_divzero")


def test_division_by_zero(mcp):
    sid, _, st = run_to_end(mcp, "crash_divzero")
    assert st["signal"] == "SIGFPE"
    ev = only_crash(mcp, sid)
    assert (ev["signal"], ev["signalCode"]) == ("SIGFPE", "FPE_INTDIV")
    assert (ev["function"], ev["line"]) == ("average", 17)
    assert frame_summary(ev)[:2] == [("average", "crash_divzero.c", 17),
                                     ("main", "crash_divzero.c", 27)]
    assert args_of(ev["frames"][0]) == {"total": 30, "n": 0}
    assert ev["locals"] == []


@pytest.mark.valgrind_sample
def test_stack_overflow(mcp):
    sid, _, st = run_to_end(mcp, "crash_stack_overflow")
    assert st["signal"] == "SIGSEGV"
    ev = only_crash(mcp, sid)
    assert ev["stackOverflow"] is True
    assert (ev["function"], ev["line"]) == ("recurse", 20)
    summary = frame_summary(ev)
    assert summary[0] == ("recurse", "crash_stack_overflow.c", 20)
    assert summary[1] == ("recurse", "crash_stack_overflow.c", 25)
    # The runaway recursion is cut in the middle: its start (main) stays visible.
    assert ev["framesTotal"] > 100
    assert any("omittedFrames" in f for f in ev["frames"])
    assert ("main", "crash_stack_overflow.c", 32) in summary
    assert ev["frames"][-1]["index"] == ev["framesTotal"] - 1


def test_own_sigsegv_handler_still_runs(mcp):
    sid, pid, st = run_to_end(mcp, "crash_handler")
    # The handler ran: the program exits 42, and the crash was still recorded.
    assert st["status"] == "exited" and st["exitCode"] == 42
    ev = only_crash(mcp, sid)
    assert ev["handlerInstalled"] is True
    assert (ev["signal"], ev["faultAddress"]) == ("SIGSEGV", "0x0")
    assert (ev["function"], ev["line"]) == ("faulty", 28)
    assert args_of(ev["frames"][0]) == {"p": None}
    stderr = mcp.query(sid, eventType="stderr")["events"]
    assert [e["text"] for e in stderr] == ["handler ran"]
    assert int(stderr[0]["id"]) > int(ev["id"])


# ---- language-level failures ----------------------------------------------------------

def test_assertion_failure(mcp):
    sid, _, st = run_to_end(mcp, "crash_assert")
    assert st["signal"] == "SIGABRT"
    ev = only_crash(mcp, sid)
    assert ev["kind"] == "assertion" and ev["signal"] == "SIGABRT"
    a = ev["assertion"]
    assert a["expression"] == "count > 0"
    assert a["file"].endswith("crash_assert.c") and a["line"] == 22
    assert a["function"] == "check_count"
    assert ev["abortMessage"].endswith(
        "crash_assert.c:22: check_count: Assertion `count > 0' failed.")
    assert (ev["function"], ev["line"]) == ("check_count", 22)
    frame = crash_frame(ev)
    assert (frame["function"], frame["line"]) == ("check_count", 22)
    assert args_of(frame) == {"count": 0}
    names = [f for f, _, _ in frame_summary(ev)]
    assert "abort" in names and "__assert_fail" in names
    assert names.index("__assert_fail") < names.index("check_count") < names.index("main")


@pytest.mark.valgrind_sample
def test_uncaught_cpp_exception(mcp):
    sid, _, st = run_to_end(mcp, "crash_uncaught")
    assert st["signal"] == "SIGABRT"
    ev = only_crash(mcp, sid)
    assert ev["kind"] == "uncaught_exception"
    assert ev["exception"] == {"type": "std::runtime_error", "what": "config file missing"}
    assert (ev["function"], ev["line"]) == ("load_config", 23)
    names = [f for f, _, _ in frame_summary(ev)]
    assert names.index("std::terminate") < names.index("__cxa_throw") < names.index("load_config")
    assert crash_frame(ev)["function"] == "load_config"


@pytest.mark.valgrind_sample
def test_rust_panic(mcp):
    sid, _, st = run_to_end(mcp, "crash_panic")
    # Unwinding panics end with exit code 101, no signal: the event still exists.
    assert st["status"] == "exited" and st["exitCode"] == 101
    ev = only_crash(mcp, sid)
    assert ev["kind"] == "panic" and "signal" not in ev
    p = ev["panic"]
    assert p["message"] == "bad input: 7"
    assert p["file"].endswith("crash_panic.rs") and (p["line"], p["column"]) == (23, 9)
    assert p["thread"] == "main"
    assert (ev["function"], ev["line"]) == ("crash_panic::parse_input", 23)
    frame = crash_frame(ev)
    assert args_of(frame) == {"x": 7}
    summary = frame_summary(ev)
    i = summary.index(("crash_panic::parse_input", "crash_panic.rs", 23))
    assert summary[i + 1] == ("crash_panic::main", "crash_panic.rs", 31)


def test_rust_index_out_of_bounds(mcp):
    sid, _, st = run_to_end(mcp, "crash_oob")
    assert st["exitCode"] == 101
    ev = only_crash(mcp, sid)
    assert ev["kind"] == "panic"
    assert ev["panic"]["message"] == "index out of bounds: the len is 4 but the index is 10"
    assert (ev["panic"]["line"], ev["panic"]["column"]) == (22, 5)
    assert (ev["function"], ev["line"]) == ("crash_oob::pick", 22)
    assert args_of(crash_frame(ev))["idx"] == 10
    names = [f for f, _, _ in frame_summary(ev)]
    assert names.index("core::panicking::panic_bounds_check") < names.index("crash_oob::pick")


def test_address_sanitizer_report_is_linked(mcp):
    sid, pid, st = run_to_end(mcp, "crash_asan")
    assert st["status"] == "exited" and st["exitCode"] == 1
    ev = only_crash(mcp, sid)
    assert ev["kind"] == "sanitizer" and ev["pid"] == pid
    san = ev["sanitizer"]
    assert san["tool"] == "AddressSanitizer"
    assert san["report"].startswith("heap-buffer-overflow on address 0x")
    assert san["summary"] == ("SUMMARY: AddressSanitizer: heap-buffer-overflow "
                              "tests/fixtures/crash_asan.c:28 in fill")
    # The linked stderr events are the report's first and last lines.
    by_id = texts_by_id(mcp, sid)
    first, last = san["reportEventIds"]
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in by_id[first]
    assert by_id[last].endswith("ABORTING")
    assert (ev["function"], ev["line"]) == ("fill", 28)
    assert args_of(crash_frame(ev)) == {"buf": args_of(crash_frame(ev))["buf"], "n": 8}
    assert ev["locals"] == []


# ---- forks and execs ------------------------------------------------------------------

@pytest.mark.valgrind_sample
def test_forked_workers_one_crashes(mcp):
    sid, parent, st = run_to_end(mcp, "fork_workers")
    assert st["status"] == "exited" and st["exitCode"] == 0
    stdout = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    workers = {}
    for line in stdout:
        if line.startswith("worker ") and " pid " in line:
            n, _, p = line.split()[1:4]
            workers[int(n)] = int(p)
    assert sorted(workers) == [0, 1, 2], stdout
    assert sorted(st["pids"]) == sorted([parent] + list(workers.values()))
    assert "worker 1 killed by signal 11" in stdout

    ev = only_crash(mcp, sid)
    assert ev["pid"] == workers[1] != parent
    assert (ev["function"], ev["line"]) == ("do_work", 25)
    assert frame_summary(ev)[:3] == [("do_work", "fork_workers.c", 25),
                                     ("start_worker", "fork_workers.c", 35),
                                     ("main", "fork_workers.c", 45)]
    assert args_of(ev["frames"][0]) == {"n": 1}
    assert [(v["name"], v["value"]) for v in ev["locals"]] == [
        ("results", [10, 20, 30]), ("out", None)]

    exits = {e["pid"]: e for e in mcp.all_events(sid, eventType=PROCESS_EXIT)}
    assert exits[workers[1]]["signal"] == "SIGSEGV"
    assert exits[workers[0]]["exitCode"] == 0 and exits[workers[2]]["exitCode"] == 0
    assert exits[parent]["exitCode"] == 0

    # pid filter: the crashed worker's own events only; pids listed.
    q = mcp.query(sid, pid=workers[1])
    assert {e["eventType"] for e in q["events"]} == {"crash", PROCESS_EXIT}
    assert all(e["pid"] == workers[1] for e in q["events"])
    assert sorted(q["pids"]) == sorted(st["pids"])
    assert crash_events(mcp, sid, pid=workers[0]) == []


@pytest.mark.valgrind_sample
def test_fork_exec_child_is_traced_and_its_crash_recorded(mcp):
    mcp.call_tool("debug_trace", {"add": ["read_field", "validate"]})
    sid, parent, st = run_to_end(mcp, "fork_exec", args=["crash_null"])
    assert st["exitCode"] == 0
    child = next(p for p in st["pids"] if p != parent)
    stdout = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert "child pid %d" % child in stdout
    assert "child killed by signal 11" in stdout
    # Patterns re-resolved against the exec'd image: its functions are traced.
    def entered():
        q = mcp.query(sid, eventType="function_enter")
        return q["events"] if q["totalCount"] >= 2 else None
    enters = wait_until(entered)
    assert [(e["function"], e["pid"]) for e in enters] == [("validate", child),
                                                           ("read_field", child)]
    ev = only_crash(mcp, sid)
    assert ev["pid"] == child
    assert (ev["function"], ev["line"]) == ("read_field", 54)
    assert ev["locals"][0] == {"name": "count", "type": "int", "value": 3}
    exits = {e["pid"]: e for e in mcp.all_events(sid, eventType=PROCESS_EXIT)}
    assert exits[child]["signal"] == "SIGSEGV" and exits[parent]["exitCode"] == 0


def test_fork_exec_of_a_clean_child(mcp):
    sid, parent, st = run_to_end(mcp, "fork_exec")
    assert st["exitCode"] == 0 and len(st["pids"]) == 2
    child = next(p for p in st["pids"] if p != parent)
    assert crash_events(mcp, sid) == []
    exits = {e["pid"]: e["exitCode"] for e in mcp.all_events(sid, eventType=PROCESS_EXIT)}
    assert exits == {parent: 0, child: 3}
    texts = [e["text"] for e in mcp.all_events(sid)
             if e["eventType"] in ("stdout", "stderr")]
    assert texts[-1] == "child exited with code 3"
    assert "hello" in texts and "oops" in texts


def test_forked_children_that_exec_keep_their_calls(mcp):
    """64 children each make a traced call in the parent's code and exec at once.
    The fast path's records of a child sit in its copy of the ring, which the exec
    throws away: they are drained at the exec's entry (HOOK_DRAIN). The children's
    first stops may also come before their parent's fork events; they wait for them
    (TS_UNCLAIMED) and must all run on, none killed by a SIGTRAP it could not
    handle."""
    mcp.call_tool("debug_trace", {"add": ["child_step"]})
    sid, parent, st = run_to_end(mcp, "fork_storm", args=["64"])
    assert st["exitCode"] == 0
    stdout = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert "64 children exited with code 3" in stdout, stdout
    assert crash_events(mcp, sid) == []
    q = mcp.query(sid, eventType="function_enter", function={"equals": "child_step"},
                  limit=1)
    assert q["totalCount"] == 64, q


def test_program_without_debug_info(mcp, tmp_path):
    stripped = str(tmp_path / "crash_null_stripped")
    subprocess.run(["strip", "-o", stripped, fixture_path("crash_null")], check=True)
    sid, _, st = run_to_end(mcp, stripped)
    assert st["signal"] == "SIGSEGV"
    ev = only_crash(mcp, sid)
    assert (ev["signal"], ev["faultAddress"]) == ("SIGSEGV", "0x0")
    assert "function" not in ev and ev["locals"] == []
    top = ev["frames"][0]
    assert top["function"] is None and top["module"] == stripped
    assert top["moduleAddress"].startswith("0x")
    assert "Rebuild with -g" in ev["note"]
    # libc still has its symbols.
    assert "__libc_start_call_main" in [f["function"] for f in ev["frames"]]


def test_clean_exit_has_no_crash(mcp):
    sid, _, st = run_to_end(mcp, "hello_exit3")
    assert st["exitCode"] == 3
    assert crash_events(mcp, sid) == []


def test_forked_children_inherit_traces_and_tag_their_events(mcp):
    mcp.call_tool("debug_trace", {"add": ["do_work"]})
    sid, parent, st = run_to_end(mcp, "fork_workers")
    workers = sorted(p for p in st["pids"] if p != parent)
    assert len(workers) == 3
    enters = wait_until(lambda: (lambda q: q["events"] if q["totalCount"] >= 3 else None)(
        mcp.query(sid, eventType="function_enter", verbose=True)))
    assert sorted(e["pid"] for e in enters) == workers
    assert sorted(e["arguments"][0]["value"] for e in enters) == [0, 1, 2]
    # Worker 1 crashed inside do_work: no exit for it; the other two returned.
    exits = mcp.query(sid, eventType="function_exit", verbose=True)["events"]
    crashed = only_crash(mcp, sid)["pid"]
    assert sorted(e["pid"] for e in exits) == sorted(p for p in workers if p != crashed)
    # The pid filter isolates one worker's call.
    q = mcp.query(sid, pid=crashed, eventType="function_enter", verbose=True)
    assert [(e["function"], e["arguments"][0]["value"]) for e in q["events"]] == [("do_work", 1)]


def test_patterns_changed_after_fork_reach_the_children(mcp, tmp_path):
    stop = str(tmp_path / "stop")
    r = mcp.launch("fork_loop", args=[stop])
    sid, parent = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout")
    # Added at runtime, after both children exist: armed in all three processes.
    mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})

    pids = wait_callers(mcp, sid, 3)
    assert parent in pids
    # Each child calls tick with its own number.
    q = mcp.query(sid, eventType="function_enter", verbose=True, limit=500)
    by_pid = {}
    for e in q["events"]:
        by_pid.setdefault(e["pid"], set()).add(e["arguments"][0]["value"])
    assert sorted(tuple(sorted(v)) for v in by_pid.values()) == [(-1,), (0,), (1,)]

    # Removed again: the children keep running without the breakpoint.
    mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["tick"]})
    open(stop, "w").close()
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0
    stdout = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert stdout[-2:] == ["child 0 exited with code 0", "child 1 exited with code 0"]
    assert crash_events(mcp, sid) == []


def test_patterns_changed_at_runtime_reach_an_execd_child(mcp, tmp_path):
    # fork_exec -> child execs fork_loop, which forks two children of its own.
    stop = str(tmp_path / "stop")
    r = mcp.launch("fork_exec", args=["fork_loop", stop])
    sid, top = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 2, eventType="stdout")  # "child pid P", "ready"
    mcp.call_tool("debug_trace", {"sessionId": sid, "add": ["tick"]})

    pids = wait_callers(mcp, sid, 3)
    assert top not in pids  # fork_exec itself has no tick

    # Removed: the count stops growing although every process still calls tick
    # every 5 ms (60 calls in the 0.3 s it must stay still).
    mcp.call_tool("debug_trace", {"sessionId": sid, "remove": ["tick"]})
    wait_stable(lambda: mcp.query(sid, eventType="function_enter")["totalCount"], 0.3)
    open(stop, "w").close()
    st = mcp.wait_ended(sid)
    assert st["exitCode"] == 0
    stdout = [e["text"] for e in mcp.all_events(sid, eventType="stdout")]
    assert stdout[-3:] == ["child 0 exited with code 0", "child 1 exited with code 0",
                           "child exited with code 0"]
    assert crash_events(mcp, sid) == []


@pytest.mark.valgrind_sample
def test_crash_inside_traced_functions(mcp):
    # Traced frames have a trampoline as their return address: the report still
    # unwinds through them to the real callers.
    mcp.call_tool("debug_trace", {"add": ["read_field", "validate", "process_order"]})
    sid, _, st = run_to_end(mcp, "crash_null")
    assert st["signal"] == "SIGSEGV"
    ev = only_crash(mcp, sid)
    assert frame_summary(ev)[:4] == [
        ("read_field", "crash_null.c", 54), ("validate", "crash_null.c", 60),
        ("process_order", "crash_null.c", 66), ("main", "crash_null.c", 75)]
    assert ev["locals"][0] == {"name": "count", "type": "int", "value": 3}
    # Output is stamped when read, calls when they trap: only the calls' order is
    # fixed relative to each other.
    calls = [b["function"] for b in ev["lastEvents"] if b["eventType"] == "function_enter"]
    assert calls == ["process_order", "validate", "read_field"]


@pytest.mark.valgrind_sample
def test_crash_in_a_second_thread(mcp):
    sid, pid, st = run_to_end(mcp, "crash_thread")
    assert st["signal"] == "SIGSEGV"
    ev = only_crash(mcp, sid, verbose=True)
    assert ev["pid"] == pid and ev["threadId"] != pid
    assert ev["threadName"] == "worker"
    assert (ev["signal"], ev["faultAddress"]) == ("SIGSEGV", "0x8")
    assert frame_summary(ev)[:2] == [("parse_job", "crash_thread.c", 27),
                                     ("worker_main", "crash_thread.c", 36)]
    assert args_of(ev["frames"][0]) == {"job": None, "retries": 7}
    assert ev["locals"] == [{"name": "attempt", "type": "int", "value": 2}]
    assert "start_thread" in [f["function"] for f in ev["frames"]]


def _running(exe):
    """pids of live processes (not zombies) running the executable exe."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/exe" % d) != exe:
                continue
            with open("/proc/%s/stat" % d) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(d))
    return found


def test_stop_during_a_fork_storm_ends_every_process(mcp):
    """A stop while the program forks back to back: a child forked as the kill goes out
    (not yet in the tracer's list, or orphaned before its creator's fork event) is
    killed too, so the stop answers and nothing of the program is left running."""
    exe = os.path.realpath(fixture_path("fork_storm"))
    for _ in range(5):
        r = mcp.launch("fork_storm", args=["512"])
        mcp.stop(r["sessionId"])
        wait_until(lambda: not _running(exe), what="no fork_storm process left")
