"""strobectl crash: the crash reports of the crash fixtures (tests/fixtures/crash_*,
fork_workers), through the command-line client and, for the same events, through
debug_query over MCP. Every expected function, line, argument and local below is
stated, and was checked with gdb, in the fixture's top comment.

Exit codes of `crash` (man/strobectl.1): 0 crash events printed, 1 tool error
(SESSION_NOT_FOUND...), 3 no crash recorded, 64 usage error."""

import os
import re

import pytest

from conftest import REPO, T_LONG, T_SHORT, fixture_path, wait_until

FIXTURE_SRC = os.path.join(REPO, "tests", "fixtures")
HEX = re.compile(r"0x[0-9a-f]+")
# every 64-bit general-purpose register, and the flags
GPRS = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
        "r12", "r13", "r14", "r15", "rip", "eflags"}

NULL_SRC = os.path.join(FIXTURE_SRC, "crash_null.c")
# read_field's locals at the crash, in declaration order (crash_null.c's comment);
# type names drop const and volatile (dwarf/types.c)
NULL_LOCALS = [
    {"name": "count", "type": "int", "value": 3},
    {"name": "ratio", "type": "double", "value": 0.75},
    {"name": "label", "type": "char[16]", "value": "widget"},
    {"name": "owner", "type": "char *", "value": "alice"},
    {"name": "origin", "type": "struct point", "value": {"x": 4, "y": -2}},
    {"name": "cursor", "type": "struct node *", "value": None},
    {"name": "state", "type": "enum order_state", "value": "STATE_PAID"},
]
NULL_LOCAL_LINES = ['  count = 3', '  ratio = 0.75', '  label = "widget"',
                    '  owner = "alice"', '  origin = {"x":4,"y":-2}', '  cursor = null',
                    '  state = "STATE_PAID"']


# The CRASH HERE line of each fixture, which the tests below name as literals.
CRASH_LINES = {"crash_null.c": 54, "crash_assert.c": 22, "crash_divzero.c": 17,
               "crash_stack_overflow.c": 20, "crash_handler.c": 28, "crash_uncaught.cpp": 23,
               "crash_panic.rs": 23, "crash_oob.rs": 22, "crash_asan.c": 28,
               "fork_workers.c": 25}


def ctl_json(world, *args):
    r = world.strobectl("--json", *args)
    assert r.rc == 0, r
    return r.json()


def launch(world, fixture, *args, env=()):
    """Launches a fixture with strobectl; returns (sessionId, pid)."""
    opts = []
    for kv in env:
        opts += ["--env", kv]
    res = ctl_json(world, "launch", "--project-root", world.project, *opts,
                   fixture_path(fixture), *args)
    world.target_pids.add(res["pid"])
    return res["sessionId"], res["pid"]


def wait_ended(world, sid):
    def ended():
        st = ctl_json(world, "status", sid)
        return st if st["status"] != "running" else None
    return wait_until(ended, T_LONG, what="session %s to end" % sid)


def crash_events(world, sid, n=1):
    """Waits for the session to end and for n crash events; returns `strobectl --json
    crash SID`, which must then hold exactly n."""
    wait_ended(world, sid)

    def recorded():
        r = world.strobectl("--json", "crash", sid)
        if r.rc == 3:
            assert r.json() == [], r
            return None
        assert r.rc == 0, r
        return r.json() if len(r.json()) >= n else None
    events = wait_until(recorded, T_SHORT, what="%d crash events in %s" % (n, sid))
    assert len(events) == n, events
    for e in events:
        assert e["eventType"] == "crash", e
        assert isinstance(e["id"], str) and isinstance(e["timestampNs"], int), e
    return events


def text_of(world, sid, *opts):
    r = world.strobectl("crash", sid, *opts)
    assert r.rc == 0, r
    return r.out.splitlines()


def stdout_event_id(world, sid, stream, text):
    q = ctl_json(world, "query", sid, "--type", stream)
    ids = [e["id"] for e in q["events"] if e["text"] == text]
    assert len(ids) == 1, q
    return ids[0]


def frame_sites(frames, n):
    return [(f["index"], f["function"], f.get("file"), f.get("line")) for f in frames[:n]]


