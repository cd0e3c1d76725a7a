"""The thread count of a Simulation's steps (solver/backend.py StepThreads) and how OpenMP's
threads wait (SPIN_COUNT). The thread count never changes a result
(tests/solver/test_backends.py test_thread_count_does_not_change_results); these tests check
which count runs and that the waiting default is in place.
"""

import os
import subprocess
import sys

import pytest

from solver import backend


def _wait_settings(**env):
    """OMP_WAIT_POLICY and GOMP_SPINCOUNT after loading the kernels in a fresh process whose
    environment has neither, plus ``env``."""
    code = ("import os; from solver import backend; assert backend.numba_kernels() is not None; "
            "print('RESULT', os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))")
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], env=dict(clean, **env), cwd=root,
                         capture_output=True, text=True, check=True)
    return [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")][-1].split()[1:]


def test_openmp_threads_spin_before_they_sleep():
    """Loading the kernels sets libgomp's spin count, not passive waiting (sleeping at once cost
    every parallel region about 45 us); an explicit setting in the environment wins."""
    if backend.numba_kernels() is None:
        pytest.skip("no compiled backend")
    assert _wait_settings() == ["None", str(backend.SPIN_COUNT)]
    assert _wait_settings(OMP_WAIT_POLICY="PASSIVE") == ["PASSIVE", "None"]
    assert _wait_settings(GOMP_SPINCOUNT="77") == ["None", "77"]


def _default_threads(monkeypatch):
    """All the threads (skips the test without the compiled backend or with one core), no
    thread count set: the default setting's measurement runs."""
    import numba
    monkeypatch.delenv("VERLET_THREADS", raising=False)
    if backend.numba_kernels() is None:
        pytest.skip("no compiled backend")
    top = numba.config.NUMBA_NUM_THREADS
    if top < 2:
        pytest.skip("one core: nothing to choose")
    backend.configure(threads=0)
    return top


def _measured_sim(cost):
    """A one-particle Simulation whose steps StepThreads times by a clock that advances by
    cost[the thread count the step runs on], and the list of counts its steps ran on."""
    import numba
    from solver import Builder, Simulation
    now = [0.0]

    def clock():
        t = now[0]
        now[0] += cost[numba.get_num_threads()]
        return t

    b = Builder()
    b.add_particles([[0.0, 0.0, 1.0]])
    sim = Simulation(b.build(), backend="numba")
    sim._threads = backend.StepThreads(clock)
    seen = []
    run = sim.kernels.run_substeps
    sim.kernels.run_substeps = lambda *a: (seen.append(numba.get_num_threads()), run(*a))[1]
    return sim, seen


def test_the_default_thread_count_is_measured(monkeypatch):
    """With no thread count set, each Simulation's steps run on all threads or on one, whichever
    its trials measure faster (backend.StepThreads: after WARM steps, every EVERY steps and
    when the step time drifts, 2 TRIAL steps alternating), the count before a step restored
    after it; a set count (configure or VERLET_THREADS) always applies. The clock is the
    test's: a step costs what the test says for the thread count it runs on."""
    import numba
    top = _default_threads(monkeypatch)
    cost = {1: 1.0, top: 2.0}                       # one thread faster at first
    sim, seen = _measured_sim(cost)
    S = backend.StepThreads
    for _ in range(S.WARM + 2 * S.TRIAL + 3):
        sim.step(1 / 24)
        assert numba.get_num_threads() == top         # restored after every step
    trial = S.WARM + 2 * S.TRIAL
    assert seen[:S.WARM] == [top] * S.WARM
    assert seen[S.WARM:trial] == [top, 1] * S.TRIAL
    assert seen[trial:] == [1, 1, 1]                   # one thread won
    cost[1], cost[top] = 3.0, 1.0                      # the machine changed: now all threads win
    while sim._threads.steps < S.WARM + S.EVERY + 2 * S.TRIAL + 1:
        sim.step(1 / 24)
    assert seen[-1] == top and sim._threads.choice == top
    try:
        backend.configure(threads=1)                   # a set count always applies
        sim.step(1 / 24)
        assert seen[-1] == 1
    finally:
        backend.configure(threads=0)


def test_a_step_time_that_moves_twofold_measures_the_threads_again(monkeypatch):
    """After a trial, the winner's step time measured at DRIFT times its trial median (either
    way, as the median of DRIFT_STEPS steps) starts a trial at once, not EVERY steps later: a
    core taken by another job after the first trial (all threads then four times as slow,
    one thread twice) is met within DRIFT_STEPS + 2 TRIAL steps, as is a scene that gets
    heavier. A steady step time, or one that moves by less, starts none; nor does a core given
    back while one thread runs (its time does not change: the scheduled trial finds it)."""
    top = _default_threads(monkeypatch)
    S = backend.StepThreads
    cost = {1: 2.0, top: 1.0}                       # all threads win the first trial
    sim, seen = _measured_sim(cost)
    trial = S.WARM + 2 * S.TRIAL
    for _ in range(trial + 40):
        sim.step(1 / 24)
    assert seen[:trial] == [top] * S.WARM + [top, 1] * S.TRIAL
    assert seen[trial:] == [top] * 40                # steady (within 2x): no trial
    cost[top] = 1.9                                  # 1.9 x: still none
    for _ in range(40):
        sim.step(1 / 24)
    assert seen[-40:] == [top] * 40
    cost[top] = 4.0                                  # a core busy: all threads 4x, one 2x
    for _ in range(S.DRIFT_STEPS + 2 * S.TRIAL + 1):
        sim.step(1 / 24)
    assert sim._threads.choice == 1 and seen[-1] == 1
    assert sim._threads.steps < S.WARM + S.EVERY     # long before the scheduled trial
    again = sim._threads.steps
    cost[top] = 1.0                                  # the core given back: one thread's time
    for _ in range(40):                              # is what it was, so it does not drift
        sim.step(1 / 24)
    assert seen[-40:] == [1] * 40
    cost[1] = 4.5                                    # a scene that got heavier (2.25x)
    for _ in range(S.DRIFT_STEPS + 2 * S.TRIAL + 1):
        sim.step(1 / 24)
    assert sim._threads.choice == top and seen[-1] == top
    assert sim._threads.steps - again < S.EVERY


def test_a_trial_moves_the_choice_only_by_a_clear_margin(monkeypatch):
    """One thread replaces all threads only when its median step is at least MARGIN faster: a
    step's time varies from one step to the next more than by a few per cent, so a trial of
    three steps each cannot tell such a tie (all threads stay); a clear win moves it."""
    top = _default_threads(monkeypatch)
    S = backend.StepThreads
    for one, chosen in ((0.95, top), (1 - S.MARGIN - 0.02, 1)):
        sim, seen = _measured_sim({1: one, top: 1.0})
        for _ in range(S.WARM + 2 * S.TRIAL + 3):
            sim.step(1 / 24)
        assert sim._threads.choice == chosen and seen[-3:] == [chosen] * 3
