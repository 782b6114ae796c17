"""hooks.py - how the interpreter tells the recorder that a traced function runs.

Two backends, one chosen by the interpreter's version:

- sys.monitoring (3.12 and newer, PEP 669): PY_START is on for all code; a code
  object that is not traced answers DISABLE at its first start and costs nothing
  after that. A traced one gets local PY_RETURN, PY_YIELD and PY_RESUME events;
  PY_UNWIND (global) brings the exception that leaves a frame. The tool id is the
  first free one of 4, 5, 3, 2 (coverage.py takes 1, debuggers 0).
- sys.setprofile (3.9 to 3.11): the profile function runs at every call and return
  of every thread and returns at once for code that is not traced (one dict
  lookup). A return's kind is read from the instruction the frame stopped at:
  RETURN_VALUE a return, YIELD_VALUE a suspend, anything else an exception.
  Threads that existed before arming get the profile function too, through
  _PyEval_SetProfile (existing_threads()); threads started later through
  threading.setprofile.

Both cover the threads of the interpreter they run in, and both leave
sys.settrace (pdb, coverage.py) alone.
"""

import ctypes
import dis
import sys
import threading

GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR


class ProfileHooks:
    name = "setprofile"

    def __init__(self, rec):
        self.rec = rec
        self.suspended = set()  # id() of generator frames now suspended
        self.installed = False
        ret = dis.opmap["RETURN_VALUE"]
        yld = dis.opmap["YIELD_VALUE"]
        traced = rec.traced
        decide = rec.decide
        suspended = self.suspended
        pending = rec.pending

        def profile(frame, event, arg):
            if pending:
                exc = sys.exc_info()[1]
                if exc is not None:
                    rec.catch_seen(exc)
            if event == "call":
                code = frame.f_code
                fn = traced.get(code, False)
                if fn is False:
                    fn = decide(code)
                if fn is None:
                    return
                resumed = False
                if code.co_flags & GENERATOR_FLAGS and id(frame) in suspended:
                    suspended.discard(id(frame))
                    resumed = True
                rec.enter(fn, frame, resumed)
            elif event == "return":
                code = frame.f_code
                fn = traced.get(code)
                if fn is None:
                    return
                op = code.co_code[frame.f_lasti] if frame.f_lasti >= 0 else ret
                if op == ret:
                    rec.leave(fn, frame, "return", arg)
                elif op == yld:
                    suspended.add(id(frame))
                    rec.leave(fn, frame, "yield", arg)
                else:
                    suspended.discard(id(frame))
                    rec.leave(fn, frame, "raise")
                    catch_in(frame.f_back)
        self.profile = profile

        def catch_in(caller):
            """The exception leaving a traced frame is not given to a profile
            function. When no trace function is set (pdb and coverage.py set one,
            and then this is skipped), the caller gets a local trace function and
            this thread a global one that traces nothing, for as long as it takes
            the exception to reach the caller: its 'exception' event carries it."""
            if caller is None or sys.gettrace() is not None:
                return
            caller.f_trace_lines = False
            caller.f_trace = catcher
            sys.settrace(no_calls)

        def no_calls(frame, event, arg):
            return None

        def catcher(frame, event, arg):
            frame.f_trace = None
            frame.f_trace_lines = True
            sys.settrace(None)
            if event == "exception":
                rec.catch_seen(arg[1], arg[2])
            return None

    def patterns_changed(self):
        pass  # rec.traced is cleared in place: the next call decides again

    def install(self):
        sys.setprofile(self.profile)
        threading.setprofile(self.profile)
        existing_threads(self.profile)
        self.installed = True

    def uninstall(self):
        threading.setprofile(None)
        existing_threads(None)
        sys.setprofile(None)
        self.installed = False


