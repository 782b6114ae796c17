"""debug_memory read and write (docs/PROTOCOL.md "Memory"): globals and statics of a
running program and of its shared library, read and written through MCP while the
program runs. The globals_all fixture (its top comment) holds a global of every base
type, structs, unions, arrays, pointers, a static inside tick(), a thread-local, and
links libglobals.so (lib_counter, and lib_write_only which -O2 optimized out). It
prints "report ..." when g_report is set, so a write is confirmed by the program
itself. Raw addresses come from `nm` plus the load bias of /proc/PID/maps."""

import os
import re
import signal
import stat
import subprocess

import pytest

from conftest import T_LONG, fixture_path, wait_until


def launch(mcp):
    r = mcp.launch("globals_all")
    sid, pid = r["sessionId"], r["pid"]
    mcp.wait_events(sid, 1, eventType="stdout")
    return sid, pid


def read(mcp, sid, *targets, **kw):
    a = {"sessionId": sid, "targets": [t if isinstance(t, dict) else {"variable": t}
                                       for t in targets]}
    a.update(kw)
    return mcp.call_tool("debug_memory", a)["results"]


def value(mcp, sid, expr, **kw):
    r = read(mcp, sid, expr, **kw)[0]
    assert "error" not in r, r
    return r["value"]


def write(mcp, sid, *pairs):
    a = {"action": "write", "sessionId": sid,
         "targets": [dict(t, value=v) if isinstance(t, dict) else {"variable": t, "value": v}
                     for t, v in pairs]}
    return mcp.call_tool("debug_memory", a)["results"]


def address_of(pid, symbol):
    """The runtime address of a global of globals_all (a PIE) in process pid."""
    exe = fixture_path("globals_all")
    nm = subprocess.run(["nm", exe], stdout=subprocess.PIPE, check=True, text=True).stdout
    link = next(int(p[0], 16) for p in (line.split() for line in nm.splitlines())
                if len(p) == 3 and p[2] == symbol)
    real = os.path.realpath(exe)
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == real and \
                    int(fields[2], 16) == 0:
                return link + int(fields[0].split("-")[0], 16)
    raise AssertionError("no mapping of %s in pid %d" % (exe, pid))


@pytest.mark.valgrind_sample
def test_read_every_base_type(mcp):
    sid, pid = launch(mcp)
    expected = [
        ("g_bool", "_Bool", 1, True),
        ("g_char", "char", 1, "A"),
        ("g_schar", "signed char", 1, -5),
        ("g_uchar", "unsigned char", 1, 200),
        ("g_short", "short int", 2, -1234),
        ("g_ushort", "short unsigned int", 2, 60000),
        ("g_int", "int", 4, -42),
        ("g_uint", "unsigned int", 4, 4000000000),
        ("g_long", "long int", 8, -1234567890123),
        ("g_ulong", "long unsigned int", 8, 12345678901234),
        ("g_llong", "long long int", 8, "-9000000000000000000"),
        ("g_ullong", "long long unsigned int", 8, "18000000000000000000"),
        ("g_float", "float", 4, 1.5),
        ("g_double", "double", 8, 3.25),
        ("g_ldouble", "long double", 16, 2.5),
        ("g_enum", "enum color", 4, "GREEN"),
    ]
    results = read(mcp, sid, *[e[0] for e in expected])
    assert len(results) == 16
    for (name, type_, size, val), r in zip(expected, results):
        assert r["target"] == name
        assert r["type"] == type_, r
        assert r["size"] == size, r
        assert r["value"] == val, r
        assert r["value"] is not True or val is True, r
        assert re.fullmatch(r"0x[0-9a-f]+", r["address"]), r
    assert results[6]["address"] == hex(address_of(pid, "g_int"))


