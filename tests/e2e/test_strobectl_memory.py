"""strobectl memory read|write|poll, watch, unwatch and trace --watch/--unwatch:
the same debug_memory and debug_trace calls from a shell, human and --json output,
exit codes (4 when targets failed, 64 usage errors) as in its --help. Fixture:
poll_ticker (tick() increments g_counter every 20 ms)."""

import re

import pytest

from conftest import REPO, fixture_path, wait_until


def ctl_json(world, *args):
    r = world.strobectl("--json", *args)
    assert r.rc == 0, r
    return r.json()


def launch_ticker(world):
    res = ctl_json(world, "launch", "--project-root", REPO, fixture_path("poll_ticker"))
    world.target_pids.add(res["pid"])
    sid = res["sessionId"]
    wait_until(lambda: ctl_json(world, "query", sid, "--type", "stdout")["totalCount"] >= 3,
               10, what="the ticker's first lines")
    return sid


def test_trace_watch_and_query_rendering(world):
    sid = launch_ticker(world)
    r = world.strobectl("trace", sid, "--add", "tick", "--add", "other_work",
                        "--watch", "g_counter@tick", "--watch", "g_tempo")
    assert r.rc == 0, r
    assert "activeWatches" in r.out and "g_counter" in r.out, r.out
    res = ctl_json(world, "trace", sid)
    aw = {w["label"]: w for w in res["activeWatches"]}
    assert aw["g_counter"]["on"] == ["tick"] and "on" not in aw["g_tempo"]
    wait_until(lambda: ctl_json(world, "query", sid, "--type", "function_exit",
                                "--function-equals", "other_work")["totalCount"] >= 1,
               10, what="an other_work exit")
    q = world.strobectl("query", sid, "--verbose", "--function-equals", "tick",
                        "--limit", "4")
    assert q.rc == 0, q
    lines = [l for l in q.out.splitlines() if "tick" in l and "function_" in l]
    assert lines and all(re.search(r"\[g_counter=\d+ g_tempo=120\]", l) for l in lines), q.out
    q = world.strobectl("query", sid, "--verbose", "--function-equals", "other_work",
                        "--limit", "2")
    lines = [l for l in q.out.splitlines() if "function_" in l]
    assert lines and all("[g_tempo=120]" in l for l in lines), q.out
    r = world.strobectl("trace", sid, "--unwatch", "g_counter", "--unwatch", "g_tempo")
    assert r.rc == 0, r
    assert ctl_json(world, "trace", sid)["activeWatches"] == []
    r = world.strobectl("trace", sid, "--unwatch", "nope")
    assert r.rc == 1 and "VALIDATION_ERROR" in r.err, r
    world.strobectl("stop", sid)


def test_memory_read_human_and_exit_codes(world):
    """memory read SESSION VAR... (also memory SESSION VAR..., see test_memory.py)."""
    sid = launch_ticker(world)
    r = world.strobectl("memory", "read", sid, "g_tempo", "g_cfg.name")
    assert r.rc == 0, r
    assert re.search(r"^g_tempo = 120 \(double at 0x[0-9a-f]+\)$", r.out, re.M), r.out
    assert re.search(r'^g_cfg\.name = "ticker" \(char ?\[16\] at 0x[0-9a-f]+\)$', r.out,
                     re.M), r.out
    r = world.strobectl("memory", "read", sid, "g_tempo", "g_nope")
    assert r.rc == 4, r
    assert re.search(r"^g_nope: VARIABLE_NOT_FOUND: ", r.out, re.M), r.out
    assert "g_tempo = 120" in r.out
    r = world.strobectl("--json", "memory", "read", sid, "g_nope")
    assert r.rc == 4, r
    assert r.json()["results"][0]["target"] == "g_nope"
    world.strobectl("stop", sid)