def crash_frame(e):
    return e["frames"][e["crashFrame"]]


def test_fixture_crash_lines():
    """A fixture edit that moves its crash must update the lines asserted here."""
    for name, line in CRASH_LINES.items():
        with open(os.path.join(FIXTURE_SRC, name)) as f:
            marked = [i + 1 for i, text in enumerate(f.read().splitlines())
                      if text.endswith("/* CRASH HERE */")]
        assert marked == [line], name


# ---- crash_null: SIGSEGV three calls below main ----------------------------------------

@pytest.mark.valgrind_sample
def test_null_deref_event(world):
    sid, pid = launch(world, "crash_null")
    st = wait_ended(world, sid)
    assert st["status"] == "crashed", st
    [e] = crash_events(world, sid)
    assert e["pid"] == pid and e["threadId"] == pid, e
    assert (e["function"], e["sourceFile"], e["line"]) == ("read_field", NULL_SRC, 54)
    assert e["text"] == "SIGSEGV (SEGV_MAPERR) at address 0x0 in read_field (crash_null.c:54)"
    assert e["kind"] == "signal"
    assert (e["signal"], e["signalNumber"], e["signalCode"], e["faultAddress"]) == \
        ("SIGSEGV", 11, "SEGV_MAPERR", "0x0")
    for absent in ("stackOverflow", "handlerInstalled", "framesTotal", "assertion",
                   "abortMessage", "exception", "panic", "sanitizer"):
        assert absent not in e, absent

    frames = e["frames"]
    exe = os.path.realpath(fixture_path("crash_null"))
    assert frame_sites(frames, 4) == [(0, "read_field", NULL_SRC, 54),
                                      (1, "validate", NULL_SRC, 60),
                                      (2, "process_order", NULL_SRC, 66),
                                      (3, "main", NULL_SRC, 75)]
    for f in frames[:4]:
        assert f["module"] == exe and HEX.fullmatch(f["pc"]) and "inlined" not in f, f
    assert frames[4]["function"] == "__libc_start_call_main", frames[4]
    assert os.path.basename(frames[4]["module"]) == "libc.so.6", frames[4]
    assert frames[0]["arguments"] == [
        {"name": "n", "type": "struct node *", "value": None},
        {"name": "depth", "type": "int", "value": 2}]
    o, strict = frames[1]["arguments"]
    assert (o["name"], o["type"]) == ("o", "struct order *"), o
    assert HEX.fullmatch(o["value"].pop("@ptr")), o
    assert o["value"] == {"id": 42, "customer": "bob", "items": None}
    assert strict == {"name": "strict", "type": "int", "value": 1}
    assert frames[2]["arguments"] == [{"name": "id", "type": "int", "value": 42}]
    assert frames[3]["arguments"] == []

    assert e["crashFrame"] == 0
    assert e["locals"] == NULL_LOCALS
    regs = e["registers"]
    assert set(regs) >= GPRS, regs
    assert all(HEX.fullmatch(regs[r]) for r in GPRS), regs
    assert int(regs["rip"], 16) == int(frames[0]["pc"], 16)

    out_id = stdout_event_id(world, sid, "stdout", "processing order 42")
    err_id = stdout_event_id(world, sid, "stderr", "validating order 42")
    assert out_id in e["lastEventIds"] and err_id in e["lastEventIds"], e["lastEventIds"]
    assert all(int(i) < int(e["id"]) for i in e["lastEventIds"]), e

    # --json is the verbose query's events, unchanged
    q = ctl_json(world, "query", sid, "--type", "crash", "--verbose")
    assert q["totalCount"] == 1
    [qe] = q["events"]
    qe["frames"][1]["arguments"][0]["value"].pop("@ptr")
    assert qe == e


