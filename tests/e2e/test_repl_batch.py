"""The REPL without a terminal: -batch, -x scripts (comments, blank lines), -ex,
commands read from stdin, exit statuses, error sentences, and the commands whose
output is plain text (x/FMT, list, info breakpoints, strobe's own commands)."""

import os
import re
import subprocess

import pytest

from conftest import REPO, STROBECTL, T_LONG, fixture_path
from repl_util import CALC, batch, calc_line


@pytest.mark.valgrind_sample
def test_batch_script_runs_to_a_conditional_breakpoint(world):
    rc, out, err = batch(world, """# a comment, then a blank line

break scale if n > 20
run
bt
print n
info breakpoints
kill
""", CALC)
    assert rc == 0, err
    assert re.search(r"Breakpoint (\d+), scale \(n=30, factor=-2\) at repl_calc.c:%d\n"
                     r"%d\t    int r = n \* factor;" % (calc_line("scale"), calc_line("scale")),
                     out), out
    assert "#1  add_item () at repl_calc.c:%d" % calc_line("cost") in out
    assert "$1 = 30" in out
    assert re.search(r"\d+\s+breakpoint\s+keep y\s+0x[0-9a-f]+\s+in scale at repl_calc.c:%d\n"
                     r"\tstop only if n > 20\n\tbreakpoint already hit 1 time"
                     % calc_line("scale"), out), out
    assert re.search(r"\[Inferior 1 \(process \d+\) killed\]", out)


def test_exit_code_and_program_output(world):
    rc, out, err = batch(world, "run\noutput\n", fixture_path("hello_exit3"))
    assert rc == 0, err
    assert re.search(r"\[Inferior 1 \(process \d+\) exited with code 3\]", out), out


def test_batch_exit_status_follows_the_last_command_and_errors_go_on(world):
    rc, out, err = batch(world, """start
print nosuch_variable
bogus
attach 42
disable 1
x/2i $rip
continue
continue
print g_total
""", CALC)
    assert rc == 1  # the last command failed: the program is not being run
    assert "VARIABLE_NOT_FOUND: " in err
    assert 'Undefined command: "bogus".  Try "help".' in err
    assert "strobe cannot attach to a running process: it launches programs itself" in err
    assert "cannot be disabled or enabled: `delete N` removes one" in err
    assert "x/i is not supported: strobe does not disassemble" in err
    assert "total = 400" in out and "exited normally" in out
    assert "PROCESS_EXITED: " in err
    assert "The program is not being run." in err  # the second continue


def test_usage_errors_and_parse_errors(world):
    p = subprocess.run([STROBECTL, "repl", "--bogus"], env=world.env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T_LONG)
    assert p.returncode == 64
    assert b"usage: strobectl repl [-batch]" in p.stderr
    rc, out, err = batch(world, """break
break repl_calc.c:0
break 12
set var x
x/4z &g_total
run
""")
    assert rc == 1
    assert "No location given: write `break FILE:LINE` or `break FUNCTION`." in err
    assert "Line 0 is not a line number." in err
    assert "No default source file for line 12: write `break FILE:12`." in err
    assert "Write `set var NAME = VALUE`." in err
    assert "Invalid format letter 'z' in /4z" in err
    assert "No executable file specified: use `file PROGRAM`" in err


def test_examine_memory_list_and_ex_commands(world):
    p = subprocess.run([STROBECTL, "repl", "-batch", "-ex", "file " + CALC, "-ex",
                        "tbreak add_item", "-ex", "run", "-ex", "x/2dw &items[1].qty",
                        "-ex", "x/s it->name", "-ex", "x/3xb &g_counter", "-ex", "list scale",
                        "-ex", "frame 1", "-ex", "info frame", "-ex", "info locals"],
                       env=world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=T_LONG, cwd=world.project)
    out = p.stdout.decode()
    assert p.returncode == 1, p.stderr  # info locals of frame 1 is refused
    assert re.search(r"Temporary breakpoint \d+, add_item", out), out
    assert re.search(r"0x[0-9a-f]+:\t2\t0\n", out), out   # bee's qty, then cat's name
    assert re.search(r'0x[0-9a-f]+:\t"ant"', out), out
    assert re.search(r"0x[0-9a-f]+:\t0x0\t0x0\t0x0\n", out), out
    assert "%d\t    int r = n * factor; /* mark:scale */" % calc_line("scale") in out
    assert "#1  main () at repl_calc.c:%d" % calc_line("loop") in out
    assert "strobe lists locals of the innermost frame only" in p.stderr.decode()