def test_memory_write(world):
    sid = launch_ticker(world)
    r = world.strobectl("memory", "write", sid, "g_tempo=98.5")
    assert r.rc == 0, r
    assert re.search(r"^g_tempo: 120 -> 98.5 \(double at 0x[0-9a-f]+\)$", r.out, re.M), r.out
    res = ctl_json(world, "memory", "read", sid, "g_tempo")
    assert res["results"][0]["value"] == 98.5
    world.strobectl("stop", sid)


@pytest.mark.valgrind_sample
def test_memory_poll_and_snapshot_rendering(world):
    sid = launch_ticker(world)
    r = world.strobectl("memory", "poll", sid, "g_counter", "g_tempo", "--interval", "50",
                        "--duration", "300")
    assert r.rc == 0, r
    assert "polling 2 target(s) every 50 ms for 300 ms" in r.out, r.out
    assert "strobectl query %s --type variable_snapshot" % sid in r.out
    wait_until(lambda: ctl_json(world, "query", sid, "--type",
                                "variable_snapshot")["totalCount"] >= 6, 10,
               what="6 snapshots")
    q = world.strobectl("query", sid, "--type", "variable_snapshot")
    lines = [l for l in q.out.splitlines() if "variable_snapshot" in l]
    assert len(lines) == 6, q.out
    assert all(re.search(r"variable_snapshot g_counter=\d+ g_tempo=120$", l) for l in lines), q.out
    r = world.strobectl("memory", "poll", sid, "g_counter", "g_nope", "--interval", "50",
                        "--duration", "100")
    assert r.rc == 4, r
    assert "g_nope: VARIABLE_NOT_FOUND" in r.out, r.out
    world.strobectl("stop", sid)


@pytest.mark.debug_traps
def test_watch_and_unwatch(world):
    sid = launch_ticker(world)
    r = world.strobectl("--json", "watch", sid, "g_counter")
    assert r.rc == 0, r
    w = r.json()
    wid = w["watchId"]
    assert isinstance(wid, int) and w["label"] == "g_counter", w
    wait_until(lambda: ctl_json(world, "query", sid, "--type", "watch_hit")["totalCount"] >= 2,
               10, what="watch hits")
    q = world.strobectl("query", sid, "--type", "watch_hit", "--limit", "2")
    assert q.rc == 0 and "g_counter" in q.out and "tick" in q.out, q.out
    r = world.strobectl("unwatch", sid, str(wid))
    assert r.rc == 0, r
    r = world.strobectl("unwatch", sid, "all")  # none left: says so, and succeeds
    assert r.rc == 0 and "(none)" in r.out, r
    world.strobectl("stop", sid)


@pytest.mark.parametrize("args, words", [
    (["memory"], "SESSION"),
    (["memory", "read", "s"], "at least one"),
    (["memory", "read"], "SESSION"),
    (["memory", "read", "s", "--type", "i32"], "after the --address"),
    (["memory", "write", "s", "g_tempo"], "VAR=VALUE"),
    (["memory", "poll", "s", "g"], "--interval"),
    (["memory", "read", "s", "g", "--interval", "50"], "memory poll"),
    (["memory", "read", "s", "g", "--depth", "9"], "--depth"),
    (["watch", "s"], "VAR or --address"),
    (["watch", "s", "g", "--access", "read"], "--access"),
    (["watch", "s", "g", "--address", "0x10"], "not both"),
    (["unwatch", "s"], "ID"),
    (["unwatch", "s", "x1"], "ID"),
    (["trace", "s", "--watch", "@tick"], "--watch"),
    (["trace", "s", "--watch", "g@"], "pattern"),
])
def test_usage_errors(world, args, words):
    r = world.strobectl(*args)
    assert r.rc == 64, r
    assert words in r.err, r.err


def test_help_documents_the_verbs(world):
    out = ""
    for verb in ("memory", "watch", "unwatch", "trace"):
        r = world.strobectl("help", verb)
        assert r.rc == 0, r
        out += r.out
    for words in ("memory read SESSION", "memory write SESSION VAR=VALUE",
                  "memory poll SESSION", "watch SESSION", "unwatch SESSION ID|all",
                  "--watch VAR[@PATTERN]", "4   some targets"):
        assert words in out, words