def test_null_deref_report(world):
    sid, pid = launch(world, "crash_null")
    [e] = crash_events(world, sid)
    lines = text_of(world, sid)
    assert lines[0] == ("session %s, pid %d, thread %d: SIGSEGV (SEGV_MAPERR) at address 0x0 "
                        "in read_field (crash_null.c:54)" % (sid, pid, pid)), lines
    assert lines[1] == "#0  read_field (n=null, depth=2) at crash_null.c:54", lines
    assert re.fullmatch(r'#1  validate \(o=\{"@ptr":"0x[0-9a-f]+","id":42,"customer":"bob",'
                        r'"items":null\}, strict=1\) at crash_null\.c:60', lines[2]), lines
    assert lines[3] == "#2  process_order (id=42) at crash_null.c:66", lines
    assert lines[4] == "#3  main () at crash_null.c:75", lines
    assert lines[5].startswith("#4  __libc_start_call_main ("), lines
    i = lines.index("locals of #0 read_field:")
    assert len(lines[1:i]) == len(e["frames"]), lines
    assert all(re.match(r"#%d +\S" % n, line) for n, line in enumerate(lines[1:i])), lines
    assert lines[i + 1:i + 8] == NULL_LOCAL_LINES, lines
    assert lines[i + 8:] == ["last events before the crash:",
                             "  #%s stdout  processing order 42" % e["lastEventIds"][0],
                             "  #%s stderr  validating order 42" % e["lastEventIds"][1]]
    assert "registers" not in "\n".join(lines)


def test_null_deref_options(world):
    sid, pid = launch(world, "crash_null")
    [e] = crash_events(world, sid)

    lines = text_of(world, sid, "--full-paths")
    assert lines[1] == "#0  read_field (n=null, depth=2) at %s:54" % NULL_SRC, lines
    assert lines[4] == "#3  main () at %s:75" % NULL_SRC, lines

    lines = text_of(world, sid, "--registers")
    i = lines.index("registers:")
    assert lines[i - 7:i] == NULL_LOCAL_LINES, lines
    rows = lines[i + 1:-3]
    assert len(rows) == (len(e["registers"]) + 3) // 4, lines
    shown = dict(pair for row in rows for pair in re.findall(r"(\w+) +(0x[0-9a-f]+)", row))
    assert shown == e["registers"], lines
    assert lines[-3] == "last events before the crash:", lines

    assert text_of(world, sid, "--pid", str(pid)) == text_of(world, sid)
    assert ctl_json(world, "crash", sid, "--pid", str(pid)) == ctl_json(world, "crash", sid)
    r = world.strobectl("crash", sid, "--pid", "1")
    assert r.rc == 3 and r.out == "no crash recorded in session %s for pid 1\n" % sid, r
    r = world.strobectl("--json", "crash", sid, "--pid", "1")
    assert r.rc == 3 and r.json() == [], r


def test_null_deref_over_mcp(mcp):
    """The MCP view of the same crash: debug_query eventType crash, verbose."""
    world = mcp.world
    r = mcp.launch("crash_null")
    sid = r["sessionId"]
    mcp.wait_ended(sid)
    [e] = crash_events(world, sid)
    q = mcp.wait_events(sid, 1, eventType="crash", verbose=True)
    assert q["events"] == [e]
    summary = mcp.query(sid, eventType="crash")["events"]
    assert [(s["id"], s["eventType"], s["function"], s["line"]) for s in summary] == \
        [(e["id"], "crash", "read_field", 54)]


# ---- other kinds of crash ------------------------------------------------------------------

def test_assertion(world):
    sid, pid = launch(world, "crash_assert")
    st = wait_ended(world, sid)
    assert st["status"] == "crashed" and st["signal"] in ("SIGABRT", 6, "6"), st
    [e] = crash_events(world, sid)
    assert (e["kind"], e["signal"], e["signalNumber"]) == ("assertion", "SIGABRT", 6), e
    a = e["assertion"]
    assert (a["expression"], a["line"], a["function"]) == ("count > 0", 22, "check_count"), a
    assert a["file"].endswith("tests/fixtures/crash_assert.c"), a
    f = crash_frame(e)
    src = os.path.join(FIXTURE_SRC, "crash_assert.c")
    assert (f["function"], f["file"], f["line"]) == ("check_count", src, 22), f
    assert f["arguments"] == [{"name": "count", "type": "int", "value": 0}]
    nxt = e["frames"][e["crashFrame"] + 1]
    assert (nxt["function"], nxt["file"], nxt["line"]) == ("main", src, 30), nxt
    assert e["locals"] == []
    assert (e["function"], e["line"]) == ("check_count", 22)

    lines = text_of(world, sid)
    assert lines[0] == "session %s, pid %d, thread %d: %s" % (sid, pid, pid, e["text"]), lines
    assert lines[1] == "assertion failed: count > 0 in check_count at crash_assert.c:22"
    n = e["crashFrame"]
    assert "#%-2d check_count (count=0) at crash_assert.c:22" % n in lines, lines
    assert "#%-2d main (" % (n + 1) in "\n".join(lines), lines
    assert "locals of #%d check_count: none" % n in lines, lines


