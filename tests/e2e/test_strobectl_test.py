"""strobectl test: debug_test from a shell, polled to the end and printed as a test
runner prints it, with the exit codes of strobectl --help (0 every test passed, 6
tests failed or were stuck, 1 a tool error, 64 usage). stderr is not a terminal
here, so strobectl prints no progress line there.

Only the generic framework (any command: its exit code and assertion lines) is used:
a project directory with a shell script that fails or passes, and deadlock_abba
(worker-a and worker-b each hold one mutex and wait for the other's in take_second,
main joins worker-a), which the runner finds stuck and kills after about 8 s."""

import os
import re
import subprocess

import pytest

from conftest import REPO, SLOW, STROBECTL, CtlResult, check_stuck_verdict, fixture_path

FAILING = """#!/bin/sh
echo "checking the sum"
echo "check.c:12: check_sum: Assertion \\`sum == 4' failed." >&2
exit 1
"""


def script(world, name, text):
    path = os.path.join(world.project, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def ctl_in(world, cwd, *args, timeout=None):
    """strobectl run from directory cwd (test's relative paths are the shell's)."""
    p = subprocess.run([STROBECTL] + list(args), env=world.env, cwd=cwd,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout or 60 * SLOW)
    return CtlResult(p.returncode, p.stdout.decode("utf-8", "replace"),
                     p.stderr.decode("utf-8", "replace"), args)


@pytest.mark.valgrind_sample
def test_failing_command(world):
    script(world, "check.sh", FAILING)
    r = ctl_in(world, world.project, "test", "--framework", "generic", "--command",
               "./check.sh")
    assert r.rc == 6, r
    assert r.err == "", r
    lines = r.out.splitlines()
    assert re.match(r"^generic: 0 passed, 1 failed, 0 skipped, 0 stuck in \d+\.\d s$",
                    lines[0]), r.out
    name = os.path.join(world.project, "check.sh")
    assert "FAILED %s (check.c:12)" % name in lines, r.out
    assert "    check.c:12: check_sum: Assertion `sum == 4' failed." in lines, r.out
    assert "  rerun: cd %s && %s" % (world.project, name) in lines, r.out
    assert re.match(r"^details: %s/tests/tr-\w+\.json$" % re.escape(world.home),
                    lines[-1]), r.out


def test_passing_command(world):
    script(world, "ok.sh", "#!/bin/sh\necho all good\n")
    r = world.strobectl("test", world.project, "--framework", "generic", "--command",
                        os.path.join(world.project, "ok.sh"))
    assert r.rc == 0, r
    assert r.err == "", r
    assert re.match(r"^generic: 1 passed, 0 failed, 0 skipped, 0 stuck in ", r.out), r.out
    assert "FAILED" not in r.out, r.out


def test_deadlock_is_stuck_with_stacks(world):
    """The command relative to the current directory, as the brief's shell would type
    it; the project root elsewhere."""
    command = os.path.relpath(fixture_path("deadlock_abba"), REPO)
    r = ctl_in(world, REPO, "test", world.project, "--framework", "generic", "--command",
               command)
    assert r.rc == 6, r
    assert r.err == "", r
    assert re.search(r"^generic: 0 passed, 0 failed, 0 skipped, 1 stuck in ", r.out, re.M), r.out
    # the generic run's one result, the command (made absolute), is the stuck test,
    # found as the detector promises (its verdict and the silence it measured)
    m = re.search(r"^STUCK %s after [\d.]+ s: (Deadlock: .*tid (\d+) \(worker-a\).*)$"
                  % re.escape(fixture_path("deadlock_abba")), r.out, re.M)
    assert m, r.out
    check_stuck_verdict({"diagnosis": m.group(1)}, "Deadlock")
    holds = {}  # tid -> the tid holding the mutex it waits for
    for worker, caller in (("worker-a", "worker_a"), ("worker-b", "worker_b")):
        m = re.search(r"^Thread (\d+) \(%s\) \w+(?: in futex)?, waiting for mutex held by "
                      r"(\d+):\n((?:#\d+ .*\n)+)" % worker, r.out, re.M)
        assert m, r.out
        holds[int(m.group(1))] = int(m.group(2))
        frames = m.group(3)
        assert re.search(r"^#\d+ take_second \(deadlock_abba\.c:\d+\)$", frames, re.M), frames
        assert re.search(r"^#\d+ %s \(deadlock_abba\.c:\d+\)$" % caller, frames, re.M), frames
    a, b = holds
    assert holds == {a: b, b: a}, holds
    assert re.search(r"^Thread \d+ \(deadlock_abba\) .*waiting for thread \d+ to end "
                     r"\(pthread_join\):\n(#\d+ .*\n)*#\d+ main \(deadlock_abba\.c:\d+\)$",
                     r.out, re.M), r.out
    assert "  suggested traces: " in r.out and "take_second" in r.out, r.out


def test_json_and_status(world):
    script(world, "check.sh", FAILING)
    r = world.strobectl("--json", "test", world.project, "--framework", "generic",
                        "--command", os.path.join(world.project, "check.sh"))
    assert r.rc == 6, r
    answer = r.json()
    assert answer["status"] == "completed", answer
    result = answer["result"]
    assert result["framework"] == "generic", answer
    assert result["summary"]["failed"] == 1 and result["summary"]["passed"] == 0, answer
    assert result["failures"][0]["file"] == "check.c" and result["failures"][0]["line"] == 12
    assert os.path.isfile(result["details"]), answer

    # One status answer of the finished run: the same outcome, as text.
    r = world.strobectl("test", "--status", answer["testRunId"])
    assert r.rc == 6, r
    assert r.out.startswith("generic: 0 passed, 1 failed, 0 skipped, 0 stuck in "), r.out
    assert r.out.splitlines()[-1] == "details: " + result["details"], r.out


def test_usage_and_tool_errors(world):
    r = world.strobectl("test", "--level", "smoke")
    assert r.rc == 64, r
    assert r.err.startswith("strobectl: --level is unit, integration or e2e (leave it out "
                            "for every test), not 'smoke'\nusage: strobectl test "), r.err
    assert r.out == "", r

    r = world.strobectl("test", "--status", "tr-1", world.project)
    assert r.rc == 64, r
    assert "--status takes only the TESTRUNID of a run" in r.err, r

    # The daemon's own refusals: a tool error, exit 1, "CODE: sentence".
    r = world.strobectl("test", world.project, "--framework", "nosuch", "--command", "true")
    assert r.rc == 1, r
    assert re.match(r"^strobectl: [A-Z_]+: .*nosuch", r.err), r
    r = world.strobectl("test", "--status", "tr-00000000000000000000000000000000")
    assert r.rc == 1, r
    assert r.err.startswith("strobectl: TEST_RUN_NOT_FOUND: "), r