@pytest.mark.valgrind_sample
def test_read_aggregates_pointers_and_statics(mcp):
    sid, pid = launch(mcp)
    assert value(mcp, sid, "g_name") == "hello"
    assert value(mcp, sid, "g_array") == [10, 20, 30, 40, 50]
    assert value(mcp, sid, "g_point") == {"x": 7, "y": -8}
    assert value(mcp, sid, "g_union") == {"i": 1094861636, "f": 12.141422,
                                          "bytes": [68, 67, 66, 65]}  # unsigned char[4]
    assert value(mcp, sid, "g_config.retries") == 3
    assert value(mcp, sid, "g_config.origin") == {"x": 1, "y": 2}
    assert value(mcp, sid, "g_config.where->y") == -8
    assert value(mcp, sid, "g_config_ptr->ratio") == 0.5
    assert value(mcp, sid, "g_array[3]") == 40
    assert value(mcp, sid, "g_list->next->next->value") == 3
    assert value(mcp, sid, "*g_config_ptr->where") == {"x": 7, "y": -8}
    assert value(mcp, sid, "g_const") == 99
    assert value(mcp, sid, "g_static") == 17
    r = read(mcp, sid, "g_array[3]", "g_array")
    assert int(r[0]["address"], 16) == int(r[1]["address"], 16) + 12
    assert r[1]["type"] == "int[5]" and r[1]["size"] == 20
    # One past a member array's end: the bytes of the next member, named, as an
    # overflow bug would write them (gdb reads them too)
    r = read(mcp, sid, "g_config.name[8]", "g_config.origin")
    assert r[0]["note"] == "'g_config.name' has 8 elements (char[8]): index 8 is past its " \
        "end, read anyway as C would: those bytes are g_config.origin.x.", r[0]
    assert r[0]["address"] == r[1]["address"] and r[0]["value"] == 1, r

    # The static inside tick() counts the program's turns: it grows while we read.
    first = value(mcp, sid, "tick::calls")
    assert isinstance(first, int) and first >= 1
    wait_until(lambda: value(mcp, sid, "calls") > first, T_LONG, what="tick::calls to grow")

    # The shared library's global, typed by the library's DWARF. The program uses it,
    # so its live copy is the program's (a copy relocation), which lib_step() counts up.
    r = read(mcp, sid, "lib_counter")[0]
    assert r["type"] == "int" and r["value"] >= 1000, r
    assert r["address"] == hex(address_of(pid, "lib_counter")), r
    wait_until(lambda: value(mcp, sid, "lib_counter") > r["value"], T_LONG,
               what="lib_counter to count")


def test_depth(mcp):
    sid, _ = launch(mcp)
    shallow = value(mcp, sid, "g_config")
    assert shallow["retries"] == 3 and shallow["name"] == "cfg"
    assert shallow["origin"] == "<struct point>"
    assert re.fullmatch(r"<struct point at 0x[0-9a-f]+>", shallow["where"]), shallow
    deep = value(mcp, sid, "g_config", depth=2)
    assert deep["origin"] == {"x": 1, "y": 2}
    assert deep["where"]["x"] == 7 and deep["where"]["y"] == -8
    assert re.fullmatch(r"0x[0-9a-f]+", deep["where"]["@ptr"])
    lst = value(mcp, sid, "g_list", depth=3)
    assert lst["value"] == 1 and lst["next"]["value"] == 2
    assert lst["next"]["next"]["value"] == 3 and lst["next"]["next"]["next"] is None
    lst = value(mcp, sid, "g_list", depth=2)
    assert re.fullmatch(r"<struct node at 0x[0-9a-f]+>", lst["next"]["next"]), lst
    lst = value(mcp, sid, "g_list", depth=1)
    assert re.fullmatch(r"<struct node at 0x[0-9a-f]+>", lst["next"]), lst