def test_commands_from_stdin_and_strobe_own_commands(world):
    script = """file %s
trace add scale
run
output stdout
events --type function_exit --limit 2
crash
sessions
info sessions
session %s
""" % (CALC, "nosuch-session")
    p = subprocess.run([STROBECTL, "repl"], input=script.encode(), env=world.env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T_LONG,
                       cwd=world.project)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0  # without -batch the REPL ends at the end of its input
    assert out.count("total = 400") == 2, out   # at the exit, then `output stdout`
    assert re.search(r"function_exit\s+scale", out) or "scale" in out
    assert "no crash recorded in session repl_calc" in out
    assert re.search(r"repl_calc-\S+\s+exited\(0\)", out), out
    assert "SESSION_NOT_FOUND: " in err


def test_man_page_documents_every_command(world):
    rc, out, err = batch(world, "help\n")
    assert rc == 0, err
    names = re.findall(r"^  ([a-z]+)", out, re.M)
    assert len(names) > 30, out
    page = subprocess.run(["man", "-l", os.path.join(REPO, "man", "strobe-repl.1")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, MANWIDTH="80")).stdout
    page = re.sub(r".\x08", "", page)
    words = set(re.findall(r"[a-z]\w*", page))
    assert set(names) <= words, sorted(set(names) - words)


ERRORS_WITHOUT_A_PROGRAM = [
    ("se", 'Ambiguous command "se": type "help" for the commands.'),
    ("file", "Write `file PROGRAM`."),
    ("watch", "Write `watch EXPR`: a global variable or an address."),
    ("print", "Write `print EXPR` (a variable, argument, $register or global)."),
    ("advance", "Write `advance LOCATION` (a function or FILE:LINE)."),
    ("trace start x", "Write `trace add PATTERN...` or `trace remove PATTERN...`."),
    ("session", "Write `session SESSION_ID` (`sessions` lists them)."),
    ("info", '"info" must be followed by the name of an info command'),
    ("info bogus", 'Undefined info command: "bogus".  Try "help info".'),
    ("help bogus", 'Undefined command: "bogus".  Try "help".'),
    ("delete x", 'Convenience variable must have integer value: "x" is not a breakpoint'),
    ("test 'x", "Unbalanced quotes, or more than 62 words."),
    ("bt", "No stack: the program is not being run."),
    ("info frame", "No stack."),
    ("info locals", "No frame selected."),
    ("info registers", "The program has no registers now: no thread is paused."),
    ("x/4xw 0x10", "The program is not being run: `run` launches it"),
    ("list", "No default source file: write `list FILE:LINE` or `list FUNCTION`."),
]


def test_every_error_sentence(world):
    script = "\n".join(cmd for cmd, _ in ERRORS_WITHOUT_A_PROGRAM) + """
file %s
list nosuch_function
list repl_calc.c:9999
tbreak scale
run
down
frame 9
thread x
x/2xw 0x10
output stdin
kill
continue
""" % CALC
    rc, out, err = batch(world, script)
    assert rc == 1
    for _, sentence in ERRORS_WITHOUT_A_PROGRAM:
        if sentence:
            assert sentence in err, sentence
    for sentence in ('Function "nosuch_function" not defined.',
                     'Line number 9994 out of range; "repl_calc.c" has fewer lines.',
                     "Bottom (innermost) frame selected; you cannot go down.",
                     "Initial frame selected; you cannot go up.",
                     "Invalid thread ID: x (thread ids are the tids of `info threads`).",
                     "Cannot access memory at address 0x10",
                     "Write `output`, `output stdout` or `output stderr`.",
                     "The program is not being run: `run` launches it"):
        assert sentence in err, (sentence, err)