def existing_threads(func, setter="_PyEval_SetProfile"):
    """Sets func as the profile function (setter "_PyEval_SetTrace": the trace
    function) of every other thread of this interpreter (None: removes it). The C
    trampoline sys.setprofile (sys.settrace) installed on this thread is read from
    its state, where it sits two words before the function object (the layout of
    PyThreadState from 3.9 to 3.11: c_profilefunc, c_tracefunc, c_profileobj,
    c_traceobj). Returns how many threads it set."""
    api = ctypes.pythonapi
    api.PyThreadState_Get.restype = ctypes.c_void_p
    api.PyInterpreterState_Get.restype = ctypes.c_void_p
    api.PyInterpreterState_ThreadHead.restype = ctypes.c_void_p
    api.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
    api.PyThreadState_Next.restype = ctypes.c_void_p
    api.PyThreadState_Next.argtypes = [ctypes.c_void_p]
    set_each = getattr(api, setter)
    set_each.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.py_object]
    set_each.restype = ctypes.c_int
    me = api.PyThreadState_Get()
    tramp = None
    if func is not None:
        words = (ctypes.c_void_p * 64).from_address(me)
        at = [i for i in range(2, 64) if words[i] == id(func)]
        if not at:
            return 0
        tramp = words[at[0] - 2]
    done = 0
    t = api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Get())
    while t:
        if t != me:
            set_each(t, tramp, func)
            done += 1
        t = api.PyThreadState_Next(t)
    return done


class MonitoringHooks:
    name = "sys.monitoring"

    def __init__(self, rec):
        self.rec = rec
        self.m = sys.monitoring
        self.tool = None
        self.local_codes = set()

    def install(self):
        m = self.m
        E = m.events
        for tool in (4, 5, 3, 2):
            if m.get_tool(tool) is None:
                m.use_tool_id(tool, "strobe")
                self.tool = tool
                break
        else:
            raise RuntimeError("every sys.monitoring tool id (2 to 5) is taken")
        rec = self.rec
        getframe = sys._getframe
        DISABLE = m.DISABLE
        local_events = E.PY_RETURN | E.PY_YIELD | E.PY_RESUME
        tool = self.tool
        local_codes = self.local_codes

        def start(code, offset):
            fn = rec.traced.get(code, False)
            if fn is False:
                fn = rec.decide(code)
            if fn is None:
                return DISABLE
            if code not in local_codes:
                local_codes.add(code)
                m.set_local_events(tool, code, local_events)
            rec.enter(fn, getframe(1))

        def resume(code, offset):
            fn = rec.traced.get(code)
            if fn is not None:
                rec.enter(fn, getframe(1), True)

        def returned(code, offset, value):
            fn = rec.traced.get(code)
            if fn is not None:
                rec.leave(fn, getframe(1), "return", value)

        def yielded(code, offset, value):
            fn = rec.traced.get(code)
            if fn is not None:
                rec.leave(fn, getframe(1), "yield", value)

        def unwound(code, offset, exc):
            fn = rec.traced.get(code)
            if fn is not None:
                rec.leave(fn, getframe(1), "raise", exception=exc)

        m.register_callback(tool, E.PY_START, start)
        m.register_callback(tool, E.PY_RESUME, resume)
        m.register_callback(tool, E.PY_RETURN, returned)
        m.register_callback(tool, E.PY_YIELD, yielded)
        m.register_callback(tool, E.PY_UNWIND, unwound)
        m.set_events(tool, E.PY_START | E.PY_UNWIND)

    def patterns_changed(self):
        if self.tool is None:
            return
        for code in self.local_codes:
            self.m.set_local_events(self.tool, code, 0)
        self.local_codes.clear()
        self.m.restart_events()

    def uninstall(self):
        if self.tool is None:
            return
        self.patterns_changed()
        self.m.set_events(self.tool, 0)
        self.m.free_tool_id(self.tool)
        self.tool = None


def for_this_interpreter(rec):
    if hasattr(sys, "monitoring"):
        return MonitoringHooks(rec)
    return ProfileHooks(rec)
