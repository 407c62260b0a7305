"""hartree.interruption.children_ignore_sigint: worker processes started inside the block
inherit SIGINT ignored (only the command acts on Ctrl-C); the handler is restored after,
and outside the main thread the block changes nothing."""

import signal
import subprocess
import sys
import threading

from hartree.interruption import children_ignore_sigint

CHILD = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"


def _child_ignores_sigint():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip() == "True"


def test_children_started_inside_ignore_sigint_and_the_handler_comes_back():
    def handler(signum, frame):  # pragma: no cover (never called)
        raise AssertionError

    previous = signal.signal(signal.SIGINT, handler)
    try:
        assert not _child_ignores_sigint()
        with children_ignore_sigint():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert _child_ignores_sigint()
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_main_thread_nothing_changes():
    seen = []

    def body():
        with children_ignore_sigint():
            seen.append(signal.getsignal(signal.SIGINT))

    before = signal.getsignal(signal.SIGINT)
    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [before] and signal.getsignal(signal.SIGINT) is before
