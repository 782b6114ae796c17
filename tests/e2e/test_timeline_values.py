"""Decoding that reads well (issue 13, items 6 and 8's values; docs/PROTOCOL.md
"Function events" and "Crash events"), on tests/fixtures/values_zoo.c: unsigned char
and uint8_t as numbers, unions shown once, function pointers by symbol, the argument
budget shared across arguments, large structs at depth 1 and glibc's structs opaque
unless a depth is asked for, the short renderings of summary events, a crash that
prints a struct once for every frame pointing to it, and a kill()-sent SIGSEGV
reported with its sender instead of a fault address."""

import json
import os
import re

import pytest

from conftest import REPO

HEX = re.compile(r"^0x[0-9a-f]+$")


def run_traced(mcp, patterns, depth=None, args=None):
    """Stages patterns (and serializationDepth), runs values_zoo to its end; returns
    the session id."""
    a = {"add": list(patterns)}
    if depth is not None:
        a["serializationDepth"] = depth
    mcp.call_tool("debug_trace", a)
    r = mcp.launch("values_zoo", project=REPO, args=args)
    st = mcp.wait_ended(r["sessionId"])
    assert st["status"] == "exited" and st["exitCode"] == 0, st
    return r["sessionId"]


def call(mcp, sid, function, verbose=True):
    """The (enter, exit) of function's one call (one query each: a verbose event with
    16 KiB of arguments fills a 16 KB answer alone)."""
    def one(event_type):
        [e] = mcp.query(sid, function={"equals": function}, eventType=event_type,
                        verbose=verbose)["events"]
        return e
    return one("function_enter"), one("function_exit")


def args_of(enter):
    return {a["name"]: a["value"] for a in enter["arguments"]}


@pytest.mark.valgrind_sample
def test_bytes_unions_and_function_pointers(mcp):
    sid = run_traced(mcp, ["take_bytes", "take_word", "call_ops"])
    r = args_of(call(mcp, sid, "take_bytes")[0])["r"]
    assert HEX.match(r.pop("@ptr")), r
    # Only plain char is a character: unsigned char, uint8_t, signed char and int8_t
    # are numbers whatever their value ('A', 'B', 'C' are printable).
    assert r == {"uc": 65, "u8": 66, "sc": 67, "i8": -5, "c": "D", "name": "zoo"}, r

    a = args_of(call(mcp, sid, "take_word")[0])
    # One union, shown once: its bytes and its first member (u), not d and b too.
    assert a["w"] == {"@bytes": "4847464544434241", "u": "4702394921427289928"}, a
    assert HEX.match(a["pw"].pop("@ptr")) and a["pw"] == a["w"], a

    ops = args_of(call(mcp, sid, "call_ops")[0])["o"]
    assert (ops["name"], ops["handler"], ops["none"], ops["inside"]) == \
        ("ops", "twice", None, "twice+0x4"), ops


def test_large_structs_at_depth_one_and_system_structs_opaque(mcp):
    sid = run_traced(mcp, ["serve_client", "lock_and_log"])
    enter, _ = call(mcp, sid, "serve_client")
    c = args_of(enter)["c"]
    # 60 members: depth 1 by default, nested structs are markers.
    assert (c["id"], c["fd"], c["resp"]) == (77, 12, 2), c
    assert re.fullmatch(r"<struct db at 0x[0-9a-f]+>", c["db"]), c
    assert re.fullmatch(r"<struct reply_block at 0x[0-9a-f]+>", c["reply"]), c
    assert c["querybuf"] == "*3\r\n$3\r\nSET\r\n", c

    a = args_of(call(mcp, sid, "lock_and_log")[0])
    pid = mcp.status(sid)["pid"]
    m, f = a["m"], a["f"]
    assert re.fullmatch(r"<pthread_mutex_t 0x[0-9a-f]+>", m.pop("@opaque")), m
    assert m == {"owner": pid, "locked": 1, "count": 0}, m
    assert re.fullmatch(r"<FILE 0x[0-9a-f]+>", f.pop("@opaque")), f
    assert f == {"fileno": 1}, f

    # A depth asked for expands both.
    sid = run_traced(mcp, ["serve_client", "lock_and_log"], depth=2)
    c = args_of(call(mcp, sid, "serve_client")[0])["c"]
    assert HEX.match(c["db"].pop("@ptr")) and c["db"]["id"] == 9, c["db"]
    m = args_of(call(mcp, sid, "lock_and_log")[0])["m"]
    assert m["__data"]["__owner"] == mcp.status(sid)["pid"] and "__size" in m, m