def test_a_crash_is_reported_as_gdb_reports_a_signal(world):
    rc, out, err = batch(world, "run\ncrash\n", fixture_path("crash_null"))
    assert rc == 0, err
    assert re.search(r"\nProgram received signal SIGSEGV, Segmentation fault.\n"
                     r"read_field \(n=0x0, depth=2\) at crash_null.c:54\n"
                     r"54\t.*CRASH HERE", out), out
    assert "Program terminated with signal SIGSEGV, Segmentation fault." in out
    assert "locals of #0 read_field:" in out  # strobectl crash's report


def test_all_threads_registers_help_and_a_test_run(world):
    rc, out, err = batch(world, """help fin
start
thread apply all bt
info registers
info threads
kill
test %s
""" % os.path.join(REPO, "tests", "fixtures", "testproj", "unittest"), CALC)
    assert rc == 1, err  # the suite has a failing test
    assert "finish\n  Run until the innermost function returns; print its value.\n" in out
    assert re.search(r"Thread \d+ \(repl_calc\) paused", out), out
    assert re.search(r"#0 main \(repl_calc.c:\d+\)", out), out
    assert re.search(r"\nrip\s+0x[0-9a-f]+\s+\S+\n", out), out
    assert re.search(r"\nr15\s+0x[0-9a-f]+", out), out
    assert re.search(r"\* \d+\s+Thread \d+ \"repl_calc\"\s+main", out), out
    assert "unittest: 3 passed, 1 failed, 1 skipped" in out
    assert "FAILED test_ledger.LedgerTest.test_withdraw_charges_fee" in out


def test_advance_and_until(world):
    rc, out, err = batch(world, "start\nadvance scale\nuntil\nu\nu\nkill\n", CALC)
    assert rc == 0, err
    # as gdb: advance reports the place only, no breakpoint
    assert re.search(r"\nscale \(n=10, factor=1\) at repl_calc.c:%d\n" % calc_line("scale"),
                     out), out
    assert out.count("reakpoint") == 2, out  # start's temporary breakpoint, set and hit
    assert "\n%d\t    return r;" % (calc_line("scale") + 1) in out, out
    assert re.search(r"add_item \(it=0x[0-9a-f]+, price=10\) at repl_calc.c:%d"
                     % calc_line("cost"), out), out


def test_breakpoints_stay_across_runs(world):
    rc, out, err = batch(world, "break scale if n > 20\nrun\nrun\nkill\n", CALC)
    assert rc == 0, err
    hits = re.findall(r"Breakpoint \d+, scale \(n=30, factor=-2\)", out)
    assert len(hits) == 2, out


def test_breakpoints_outlive_the_program_and_a_kill(world):
    # The program runs to its end past the breakpoint: `info breakpoints` still lists
    # it with its hit count, and the next run (after a kill too) stops there again.
    rc, out, err = batch(world, "break scale if n > 40\nrun\ncontinue\ninfo breakpoints\n"
                         "run\nkill\nrun\nkill\n", CALC)
    assert rc == 0, err
    assert re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", out), out
    assert re.search(r"\d+\s+breakpoint\s+keep y\s+0x[0-9a-f]+\s+in scale at "
                     r"repl_calc.c:\d+\n\tstop only if n > 40\n"
                     r"\tbreakpoint already hit 1 time", out), out
    hits = re.findall(r"Breakpoint \d+, scale \(n=50, factor=5\)", out)
    assert len(hits) == 3, out


def test_break_and_start_after_the_program_ended(world):
    # After the end, a breakpoint is staged for the next run (listed as pending),
    # kill says there is nothing to kill, and start stops in main again.
    rc, out, err = batch(world, "run\nbreak scale if n > 40\ninfo breakpoints\nkill\n"
                         "run\nkill\nstart\nkill\n", CALC)
    assert re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", out), out
    assert "PROCESS_EXITED" not in out + err, out + err
    assert re.search(r"\d+\s+breakpoint\s+keep y\s+<PENDING>\s+scale", out), out
    assert "The program is not being run." in err, err
    assert re.search(r"Breakpoint \d+, scale \(n=50, factor=5\)", out), out
    assert re.search(r"Temporary breakpoint \d+, main \(", out), out
    assert rc == 0, err


def test_events_help_lists_the_query_options(world):
    rc, out, err = batch(world, "run\nevents --help\n", CALC)
    assert rc == 0, err
    assert "strobectl query's" in out and "--type" in out and "--verbose" in out, out
    assert "VALIDATION_ERROR" not in err, err
