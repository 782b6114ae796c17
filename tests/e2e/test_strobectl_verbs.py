"""strobectl's verb table (cli/ctl/verbs/ctl_verbs.h): help per verb (`help VERB`,
`VERB --help`, did-you-mean), the top-level keys of each verb's --json answer that an
agent relies on and its exit status (ctl_exit.h), next steps that speak shell instead
of MCP, and the progress line on a terminal (cli/render/progress.h). Verbs whose --json
answers and exit statuses other files already check are not repeated here: launch,
query, sessions, status, stop and delete of a session, tools and call
(test_strobectl.py), crash (3, test_strobectl_crash.py), memory (4,
test_strobectl_memory.py), continue, until (5, test_strobectl_break.py), test (6,
test_strobectl_test.py).

Fixture: poll_ticker (tick(n) every 20 ms; line 38 is tick's `g_counter++;`)."""

import os
import re
import subprocess

import pexpect
import pytest

from conftest import (REPO, STROBECTL, T_SHORT, VALGRIND, debug_traps, fixture_path,
                      wait_until)

TICK_LINE = 38


def ctl_json(world, *args, rc=0):
    r = world.strobectl("--json", *args)
    assert r.rc == rc, r
    return r.json()


def launch_ticker(world):
    """A running poll_ticker, launched the human way: returns (session id, output)."""
    r = world.strobectl("launch", "--project-root", REPO, fixture_path("poll_ticker"))
    assert r.rc == 0, r
    m = re.match(r"^session (\S+) pid (\d+)\n", r.out)
    assert m, r.out
    world.target_pids.add(int(m.group(2)))
    sid = m.group(1)
    wait_until(lambda: ctl_json(world, "query", sid, "--type", "stdout")["totalCount"] >= 3,
               10, what="the ticker's ready line")
    return sid, r.out


def verbs(world):
    """The verbs strobectl --help lists."""
    r = world.strobectl("--help")
    assert r.rc == 0 and r.err == "", r
    block = r.out.split("\nverbs:\n")[1].split("\n\n")[0]
    return [line.split()[0] for line in block.splitlines()]


def test_help_per_verb_and_man_page(world):
    names = verbs(world)
    assert len(names) >= 25 and {"launch", "retain", "until", "help"} <= set(names), names
    assert "strobectl help VERB" in world.strobectl("--help").out
    man = subprocess.run(["man", "-l", os.path.join(REPO, "man", "strobectl.1")],
                         stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, MANWIDTH="80")).stdout
    man = re.sub(r".\x08", "", man)
    for verb in names:
        r = world.strobectl("help", verb)
        assert r.rc == 0 and r.err == "", r
        assert r.out.startswith("usage:\n  strobectl %s" % verb), r.out
        for part in ("\nexamples:\n", "\nexit status:\n  0   ", "\n  64  "):
            assert part in r.out, (verb, part, r.out)
        assert world.strobectl(verb, "--help").out == r.out, verb
        assert re.search(r"^   %s$" % re.escape(verb), man, re.M), "no man section " + verb
    assert re.search(r"^EXIT STATUS$", man, re.M)
    # Help never needs the daemon (in valgrind mode the harness started one).
    if not VALGRIND:
        assert world.daemon_pid() is None


def test_unknown_verb_suggests_the_closest(world):
    r = world.strobectl("brake", "s1", "f")
    assert r.rc == 64 and r.out == "", r
    assert r.err.startswith("strobectl: unknown verb 'brake'; did you mean 'break'?"), r.err
    r = world.strobectl("help", "sesions")
    assert r.rc == 64 and "did you mean 'sessions'?" in r.err, r


def test_unreachable_exits_2(world):
    not_a_dir = os.path.join(world.base, "file")
    open(not_a_dir, "w").close()
    r = world.strobectl("sessions", extra_env={"STROBE_HOME": not_a_dir})
    assert r.rc == 2 and r.out == "", r
    assert "is not a directory" in r.err and "STROBE_HOME" in r.err, r