def test_argument_budget_is_shared(mcp):
    sid = run_traced(mcp, ["four_blobs"])
    enter, _ = call(mcp, sid, "four_blobs")
    a = args_of(enter)
    # Three blobs of 6 KiB of text: each gets its share of the 16 KiB, the int after
    # them is whole, and every blob shows text before it is cut.
    assert a["last"] == 7, a
    for name, letter in (("a", "a"), ("b", "b"), ("c", "c")):
        texts = a[name]["text"]
        assert texts[0].startswith(letter * 1000), (name, texts[:1])
        assert texts[-1].startswith("...("), (name, texts[-1])
    assert len(json.dumps(enter["arguments"])) < 17000


def test_short_renderings_in_summary_events(mcp):
    sid = run_traced(mcp, ["greet", "make_pair", "take_bytes", "serve_client"])
    enter, exit_ = call(mcp, sid, "greet", verbose=False)
    assert (enter["argsShort"], exit_["retShort"]) == ('who="world"', '"hello world"')
    enter, exit_ = call(mcp, sid, "make_pair", verbose=False)
    assert (enter["argsShort"], exit_["retShort"]) == ("x=3, y=4", "{x=3, y=4}")
    enter, _ = call(mcp, sid, "take_bytes", verbose=False)
    # an object a pointer led to keeps its address (a use-after-free's evidence)
    assert re.fullmatch(r'r=@0x[0-9a-f]+ \{uc=65, u8=66, sc=67, i8=-5, c="D", name="zoo"\}',
                        enter["argsShort"]), enter
    enter, exit_ = call(mcp, sid, "serve_client", verbose=False)
    m = re.match(r"c=(@0x[0-9a-f]+ )\{id=77, fd=12, resp=2, ", enter["argsShort"])
    assert m, enter
    # cut at its share (the address on top), with the brace it was cut in closed after
    # the ellipsis
    assert len(enter["argsShort"].encode()) <= 84 + len(m.group(1))
    assert enter["argsShort"].endswith("\u2026}"), enter
    assert exit_["retShort"] == "21", exit_
    # strobectl's text shows them too.
    r = mcp.world.strobectl("query", sid, "--type", "function_exit")
    assert r.rc == 0 and re.search(r'function_exit greet \(values_zoo\.c:\d+\) took [0-9.]+ '
                                   r'ms => "hello world"\n', r.out), r


def test_crash_prints_a_shared_struct_once(mcp):
    r = mcp.launch("values_zoo", project=REPO, args=["crash"])
    mcp.wait_ended(r["sessionId"])
    [ev] = mcp.query(r["sessionId"], eventType="crash")["events"]
    frames = {f["function"]: f for f in ev["frames"] if "index" in f}
    inner = {a["name"]: a["value"] for a in frames["inner"]["arguments"]}
    c = inner["c"]
    assert c["fd"] == 12 and HEX.match(c["@ptr"]), c
    for name in ("middle", "outer"):
        args = {a["name"]: a["value"] for a in frames[name]["arguments"]}
        assert args["c"] == {"@ptr": c["@ptr"], "@see": "frame %d" % frames["inner"]["index"]}
    assert len(json.dumps(ev)) < 8000


def test_signal_sent_by_kill_has_a_sender_not_a_fault_address(mcp):
    r = mcp.launch("values_zoo", project=REPO, args=["kill"])
    mcp.wait_ended(r["sessionId"])
    [ev] = mcp.query(r["sessionId"], eventType="crash")["events"]
    assert (ev["signal"], ev["signalCode"]) == ("SIGSEGV", "SI_USER"), ev
    assert "faultAddress" not in ev and "stackOverflow" not in ev, ev
    assert ev["sender"] == {"pid": r["pid"], "uid": os.getuid(), "self": True}, ev
    assert ev["text"].startswith("SIGSEGV (SI_USER) sent by pid %d (itself) in main"
                                 % r["pid"]), ev
