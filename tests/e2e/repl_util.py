"""Helpers of the REPL tests (test_repl*.py): the REPL under a pseudo-terminal
(pexpect) or with a script on stdin (subprocess), against tests/fixtures/repl_calc.c."""

import os
import subprocess

import pexpect

from bp_util import line_of
from conftest import STROBECTL, T_LONG, T_SHORT, fixture_path

PROMPT = r"\(strobe\) "
CALC = fixture_path("repl_calc")


def calc_line(marker):
    return line_of("repl_calc.c", "mark:" + marker)


class Repl:
    """`strobectl repl ARGS` on a pseudo-terminal; cmd() sends a line and waits for
    the next prompt, returning what was printed in between."""

    def __init__(self, world, *args, binary=STROBECTL, argv0=("repl",), cwd=None):
        self.world = world
        self.p = pexpect.spawn(binary, list(argv0) + list(args), env=world.env,
                               cwd=cwd or world.project, encoding="utf-8", timeout=T_SHORT,
                               dimensions=(50, 200))
        self.p.expect(PROMPT)

    def cmd(self, line, timeout=None):
        self.p.sendline(line)
        self.p.expect(PROMPT, timeout=timeout or T_SHORT)
        return self.p.before.replace("\r\n", "\n")

    def quit(self):
        self.p.sendline("quit")
        self.p.expect(pexpect.EOF, timeout=T_SHORT)
        self.p.close()
        return self.p.exitstatus


def batch(world, script, *args):
    """`strobectl repl -batch -x SCRIPT ARGS` without a terminal: (rc, out, err)."""
    path = os.path.join(world.base, "script.gdb")
    with open(path, "w") as f:
        f.write(script)
    p = subprocess.run([STROBECTL, "repl", "-batch", "-x", path] + list(args),
                       env=world.env, cwd=world.project, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T_LONG)
    return p.returncode, p.stdout.decode(), p.stderr.decode()
