"""Helpers for the tests that run work on several threads or interrupt the main thread."""
import signal
import threading

import pytest


def run_threads(target, n):
    """Runs target(i) on n threads started together; re-raises the first failure."""
    errors = []
    barrier = threading.Barrier(n)

    def body(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def interrupt_during(work, rounds=10000):
    """Calls work() up to `rounds` times on the main thread while another thread sends one
    SIGINT; checks that it raised KeyboardInterrupt there."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are handled on the main thread")
    main = threading.main_thread().ident
    started = threading.Event()

    def interrupt():
        started.wait()
        signal.pthread_kill(main, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sender = threading.Thread(target=interrupt)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            started.set()
            for _ in range(rounds):  # the signal lands during one of these
                work()
    finally:
        sender.join()
        signal.signal(signal.SIGINT, previous)
