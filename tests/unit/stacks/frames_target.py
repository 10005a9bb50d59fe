"""A target for the stack reader (CPython 3.8 to 3.14): threads stopped at
known places, and the interpreter's own view of them written down.

    python3 frames_target.py TRUTH_FILE

Threads: the main thread in time.sleep under a lambda, a generator and two
methods; "deep" in lock.acquire at the bottom of a 300-call recursion; a
ThreadPoolExecutor worker in Event.wait. Once every one of them stands on the
line of its blocking call, a last thread writes sys._current_frames() of the
others to TRUTH_FILE ("T native_id", then "F name|file|line" innermost
first; the name is co_qualname where the version has one, else co_name),
prints "truth", and ends: the process then has exactly three threads, blocked
for good.
"""
import concurrent.futures
import inspect
import sys
import threading
import time

DEPTH = 300
lock = threading.Lock()
lock.acquire()
released = threading.Event()


def code_name(code):
    return getattr(code, "co_qualname", code.co_name)


def recurse(n):
    if n == 0:
        lock.acquire()  # DEEP_LINE
    else:
        recurse(n - 1)


def deep():
    recurse(DEPTH)


def pool_job():
    released.wait()


class Trainer:
    def batches(self):
        yield (lambda: time.sleep(3600))()  # SLEEP_LINE

    def step(self):
        for _ in self.batches():
            pass


def line_of(function, text):
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def stands(frame, name, line):
    return frame is not None and frame.f_code.co_name == name and frame.f_lineno == line


def write_truth(path, threads):
    sleep_line = line_of(Trainer.batches, "SLEEP_LINE")
    deep_line = line_of(recurse, "DEEP_LINE")
    # Condition.wait's blocking acquire: the first after "if timeout is None".
    wait_lines, wait_first = inspect.getsourcelines(threading.Condition.wait)
    at = next(i for i, line in enumerate(wait_lines) if "timeout is None" in line)
    wait_line = wait_first + next(
        i for i, line in enumerate(wait_lines) if i > at and "waiter.acquire()" in line)
    want = {"main": ("<lambda>", sleep_line), "deep": ("recurse", deep_line),
            "pool": ("wait", wait_line)}
    while True:
        frames = sys._current_frames()
        if all(stands(frames.get(threads[k].ident), *want[k]) for k in want):
            break
        time.sleep(0.01)
    with open(path, "w") as out:
        for key in ("main", "deep", "pool"):
            out.write("T %d\n" % threads[key].native_id)
            f = frames[threads[key].ident]
            while f is not None:
                out.write("F %s|%s|%d\n" % (code_name(f.f_code), f.f_code.co_filename, f.f_lineno))
                f = f.f_back
    print("truth", flush=True)


def main():
    threading.Thread(target=deep, name="deep", daemon=True).start()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    pool.submit(pool_job)
    threads = {t.name: t for t in threading.enumerate()}
    threads["main"] = threading.main_thread()
    threads["pool"] = next(t for t in threading.enumerate() if t.name.startswith("ThreadPool"))
    threading.Thread(target=write_truth, args=(sys.argv[1], threads), name="truth").start()
    Trainer().step()


if __name__ == "__main__":
    main()
