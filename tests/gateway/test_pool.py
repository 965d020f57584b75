import os
import time

import gevent
import pytest
from gevent.event import Event

from gateway.admission import Admission
from gateway.errors import ClientGone, NoCharacterDetected, Overloaded
from gateway.rendering.pool import CpuPool, NoWorkerFree, WorkerCrashed
from tests.support import pool_tasks


@pytest.fixture(scope="module")
def pool():
    pool = CpuPool(2)
    pool.wait_ready()
    try:
        yield pool
    finally:
        pool.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_tasks_run_in_other_processes_side_by_side(pool):
    (one, began, ended), (other, began2, ended2) = pool.map(
        pool_tasks.span_of_sleep, [(0.5,), (0.5,)], client=None
    )
    assert os.getpid() not in (one, other) and one != other
    assert max(began, began2) < min(ended, ended2)  # in parallel: the two sleeps overlap


def test_a_worker_runs_one_thread_of_opencv_and_of_blas(pool):
    # The pool is the parallelism: threads inside each worker would oversubscribe the cores.
    assert pool.map(pool_tasks.thread_counts, [()], client=None) == [(1, "1")]


def test_a_task_error_reaches_the_caller_and_the_worker_survives(pool):
    before = pool.map(pool_tasks.pid_after, [(0,), (0,)], None)
    with pytest.raises(NoCharacterDetected, match="nothing here"):
        pool.run(pool_tasks.refuse)
    assert set(pool.map(pool_tasks.pid_after, [(0.2,), (0.2,)], None)) == set(before)


def test_a_crashed_worker_is_replaced(pool):
    with pytest.raises(WorkerCrashed):
        pool.run(pool_tasks.crash)
    pool.wait_ready()  # the replacement warms up
    pids = pool.map(pool_tasks.pid_after, [(0.3,), (0.3,)], None)
    assert len(set(pids)) == 2 and all(_alive(p) for p in pids)


class _Closed:
    """A client socket whose peer has gone: readable, and recv gives EOF."""

    def fileno(self):
        read_end, write_end = os.pipe()
        os.close(write_end)
        self._fd = read_end
        return read_end

    def recv(self, n, flags=0):
        return b""


def test_abandoned_work_is_killed_when_the_client_leaves(pool):
    pids = pool.map(pool_tasks.pid_after, [(0,), (0,)], None)
    start = time.perf_counter()
    with pytest.raises(ClientGone):
        pool.map(pool_tasks.pid_after, [(30,)], client=_Closed())
    assert time.perf_counter() - start < 2
    gevent.sleep(0.5)
    assert not all(_alive(p) for p in pids)  # the busy worker was killed, not left rendering
    pool.wait_ready()
    assert len(set(pool.map(pool_tasks.pid_after, [(0.2,), (0.2,)], None))) == 2


def test_close_leaves_no_worker_running():
    pool = CpuPool(2)
    pids = pool.map(pool_tasks.pid_after, [(0.1,), (0.1,)], None)
    pool.close()
    assert not any(_alive(p) for p in pids)


def test_admission_queues_then_refuses_with_retry_after():
    admission = Admission(slots=1, queue=1, wait_s=5, retry_after_s=3)
    order = []

    def hold(name, seconds):
        with admission.admit():
            order.append(name)
            gevent.sleep(seconds)

    first = gevent.spawn(hold, "first", 0.3)
    gevent.sleep(0)
    assert not admission.full
    second = gevent.spawn(hold, "second", 0)
    gevent.sleep(0)
    assert admission.active == 1 and admission.waiting == 1
    assert admission.full  # the route refuses before reading a body now
    with pytest.raises(Overloaded) as refused:
        with admission.admit():
            pass
    assert refused.value.headers["Retry-After"] == "3" and refused.value.status == 503
    gevent.joinall([first, second], raise_error=True)
    assert order == ["first", "second"] and admission.active == admission.waiting == 0


def test_a_freed_slot_goes_to_the_client_holding_the_fewest():
    # One client posts four drawings at once, another one a moment later: the second's
    # waits behind none of the first's still waiting; among one client's, first come first.
    admission = Admission(slots=2, queue=8, wait_s=5, retry_after_s=1)
    order = []

    def render(client, name):
        with admission.admit(caller=client):
            order.append(name)
            gevent.sleep(0.05)

    burst = [gevent.spawn(render, "10.0.0.1", f"burst{i}") for i in range(4)]
    gevent.sleep(0)
    late = gevent.spawn(render, "10.0.0.2", "other")
    gevent.sleep(0)
    assert admission.active == 2 and admission.waiting == 3
    gevent.joinall([*burst, late], raise_error=True)
    assert order == ["burst0", "burst1", "other", "burst2", "burst3"]
    assert admission.active == admission.waiting == 0 and not admission._held


def test_a_waiter_killed_as_its_slot_is_handed_over_gives_it_back():
    admission = Admission(slots=1, queue=2, wait_s=5, retry_after_s=1)
    release = Event()

    def hold():
        with admission.admit(caller="a"):
            release.wait()

    def wait_for_a_slot():
        with admission.admit(caller="b"):
            pytest.fail("a killed request never runs")

    holder = gevent.spawn(hold)
    gevent.sleep(0)
    waiter = gevent.spawn(wait_for_a_slot)
    gevent.sleep(0)
    release.set()
    holder.join()  # the slot is handed to the waiter, which has not run yet...
    waiter.kill()  # ...and is killed (its client left) before it does
    assert admission.active == admission.waiting == 0 and not admission._held
    with admission.admit():  # the slot is free again
        pass


def test_admission_gives_up_after_waiting_too_long():
    admission = Admission(slots=1, queue=5, wait_s=0.1, retry_after_s=1)

    def hold():
        with admission.admit():
            gevent.sleep(1)

    holder = gevent.spawn(hold)
    gevent.sleep(0)
    with pytest.raises(Overloaded):
        with admission.admit():
            pass
    holder.kill()


def test_admission_says_how_long_a_slot_took():
    admission = Admission(slots=1, queue=1, wait_s=5, retry_after_s=1)

    def wait_for_a_slot() -> float:
        with admission.admit() as waited:
            return waited

    with admission.admit() as waited:
        assert waited < 0.05
        queued = gevent.spawn(wait_for_a_slot)
        gevent.sleep(0.2)
    assert 0.15 < queued.get(timeout=1) < 1.0


def test_the_pool_waits_for_a_worker_only_as_long_as_it_is_told():
    small = CpuPool(1, wait_s=0.3)
    small.wait_ready()
    try:
        busy = gevent.spawn(small.run, pool_tasks.pid_after, 2.0)
        gevent.sleep(0.1)
        started = time.monotonic()
        with pytest.raises(NoWorkerFree):
            small.run(pool_tasks.pid_after, 0)
        assert 0.25 < time.monotonic() - started < 1.0
        busy.get(timeout=5)
    finally:
        small.close()


def test_a_worker_that_died_while_idle_is_skipped(pool):
    pool.wait_ready()
    pids = pool.map(pool_tasks.pid_after, [(0.1,), (0.1,)], None)
    for pid in pids:  # both die while idle, as under the OOM killer
        os.kill(pid, 9)
    gevent.sleep(0.2)
    # The dead ones are skipped and replaced; the task waits for a fresh worker.
    assert pool.run(pool_tasks.pid_after, 0) not in pids
