"""The gdb-style REPL on a terminal (pexpect): breakpoints with conditions, run, bt,
print, set var, next, step, finish, watch, continue to the exit, TAB completion,
Ctrl-C, history. The program is tests/fixtures/repl_calc.c."""

import os
import re
import stat

import pexpect
import pytest

from conftest import STROBE_BIN
from repl_util import CALC, PROMPT, Repl, calc_line


@pytest.mark.valgrind_sample
def test_phase2_scenario_fix_a_wrong_value(world):
    """A conditional breakpoint on a line, inspect a local, find the wrong value, set
    it, continue: the program's output changes accordingly (400 -> 520)."""
    r = Repl(world, CALC)
    line = calc_line("cost")
    out = r.cmd("break repl_calc.c:%d if qty < 0" % line)
    assert re.search(r"Breakpoint \d+: file repl_calc.c, line %d\." % line, out)
    out = r.cmd("run")
    assert re.search(r"\nBreakpoint \d+, add_item \(it=0x[0-9a-f]+, price=30\) at "
                     r"repl_calc.c:%d\n%d\t    int cost = scale\(price, qty\);" % (line, line),
                     out), out
    assert "$1 = -2" in r.cmd("print qty")
    assert r.cmd("set var qty = 2").strip() == "set var qty = 2"
    assert "$2 = 2" in r.cmd("p qty")
    out = r.cmd("continue")
    assert "Continuing." in out
    assert "total = 520" in out
    assert re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", out), out
    assert r.quit() == 0


def test_bt_next_step_finish_print(world):
    r = Repl(world, CALC)
    r.cmd("break add_item")
    out = r.cmd("r")
    assert re.search(r"Breakpoint \d+, add_item \(it=0x[0-9a-f]+, price=10\)", out), out
    assert "1: price = 10" in r.cmd("display price")
    out = r.cmd("next")
    assert re.search(r"\n%d\t    int cost = scale" % calc_line("cost"), out), out
    assert "1: price = 10" in out  # displays print after every stop
    assert "No display number 7." in r.cmd("undisplay 7")
    r.cmd("undisplay 1")
    out = r.cmd("step")
    assert "scale (n=10, factor=1) at repl_calc.c:%d" % calc_line("scale") in out, out
    out = r.cmd("bt")
    assert re.search(r"#0  scale \(n=10, factor=1\) at repl_calc.c:%d\n"
                     r"#1  add_item \(\) at repl_calc.c:%d\n#2  main \(\) at repl_calc.c:%d"
                     % (calc_line("scale"), calc_line("cost"), calc_line("loop")), out), out
    out = r.cmd("fin")
    assert "Run till exit from #0  scale (n=10, factor=1)" in out
    assert "Value returned is $1 = 10" in out
    r.p.send("p/x pri\t")  # the arguments and locals of the stop complete
    r.p.expect("ce ")
    r.p.send("\r")
    r.p.expect(PROMPT)
    assert "$2 = 0xa" in r.p.before
    assert "price = 10" in r.cmd("info args")
    out = r.cmd("up")
    assert "#1  main () at repl_calc.c:%d" % calc_line("loop") in out
    i = re.search(r"\$3 = (\d+)", r.cmd("print i")).group(1)
    assert "$4 = 10" in r.cmd("p $1")  # the value history
    assert "$5 = %s" % i in r.cmd("p $$")
    assert "History has not yet reached $9." in r.cmd("p $9")
    out = r.cmd("")  # an empty line after `up` repeats nothing
    assert out.strip() == ""
    out = r.cmd("next")
    assert re.search(r"\n\d+\t", out)
    r.quit()


@pytest.mark.debug_traps
def test_watch_reports_old_and_new_value(world):
    r = Repl(world, CALC)
    out = r.cmd("start")
    assert re.search(r"Temporary breakpoint \d+, main \(", out), out
    out = r.cmd("watch g_counter")
    assert re.search(r"Hardware watchpoint (\d+): g_counter", out), out
    num = re.search(r"Hardware watchpoint (\d+)", out).group(1)
    out = r.cmd("continue")
    assert "Hardware watchpoint %s: g_counter\n\nOld value = 0\nNew value = 1" % num in out
    assert "add_item () at repl_calc.c:%d" % calc_line("counter") in out, out
    assert "watchpoints do not stop the program" in out, out
    out = r.cmd("")  # the empty line repeats continue
    assert "Old value = 1\nNew value = 2" in out, out
    assert "No stack: no thread is paused" in r.cmd("bt")  # strobe let it run on
    assert re.search(r"%s\s+hw watchpoint\s+keep y\s+g_counter" % num,
                     r.cmd("info breakpoints"))
    r.cmd("delete %s" % num)
    out = r.cmd("continue")
    assert "total = 400" in out and "exited normally" in out, out
    r.quit()