def test_divide_by_zero(world):
    sid, pid = launch(world, "crash_divzero")
    [e] = crash_events(world, sid)
    assert (e["kind"], e["signal"], e["signalNumber"], e["signalCode"]) == \
        ("signal", "SIGFPE", 8, "FPE_INTDIV"), e
    src = os.path.join(FIXTURE_SRC, "crash_divzero.c")
    assert frame_sites(e["frames"], 2) == [(0, "average", src, 17), (1, "main", src, 27)]
    pc = int(e["frames"][0]["pc"], 16)
    assert int(e["faultAddress"], 16) == pc == int(e["registers"]["rip"], 16), e
    assert e["frames"][0]["arguments"] == [{"name": "total", "type": "int", "value": 30},
                                           {"name": "n", "type": "int", "value": 0}]
    assert e["crashFrame"] == 0 and e["locals"] == []
    assert e["text"] == "SIGFPE (FPE_INTDIV) at address %s in average (crash_divzero.c:17)" \
        % e["faultAddress"], e
    lines = text_of(world, sid)
    assert lines[1] == "#0  average (total=30, n=0) at crash_divzero.c:17", lines
    assert "locals of #0 average: none" in lines, lines


def test_stack_overflow(world):
    sid, pid = launch(world, "crash_stack_overflow")
    [e] = crash_events(world, sid)
    assert (e["signal"], e["signalCode"], e["stackOverflow"]) == \
        ("SIGSEGV", "SEGV_MAPERR", True), e
    src = os.path.join(FIXTURE_SRC, "crash_stack_overflow.c")
    assert (e["function"], e["sourceFile"], e["line"]) == ("recurse", src, 20)
    frames = e["frames"]
    assert frame_sites(frames, 1) == [(0, "recurse", src, 20)]
    # 127 levels of recursion under an 8 MiB stack: far more frames than are kept
    assert e.get("framesTotal", len(frames)) >= 100, e.get("framesTotal")
    # (the daemon may record the arguments of the innermost frames only)
    depths = [f["arguments"][0]["value"] for f in frames[1:]
              if f.get("function") == "recurse" and "arguments" in f]
    assert depths and depths[0] >= 100, depths
    assert all(a > b for a, b in zip(depths, depths[1:])), depths
    assert all(f["line"] == 25 for f in frames[1:] if f.get("function") == "recurse"), frames
    lines = text_of(world, sid)
    assert lines[1] == "stack overflow", lines
    assert lines[2].startswith("#0  recurse (depth=") and \
        lines[2].endswith(") at crash_stack_overflow.c:20"), lines
    cut = [int(m.group(1)) for m in map(re.compile(r"\.\.\. (\d+) more frames?").fullmatch,
                                         lines) if m]
    assert sum(cut) == e.get("framesTotal", len(frames)) - len(frames), lines


def test_own_handler(world):
    sid, pid = launch(world, "crash_handler")
    st = wait_ended(world, sid)
    assert st["status"] == "exited" and st["exitCode"] == 42, st
    [e] = crash_events(world, sid)
    assert (e["signal"], e["signalCode"], e["faultAddress"], e["handlerInstalled"]) == \
        ("SIGSEGV", "SEGV_MAPERR", "0x0", True), e
    src = os.path.join(FIXTURE_SRC, "crash_handler.c")
    assert frame_sites(e["frames"], 2) == [(0, "faulty", src, 28), (1, "main", src, 40)]
    assert e["frames"][0]["arguments"] == [{"name": "p", "type": "int *", "value": None}]
    q = ctl_json(world, "query", sid, "--type", "stderr")
    assert [x["text"] for x in q["events"]] == ["handler ran"]
    lines = text_of(world, sid)
    assert lines[1] == "the program has its own SIGSEGV handler", lines
    assert lines[2] == "#0  faulty (p=null) at crash_handler.c:28", lines