def test_read_addresses_and_bytes(mcp):
    sid, pid = launch(mcp)
    g_int, g_double = address_of(pid, "g_int"), address_of(pid, "g_double")
    results = read(mcp, sid,
                   {"address": hex(g_int), "type": "i32"},
                   {"address": hex(g_int), "type": "u32"},
                   {"address": hex(g_int), "type": "i8"},
                   {"address": hex(g_double), "type": "f64"},
                   {"address": hex(address_of(pid, "g_float")), "type": "f32"},
                   {"address": hex(address_of(pid, "g_ushort")), "type": "u16"},
                   {"address": hex(address_of(pid, "g_config_ptr")), "type": "pointer"},
                   {"address": hex(address_of(pid, "g_llong")), "type": "i64"},
                   {"address": hex(address_of(pid, "g_buffer")), "type": "bytes", "size": 64})
    assert [r.get("value") for r in results[:8]] == [
        -42, 4294967254, -42, 3.25, 1.5, 60000, hex(address_of(pid, "g_config")),
        "-9000000000000000000"]
    assert [r["type"] for r in results[:4]] == ["i32", "u32", "i8", "f64"]
    assert results[0]["address"] == hex(g_int) and results[0]["size"] == 4
    b = results[8]
    assert "value" not in b and "error" not in b, b
    assert b["type"] == "bytes" and b["size"] == 64
    assert b["preview"] == " ".join("%02x" % i for i in range(32))
    home = os.path.realpath(mcp.world.home)
    path = b["file"]
    assert os.path.realpath(path).startswith(home + os.sep), (path, home)
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    with open(path, "rb") as f:
        assert f.read() == bytes(range(64))
    # A second dump is a new file.
    again = read(mcp, sid, {"address": hex(address_of(pid, "g_buffer")), "type": "bytes",
                            "size": 8})[0]
    assert again["file"] != path and again["preview"] == "00 01 02 03 04 05 06 07"


@pytest.mark.valgrind_sample
def test_write_and_the_program_sees_it(mcp):
    sid, pid = launch(mcp)
    results = write(mcp, sid,
                    ("g_int", 7), ("g_double", -1.5), ("g_char", "Z"), ("g_enum", "BLUE"),
                    ("g_name", "world"), ("g_config.retries", 9),
                    ("g_ulong", "18446744073709551615"), ("g_bool", False),
                    ("g_schar", -128), ("g_float", 0.25), ("g_static", 5),
                    ("g_config_ptr->origin.x", "0x10"), ("g_uchar", 255),
                    ("g_null_ptr", hex(address_of(pid, "g_int"))))
    got = [(r["target"], r["oldValue"], r["value"]) for r in results]
    assert got == [
        ("g_int", -42, 7), ("g_double", 3.25, -1.5), ("g_char", "A", "Z"),
        ("g_enum", "GREEN", "BLUE"), ("g_name", "hello", "world"),
        ("g_config.retries", 3, 9),
        ("g_ulong", 12345678901234, "18446744073709551615"), ("g_bool", True, False),
        ("g_schar", -5, -128), ("g_float", 1.5, 0.25), ("g_static", 17, 5),
        ("g_config_ptr->origin.x", 1, 16), ("g_uchar", 200, 255),
        ("g_null_ptr", None, hex(address_of(pid, "g_int"))),
    ], got
    assert results[0]["type"] == "int" and results[0]["address"] == hex(address_of(pid, "g_int"))
    assert value(mcp, sid, "*g_null_ptr") == 7

    # An address target writes by its hint.
    r = write(mcp, sid, ({"address": hex(address_of(pid, "g_short")), "type": "i16"}, -2))[0]
    assert (r["oldValue"], r["value"], r["type"]) == (-1234, -2, "i16")

    write(mcp, sid, ("g_report", 1))
    line = ("report g_int=7 g_double=-1.5 g_char=Z g_enum=6 g_name=world g_config.retries=9 "
            "g_ulong=18446744073709551615 g_bool=0 g_schar=-128 g_float=0.25 g_static=5 "
            "lib_counter_set=1")

    def reported():
        return any(e.get("text", "").strip() == line
                   for e in mcp.all_events(sid, eventType="stdout"))
    wait_until(reported, T_LONG, what="the program to print the written values")
    assert value(mcp, sid, "g_report") == 0  # the program cleared it


