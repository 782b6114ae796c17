# pyload.py - the real workload of bench/bench_workload.c: a CPU-bound Python loop
# of dictionary, string and integer work (word counts, an index of records, a
# merge), timed from the inside. Prints "ops_per_second X" (loop iterations per
# second) and "elapsed_s Y".
#
#   python3 pyload.py [ITERATIONS [LINGER_S]]   (default 200000, 0)
#
# LINGER_S: stay alive that long after printing, so that a tracer recording in the
# process can read its last records before the exit.
import sys
import time


def work(n):
    counts = {}
    index = {}
    total = 0
    for i in range(n):
        word = "w%d" % (i % 997)
        counts[word] = counts.get(word, 0) + 1
        rec = {"id": i, "word": word, "size": i & 255}
        index.setdefault(i % 101, []).append(rec)
        if i % 1000 == 999:
            merged = dict(counts)
            merged.update({k: v * 2 for k, v in list(counts.items())[:50]})
            total += len(merged)
            index.clear()
        total += rec["size"]
    return total


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    linger = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    t0 = time.perf_counter()
    check = work(n)
    t1 = time.perf_counter()
    print("ops_per_second %.0f" % (n / (t1 - t0)))
    print("elapsed_s %.3f check %d" % (t1 - t0, check))
    sys.stdout.flush()
    if linger > 0:
        time.sleep(linger)


main()