def test_uncaught_exception(world):
    sid, pid = launch(world, "crash_uncaught")
    [e] = crash_events(world, sid)
    assert (e["kind"], e["signal"]) == ("uncaught_exception", "SIGABRT"), e
    assert e["exception"] == {"type": "std::runtime_error", "what": "config file missing"}
    f = crash_frame(e)
    src = os.path.join(FIXTURE_SRC, "crash_uncaught.cpp")
    assert (f["function"], f["file"], f["line"]) == ("load_config", src, 23), f
    nxt = e["frames"][e["crashFrame"] + 1]
    assert (nxt["function"], nxt["line"]) == ("main", 30), nxt
    lines = text_of(world, sid)
    i = lines.index("uncaught exception: std::runtime_error")
    assert lines[i + 1] == "  what(): config file missing", lines
    assert "#%-2d load_config () at crash_uncaught.cpp:23" % e["crashFrame"] in lines, lines


def test_rust_panic(world):
    sid, pid = launch(world, "crash_panic", env=["RUST_BACKTRACE=0"])
    st = wait_ended(world, sid)
    assert st["status"] == "exited" and st["exitCode"] == 101, st
    [e] = crash_events(world, sid)
    assert e["kind"] == "panic" and "signal" not in e, e
    assert e["panic"] == {"message": "bad input: 7", "file": "tests/fixtures/crash_panic.rs",
                          "line": 23, "column": 9, "thread": "main"}
    f = crash_frame(e)
    src = os.path.join(FIXTURE_SRC, "crash_panic.rs")
    assert (f["function"], f["file"], f["line"]) == ("crash_panic::parse_input", src, 23), f
    assert f["arguments"] == [{"name": "x", "type": "i32", "value": 7}]
    lines = text_of(world, sid)
    i = lines.index("thread 'main' panicked at tests/fixtures/crash_panic.rs:23:9:")
    assert lines[i + 1] == "  bad input: 7", lines


def test_rust_index_out_of_bounds(world):
    sid, pid = launch(world, "crash_oob", env=["RUST_BACKTRACE=0"])
    [e] = crash_events(world, sid)
    assert e["kind"] == "panic", e
    assert e["panic"]["message"] == "index out of bounds: the len is 4 but the index is 10"
    assert (e["panic"]["file"], e["panic"]["line"], e["panic"]["column"]) == \
        ("tests/fixtures/crash_oob.rs", 22, 5), e["panic"]
    f = crash_frame(e)
    src = os.path.join(FIXTURE_SRC, "crash_oob.rs")
    assert (f["function"], f["file"], f["line"]) == ("crash_oob::pick", src, 22), f
    nxt = e["frames"][e["crashFrame"] + 1]
    assert (nxt["function"], nxt["line"]) == ("crash_oob::main", 29), nxt


def test_address_sanitizer(world):
    # A sanitized strobe build's test run sends ASan reports to files (run-e2e.sh):
    # this program's report must go to its stderr as usual.
    sid, pid = launch(world, "crash_asan", env=["ASAN_OPTIONS=detect_leaks=0"])
    st = wait_ended(world, sid)
    assert st["status"] == "exited" and st["exitCode"] == 1, st
    [e] = crash_events(world, sid)
    assert e["kind"] == "sanitizer" and "signal" not in e, e
    s = e["sanitizer"]
    assert s["tool"] == "AddressSanitizer", s
    assert re.fullmatch(r"heap-buffer-overflow on address 0x[0-9a-f]+ at pc 0x[0-9a-f]+ "
                        r"bp 0x[0-9a-f]+ sp 0x[0-9a-f]+", s["report"]) or \
        re.fullmatch(r"heap-buffer-overflow on address 0x[0-9a-f]+", s["report"]), s
    assert s["summary"] == ("SUMMARY: AddressSanitizer: heap-buffer-overflow "
                            "tests/fixtures/crash_asan.c:28 in fill"), s
    q = ctl_json(world, "query", sid, "--type", "stderr", "--limit", "500")
    by_id = {x["id"]: x["text"] for x in q["events"]}
    assert len(s["reportEventIds"]) >= 2, s
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in by_id[s["reportEventIds"][0]]
    f = crash_frame(e)
    src = os.path.join(FIXTURE_SRC, "crash_asan.c")
    assert (f["function"], f["file"], f["line"]) == ("fill", src, 28), f
    assert [a["name"] for a in f["arguments"]] == ["buf", "n"]
    assert f["arguments"][1]["value"] == 8
    lines = text_of(world, sid)
    i = lines.index("AddressSanitizer: " + s["report"])
    assert lines[i + 1] == "  " + s["summary"], lines
    assert lines[i + 2] == "  report in events: " + ", ".join(s["reportEventIds"]), lines