def error_of(result):
    assert "error" in result and "value" not in result, result
    return result["error"]["code"], result["error"]["message"]


@pytest.mark.valgrind_sample
def test_read_errors_per_target(mcp):
    sid, pid = launch(mcp)
    results = read(mcp, sid, "g_conifg", "g_tls", "lib_write_only", "g_int.", "g_config.retrys",
                   "g_config_ptr.retries", "g_array[9]", "*g_null_ptr", "*g_bad_ptr",
                   {"address": "0x10", "type": "i32"}, "main::turn", "g_int", "visits")
    code, msg = error_of(results[0])
    assert code == "VARIABLE_NOT_FOUND" and "did you mean 'g_config'" in msg, msg
    assert "locals" in msg, msg  # the hint says where locals are
    code, msg = error_of(results[1])
    assert code == "VARIABLE_UNAVAILABLE" and "thread-local" in msg, msg
    code, msg = error_of(results[2])
    assert code == "VARIABLE_UNAVAILABLE" and "optimized out" in msg, msg
    assert "libglobals.so" in msg and "globals_lib.c" in msg, msg
    code, msg = error_of(results[3])
    assert code == "BAD_EXPRESSION" and "column 7" in msg, msg
    code, msg = error_of(results[4])
    assert code == "BAD_EXPRESSION", msg
    assert "no member 'retrys'; struct config has members retries, ratio, name, origin, " \
           "where" in msg, msg
    code, msg = error_of(results[5])
    assert code == "BAD_EXPRESSION" and "use 'g_config_ptr->retries'" in msg, msg
    # past an array's end is read as C reads it (what an overflow wrote), with a note
    assert "index 9 is past its end, read anyway" in results[6]["note"], results[6]
    assert "value" in results[6], results[6]
    code, msg = error_of(results[7])
    assert code == "MEMORY_UNREADABLE" and "'g_null_ptr' is NULL" in msg, msg
    code, msg = error_of(results[8])
    assert code == "MEMORY_UNREADABLE" and "0x10" in msg, msg
    code, msg = error_of(results[9])
    assert code == "MEMORY_UNREADABLE" and "0x10" in msg, msg
    assert results[9]["target"] == "0x10"
    code, msg = error_of(results[10])
    assert code == "VARIABLE_NOT_FOUND", msg
    assert results[11]["value"] == -42  # the good target still answers
    code, msg = error_of(results[12])
    assert code == "VARIABLE_NOT_FOUND" and "names several variables" in msg, msg
    assert "'tick::visits'" in msg and "'report::visits'" in msg, msg

    # A variable of a library without debug info: its symbol says where to read it raw.
    code, msg = error_of(read(mcp, sid, "environ")[0])
    assert code == "VARIABLE_UNAVAILABLE", msg
    m = re.search(r"'environ' is a symbol of libc\.so\.6, which has no debug info for it: 8 "
                  r"bytes at (0x[0-9a-f]+) of unknown type\. Read it raw as \{address: \"(0x[0-9a-f]+)\", "
                  r"type: \"u64\"\}", msg)
    assert m and m.group(1) == m.group(2), msg
    raw = read(mcp, sid, {"address": m.group(1), "type": "pointer"})[0]
    assert re.fullmatch(r"0x7[0-9a-f]+", raw["value"]), raw  # the environment, on the stack