def test_tab_completes_functions_and_info_subcommands(world):
    # a history file that is a symlink is neither read nor written through
    os.makedirs(world.home, mode=0o700, exist_ok=True)
    elsewhere = os.path.join(world.base, "elsewhere")
    with open(elsewhere, "w") as f:
        f.write("kill\n")
    os.symlink(elsewhere, os.path.join(world.home, "repl_history"))
    r = Repl(world, CALC)
    r.p.send("bre sca\t")
    r.p.expect("le")
    r.p.send("\r")
    r.p.expect(r"Breakpoint \d+: scale\.")
    r.p.expect(PROMPT)
    # FILE:LINE of a function's declaration
    main_line = calc_line("main")
    r.p.send("tbreak repl_calc.c:%d\t" % (main_line // 10))
    r.p.expect(str(main_line % 10))
    r.p.send("\r")
    r.p.expect(r"Temporary breakpoint \d+: file repl_calc.c, line %d\." % main_line)
    r.p.expect(PROMPT)
    r.p.send("info b\t")
    r.p.expect("reakpoints ")
    r.p.send("\r")
    r.p.expect(r"\d+\s+breakpoint\s+keep y\s+<PENDING>\s+scale\r\n")
    r.p.expect(PROMPT)
    r.quit()
    with open(elsewhere) as f:
        assert f.read() == "kill\n"


def test_ctrl_c_pauses_a_looping_program_and_never_exits_at_the_prompt(world):
    r = Repl(world, CALC, "spin")
    r.p.sendline("run")
    r.p.expect("Starting program: .*repl_calc spin")
    r.p.expect("spinning")  # its output shows while the REPL waits for a stop
    r.p.sendintr()
    r.p.expect("Program received signal SIGINT, Interrupt.")
    r.p.expect(PROMPT)
    out = r.cmd("bt")
    assert re.search(r"#\d  main \(argc=2, argv=0x[0-9a-f]+\) at repl_calc.c:%d"
                     % calc_line("spin"), out), out
    assert re.search(r"\$1 = \d+", r.cmd("print g_counter"))
    r.p.send("half a line")  # Ctrl-C abandons it, even typed ahead of the editor
    r.p.sendintr()
    r.p.expect(PROMPT)
    assert "Undefined command" not in r.p.before  # the line was dropped, not run
    out = r.cmd("info threads")
    assert re.search(r"\* \d+\s+Thread \d+ \"repl_calc\"", out), out
    assert r.quit() == 0
    hist = os.path.join(world.home, "repl_history")
    assert stat.S_IMODE(os.lstat(hist).st_mode) == 0o600
    with open(hist) as f:
        assert "print g_counter\n" in f.read()


def test_strobe_alone_on_a_terminal_is_the_repl(world):
    r = Repl(world, binary=STROBE_BIN, argv0=())
    assert "Undefined command: \"bogus\"" in r.cmd("bogus")
    assert "run [ARGS...]" in r.cmd("help")
    r.p.sendeof()
    r.p.expect(pexpect.EOF)


def test_session_attach_with_a_completed_id_and_ctrl_c_on_continue(world):
    launched = world.strobectl("launch", CALC, "spin")
    assert launched.rc == 0, launched.err
    sid = launched.out.split()[1]
    try:
        r = Repl(world)
        r.p.send("session repl_c\t")  # session ids complete from debug_session list
        r.p.expect("alc-")
        r.p.send("\r")
        r.p.expect(r"\[Attached to session %s: process \d+, running\]" % re.escape(sid))
        r.p.expect(PROMPT)
        r.p.sendline("continue")
        r.p.expect("spinning")
        r.p.sendintr()
        r.p.expect("Program received signal SIGINT, Interrupt.")
        r.p.expect(PROMPT)
        assert r.quit() == 0
        # quit leaves a session the REPL did not start running
        assert "running" in world.strobectl("status", sid).out
    finally:
        world.strobectl("stop", sid)