# ---- several processes ------------------------------------------------------------------

def test_forked_worker_crash(world):
    sid, parent = launch(world, "fork_workers")
    st = wait_ended(world, sid)
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    out = [x["text"] for x in ctl_json(world, "query", sid, "--type", "stdout")["events"]]
    workers = dict(re.fullmatch(r"worker (\d) pid (\d+)", t).groups() for t in out
                   if re.fullmatch(r"worker \d pid \d+", t))
    assert sorted(workers) == ["0", "1", "2"], out
    assert "worker 1 killed by signal 11" in out and "worker 2 exited with code 0" in out
    w1 = int(workers["1"])
    [e] = crash_events(world, sid)
    assert e["pid"] == w1 and e["threadId"] == w1, e
    src = os.path.join(FIXTURE_SRC, "fork_workers.c")
    assert frame_sites(e["frames"], 3) == [(0, "do_work", src, 25),
                                           (1, "start_worker", src, 35),
                                           (2, "main", src, 45)]
    assert e["frames"][0]["arguments"] == [{"name": "n", "type": "int", "value": 1}]
    assert e["frames"][1]["arguments"] == [{"name": "n", "type": "int", "value": 1}]
    assert e["locals"] == [{"name": "results", "type": "int[3]", "value": [10, 20, 30]},
                           {"name": "out", "type": "int *", "value": None}]
    assert e["text"] == "SIGSEGV (SEGV_MAPERR) at address 0x0 in do_work (fork_workers.c:25)"

    lines = text_of(world, sid, "--pid", str(w1))
    assert lines[0] == "session %s, pid %d, thread %d: %s" % (sid, w1, w1, e["text"]), lines
    assert lines[lines.index("locals of #0 do_work:") + 1:][:2] == \
        ["  results = [10,20,30]", "  out = null"], lines
    assert ctl_json(world, "crash", sid, "--pid", str(w1)) == [e]
    r = world.strobectl("crash", sid, "--pid", str(parent))
    assert r.rc == 3 and r.out == "no crash recorded in session %s for pid %d\n" % (sid, parent)


# ---- no crash, errors, usage ----------------------------------------------------------

def test_no_crash_exits_3(world):
    sid, _ = launch(world, "hello_exit3")
    wait_ended(world, sid)
    r = world.strobectl("crash", sid)
    assert r.rc == 3 and r.out == "no crash recorded in session %s\n" % sid, r
    r = world.strobectl("--json", "crash", sid)
    assert r.rc == 3 and r.json() == [], r


def test_unknown_session(world):
    for args in (["crash", "nosuch-2000-01-01-00h00"],
                 ["--json", "crash", "nosuch-2000-01-01-00h00"],
                 ["crash", "nosuch-2000-01-01-00h00", "--pid", "5"]):
        r = world.strobectl(*args)
        assert r.rc == 1 and "SESSION_NOT_FOUND" in r.err, r


def test_usage(world):
    for args in (["crash"], ["crash", "a", "b"], ["crash", "s", "--pid", "x"],
                 ["crash", "s", "--pid", "0"], ["crash", "s", "--bogus"],
                 ["crash", "s", "--registers=1"]):
        r = world.strobectl(*args)
        assert r.rc == 64 and "usage: strobectl crash SESSION" in r.err, r
    r = world.strobectl("crash", "--help")
    assert r.rc == 0, r
    assert "strobectl crash SESSION [--pid N] [--full-paths] [--registers]" in r.out, r