def test_errors_and_hints_speak_shell(world):
    r = world.strobectl("status", "nosuch-2000-01-01-00h00")
    assert r.rc == 1, r
    assert r.err == ("strobectl: SESSION_NOT_FOUND: No session found with ID "
                     "'nosuch-2000-01-01-00h00'. List the sessions with: strobectl "
                     "sessions\n"), r.err
    sid, out = launch_ticker(world)
    assert "debug_" not in out, out
    for step in ("strobectl query %s --type stderr", "strobectl status %s",
                 "strobectl trace %s --add 'PATTERN'"):
        assert "\n  " + step % sid + "\n" in out, out
    for args in (["status", sid], ["trace", sid, "--add", "tick"], ["watch", sid, "g_counter"],
                 ["unwatch", sid, "all"], ["continue", sid, "--timeout", "1"]):
        r = world.strobectl(*args)
        assert r.rc in (0, 1, 5) and "debug_" not in r.out + r.err, r
    r = world.strobectl("continue", sid, "--thread", "1")
    assert r.rc == 1 and r.err.startswith("strobectl: NOT_PAUSED: "), r
    assert "debug_" not in r.err and "strobectl pause SESSION" in r.err, r
    world.strobectl("stop", sid)


@pytest.mark.valgrind_sample
def test_json_shape_of_each_verb(world):
    sid, _ = launch_ticker(world)
    expect = [
        (["trace", sid, "--add", "tick"], {"activePatterns", "hookedFunctions", "status"}),
        (["stacks", sid], {"sessionId", "pids", "threads"}),
        (["memory", "write", sid, "g_cfg.max_retries=3"], {"results"}),
        (["memory", "poll", sid, "g_counter", "--interval", "50", "--duration", "100"],
         {"pollId", "intervalMs", "durationMs", "eventType"}),
        # where the machine never delivers debug-register traps, the error's shape
        (["watch", sid, "g_counter"], {"watchId", "address", "size", "currentValue"})
        if debug_traps() else (["watch", sid, "g_counter"], {"error"}, 1),
        (["unwatch", sid, "all"], {"removed", "activeWatches"}),
        (["break", sid, "poll_ticker.c:%d" % TICK_LINE], {"sessionId", "breakpoints"}),
        (["continue", sid], {"state", "threadId", "file", "line", "frames", "locals"}),
        (["next", sid], {"state", "threadId", "line", "frames"}),
        (["step", sid], {"state", "threadId", "line", "frames"}),
        (["finish", sid], {"state", "threadId", "returnValue", "frames"}),
        (["delete", sid, "all"], {"sessionId", "removed", "breakpoints"}),
        # Resumed with no breakpoint left: the wait times out (5), then pause stops it.
        (["continue", sid, "--timeout", "100"], {"state", "resumed"}, 5),
        (["pause", sid], {"state", "threadId", "frames"}),
        (["retain", sid], {"sessionId", "retained", "success"}),
    ]
    for args, keys, *rc in expect:
        answer = ctl_json(world, *args, rc=rc[0] if rc else 0)
        assert keys <= set(answer), (args, sorted(answer))
    listed = ctl_json(world, "sessions")["sessions"]
    assert [s["retained"] for s in listed if s["sessionId"] == sid] == [True], listed
    # retain kept the data: the session answers until deleted.
    assert ctl_json(world, "status", sid)["status"] != "running"
    ctl_json(world, "delete", sid)


def test_progress_on_a_terminal_only(world):
    sid, _ = launch_ticker(world)
    args = ["until", sid, "--text", "never printed", "--timeout", "600"]
    child = pexpect.spawn(STROBECTL, args, env=world.env, timeout=T_SHORT, encoding="utf-8")
    child.expect(r"\rstrobectl: waiting for the condition \.\.\. \d+s")
    child.expect(r"\r\x1b\[Kstill running after \d+ ms")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 5, child.before
    # Not a terminal: nothing on stderr, the same answer on stdout.
    r = world.strobectl(*args)
    assert r.rc == 5 and r.err == "", r
    assert r.out.startswith("still running after"), r
    world.strobectl("stop", sid)
