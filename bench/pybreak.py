"""pybreak.py N | threads16 - bench_pybreak's workload (its line numbers are
bench_pybreak.c's: keep the first line of work's body on line 14).

N > 0: calls work(i) N times and prints "elapsed_ns=X" (time.perf_counter_ns around
the loop); N == 0: prints "ready" and calls work(i) forever. threads16: 16 threads
wait on one Event and the main thread joins them; prints "ready" once they wait."""
import sys
import threading
import time


def work(n):
    # the breakpoint's line is the next one
    x = n * 2
    return x + 1


def main():
    if sys.argv[1] == "threads16":
        gate = threading.Event()
        threads = [threading.Thread(target=gate.wait, name="w%d" % k) for k in range(16)]
        for t in threads:
            t.start()
        print("ready", flush=True)
        for t in threads:
            t.join()
        return
    n = int(sys.argv[1])
    if n == 0:
        print("ready", flush=True)
        i = 0
        while True:
            work(i)
            i += 1
    t = time.perf_counter_ns()
    for i in range(n):
        work(i)
    print("elapsed_ns=%d" % (time.perf_counter_ns() - t), flush=True)


main()
