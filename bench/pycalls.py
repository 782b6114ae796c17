"""pycalls.py N [empty-profile] [LINGER] - bench_python's workload: calls step(i) N
times in a loop and prints "calls_per_second X" (time.perf_counter around the loop),
then sleeps LINGER seconds (the daemon reads the counts meanwhile). With
empty-profile the loop runs under a profile function that does nothing: the floor
of any sys.setprofile tracer."""
import sys
import time


def step(i):
    return i + 1


def unused():
    return None


def main():
    n = int(sys.argv[1])
    if "empty-profile" in sys.argv:
        def nothing(frame, event, arg):
            return None
        sys.setprofile(nothing)
    t = time.perf_counter()
    s = 0
    for i in range(n):
        s += step(i)
    dt = time.perf_counter() - t
    sys.setprofile(None)
    print("calls_per_second %.0f" % (n / dt), flush=True)
    linger = [a for a in sys.argv[2:] if a.replace(".", "", 1).isdigit()]
    if linger:
        time.sleep(float(linger[0]))


main()
