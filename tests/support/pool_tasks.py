"""Tasks for the render-pool tests: module-level, so the pool can pickle them by reference."""

import os
import time

from gateway.errors import NoCharacterDetected


def pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def span_of_sleep(seconds: float) -> tuple[int, float, float]:
    """(pid, when the sleep began, when it ended): wall-clock seconds since the epoch."""
    began = time.time()
    time.sleep(seconds)
    return os.getpid(), began, time.time()


def refuse() -> None:
    raise NoCharacterDetected("nothing here")


def crash() -> None:
    os._exit(3)


def thread_counts() -> tuple[int, str]:
    """OpenCV's thread count and OMP_NUM_THREADS, as a render worker sees them."""
    import cv2

    return cv2.getNumThreads(), os.environ.get("OMP_NUM_THREADS", "")