def test_write_errors(mcp):
    sid, _ = launch(mcp)
    results = write(mcp, sid, ("g_uchar", 300), ("g_schar", -129), ("g_int", 2.5),
                    ("g_int", "4294967296"), ("g_name", "x" * 16), ("g_point", 1),
                    ("g_array", 1), ("g_enum", "PURPLE"), ("g_bool", 2), ("g_char", "ab"),
                    ("g_float", 1e39), ("g_ulong", -1), ("app_missing", 1), ("g_int", 5))
    code, msg = error_of(results[0])
    assert code == "VALUE_OUT_OF_RANGE" and "0 to 255" in msg and "unsigned char" in msg, msg
    code, msg = error_of(results[1])
    assert code == "VALUE_OUT_OF_RANGE" and "-128 to 127" in msg, msg
    code, msg = error_of(results[2])
    assert code == "VALUE_OUT_OF_RANGE" and "not an integer" in msg, msg
    code, msg = error_of(results[3])
    assert code == "VALUE_OUT_OF_RANGE" and "-2147483648 to 2147483647" in msg, msg
    code, msg = error_of(results[4])
    assert code == "VALUE_OUT_OF_RANGE" and "at most 15" in msg, msg
    code, msg = error_of(results[5])
    assert code == "VALIDATION_ERROR" and "'g_point.x'" in msg, msg
    code, msg = error_of(results[6])
    assert code == "VALIDATION_ERROR" and "'g_array[0]'" in msg, msg
    code, msg = error_of(results[7])
    assert code == "VALUE_OUT_OF_RANGE" and "RED, GREEN, BLUE" in msg, msg
    assert error_of(results[8])[0] == "VALUE_OUT_OF_RANGE"
    assert error_of(results[9])[0] == "VALUE_OUT_OF_RANGE"
    code, msg = error_of(results[10])
    assert code == "VALUE_OUT_OF_RANGE" and "float" in msg, msg
    code, msg = error_of(results[11])
    assert code == "VALUE_OUT_OF_RANGE" and "0 to 18446744073709551615" in msg, msg
    assert error_of(results[12])[0] == "VARIABLE_NOT_FOUND"
    assert results[13]["value"] == 5
    # Nothing out of range was written.
    assert value(mcp, sid, "g_uchar") == 200 and value(mcp, sid, "g_name") == "hello"


def test_request_errors(mcp):
    sid, pid = launch(mcp)
    e = mcp.tool_error("debug_memory", {"sessionId": sid,
                                        "targets": [{"variable": "g_int"}] * 17})
    assert e.code == "LIMIT_EXCEEDED" and "17" in e.message and "16" in e.message, e
    for bad in ({"targets": []}, {"targets": "g_int"},
                {"targets": [{"variable": "g_int", "address": "0x10", "type": "i32"}]},
                {"targets": [{}]},
                {"targets": [{"address": "0x10"}]},
                {"targets": [{"address": "0x10", "type": "i33"}]},
                {"targets": [{"address": "0x10", "type": "bytes"}]},
                {"targets": [{"address": "0x10", "type": "bytes", "size": (1 << 20) + 1}]},
                {"targets": [{"address": "zz", "type": "i32"}]},
                {"targets": [{"variable": "g_int", "type": "i32"}]},
                {"targets": [{"variable": "g_int", "extra": 1}]},
                {"targets": [{"variable": "x" * 257}]},
                {"targets": [{"variable": "g_int"}], "depth": 6},
                {"targets": [{"variable": "g_int"}], "depth": 0},
                {"targets": [{"variable": "g_int"}], "variable": "g_int"},
                {"targets": [{"variable": "g_int"}], "pid": 1},
                {"action": "write", "targets": [{"variable": "g_int"}]},
                {"action": "write", "targets": [{"variable": "g_int", "value": {"a": 1}}]},
                {"action": "write", "targets": [{"variable": "g_int", "value": 1}], "depth": 2},
                {"action": "write",
                 "targets": [{"address": "0x10", "type": "bytes", "value": 1}]}):
        a = {"sessionId": sid}
        a.update(bad)
        e = mcp.tool_error("debug_memory", a)
        assert e.code == "VALIDATION_ERROR", (bad, e.code, e.message)
    e = mcp.tool_error("debug_memory", {"sessionId": "no-such-session",
                                        "targets": [{"variable": "g_int"}]})
    assert e.code == "SESSION_NOT_FOUND", e
    # Still answering after all that.
    assert value(mcp, sid, "g_int", pid=pid) == -42


@pytest.mark.valgrind_sample
def test_answer_budget(mcp):
    sid, _ = launch(mcp)
    res = mcp.call_tool("debug_memory", {"sessionId": sid,
                                         "targets": [{"variable": "g_text"}] * 16})
    import json
    assert len(json.dumps(res, separators=(",", ":"))) <= 16 * 1024
    assert "read them one per call" in res["truncated"], res.get("truncated")
    cut = [r for r in res["results"] if r.get("truncated")]
    kept = [r for r in res["results"] if not r.get("truncated")]
    assert cut and kept
    assert all(r["value"].startswith("<") and "read this target alone" in r["value"]
               for r in cut)
    assert all(r["value"].startswith("x" * 1000) for r in kept)


def test_process_exited(mcp):
    sid, pid = launch(mcp)
    assert value(mcp, sid, "g_int") == -42
    os.kill(pid, signal.SIGTERM)
    mcp.wait_ended(sid)
    e = mcp.tool_error("debug_memory", {"sessionId": sid, "targets": [{"variable": "g_int"}]})
    assert e.code == "PROCESS_EXITED", e
    assert "debug_launch" in e.message, e.message
    e = mcp.tool_error("debug_memory", {"action": "write", "sessionId": sid,
                                        "targets": [{"variable": "g_int", "value": 1}]})
    assert e.code == "PROCESS_EXITED", e


def test_strobectl_memory(mcp):
    sid, pid = launch(mcp)
    ctl = mcp.world.strobectl
    g_int = hex(address_of(pid, "g_int"))
    r = ctl("memory", sid, "g_int", "g_config.origin", "--depth", "2", "g_conifg",
            "--address", g_int + ":u8")
    assert r.rc == 4, r   # a target failed (strobectl's exit status 4)
    lines = r.out.splitlines()
    assert lines[0] == "g_int = -42 (int at %s)" % g_int, r.out
    assert lines[1].startswith('g_config.origin = {"x":1,"y":2} (struct point at 0x'), r.out
    assert lines[2].startswith("g_conifg: VARIABLE_NOT_FOUND: No global or static variable "
                               "'g_conifg'"), r.out
    assert lines[3] == "%s = 214 (u8 at %s)" % (g_int, g_int), r.out
    r = ctl("memory", sid, "--set", "g_int=12", "--set", "g_name=strobe", "--set",
            "g_bool=false")
    assert r.rc == 0, r
    assert r.out.splitlines() == [
        "g_int: -42 -> 12 (int at %s)" % g_int,
        'g_name: "hello" -> "strobe" (char[16] at %s)' % hex(address_of(pid, "g_name")),
        "g_bool: true -> false (_Bool at %s)" % hex(address_of(pid, "g_bool")),
    ], r.out
    r = ctl("--json", "memory", sid, "g_int")
    assert r.rc == 0 and r.json()["results"][0]["value"] == 12, r
    r = ctl("memory", sid)
    assert r.rc == 64 and "memory needs a VARIABLE" in r.err, r


def test_write_to_an_unmapped_address_is_refused_before_writing(mcp):
    """A write reads the old value first: at an unmapped address that read fails, so
    the answer is MEMORY_UNREADABLE and nothing is written (MEMORY_UNWRITABLE is left
    for memory /proc/PID/mem can read but not write)."""
    sid, _ = launch(mcp)
    r = mcp.call_tool("debug_memory", {"action": "write", "sessionId": sid,
                                       "targets": [{"address": "0x10", "type": "i32",
                                                    "value": 1}]})
    code, msg = error_of(r["results"][0])
    assert code == "MEMORY_UNREADABLE" and "0x10" in msg, msg
    assert value(mcp, sid, "g_int") is not None  # the program still reads fine
