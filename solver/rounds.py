"""Rounds of substeps (mixed into Simulation): a self-colliding cloth's step runs again, in
rounds, where its particles went where their contacts were not looked for.

The step finds its body contacts once, from each particle's predicted sweep (its box:
collision/body_stage.py), and each pair keeps the side it was found on (Bridson, Fedkiw and
Anderson, "Robust treatment of collisions, contact and friction for cloth animation", SIGGRAPH
2002). A pair that was never found keeps nothing: a flag in gusty wind ends a step up to 18
times farther from its prediction than its box allows (its prediction error is as large as its
motion; a prediction that integrates the wind's drag exactly is no better, measured
2026-11-28), so the corner that folds over it meets faces that were never its candidates and
passes through them. Bridson et al. make up for such misses with a collision pass over the
step's motion; here the step is cut where they happened instead:

    after each round of substeps    BodyContacts.surprised: a watched particle (a free corner of
                                    self-colliding cloth) more than its radius outside its box?
    then                            the step runs again from its start (the guard's backup) in
                                    ROUNDS_GROWTH times the rounds, its group among the
                                    groups in rounds (State.round_groups)
    before each round               those groups find their body contacts again, from where
                                    they are, over the round (BodyContacts.collide(only=...),
                                    Contacts.set_round_contacts: a pair found again keeps its
                                    side); the others keep the step's

A step with one round is one call of the substep loop, as before the rounds, to the same bits.
The rounds, the groups in them and the calm steps that count them down are in the State, so a
resume is bit-identical, and both backends take the same rounds.
"""

import numpy as np

from .loop import ARG

# a step whose watched particles went where their contacts were not looked for runs again in
# ROUNDS_GROWTH times the rounds (up to one a substep); after ROUNDS_KEPT steps in a row with
# none beyond CLEAN of its tolerance outside its boxes, the next starts with half the rounds
# (_run_rounds, _next_rounds; body_stage.BodyContacts.surprised). 8 since 2026-11-30 (4
# before): in the demo's gusts a flag calm for 4 steps was seldom calm for the next at half
# the rounds, and the steps run again cost more than the rounds kept (22 of 141 steps ran
# again, 11 now; its bake 46 to 42 ms a frame, every call timed, one run each; its flag and
# sheet crossing themselves in no frame either way; the thin flag of flag_crossings.py in
# 8 m/s gusts, seeds 1 to 30, crossed in 4 drops and 5 frames, against 6 and 7)
ROUNDS_GROWTH = 2
ROUNDS_KEPT = 8
CLEAN = 0.5


class Rounds:
    """_run_rounds and _next_rounds of Simulation._step (mixed into Simulation, whose state,
    control, contacts, bodies, kernels, substeps, _loop_args, _body_inputs, _dormant,
    _pinned they use)."""

    def _run_rounds(self, h, acc, acc_max, field_keep, asleep, rounds):
        """The step's substeps in ``rounds`` rounds of about equal length (substeps first to
        last - 1 of the step, loop.run_substeps); with more than one, before each round the
        body contacts of the groups in rounds (State.round_groups: those whose watched
        particles, the free corners of self-colliding cloth, strayed from their boxes) are
        found again from where they are then, over the round's length, and replace the ones
        the step's collide found for them (Contacts.set_round_contacts). Why: the
        step's contacts are found once from each particle's predicted motion, and a flag in
        gusty wind ends a step up to 18 times farther from its prediction than its box allows
        (its waves and the wind's drag foreseen by no per-particle prediction; measured
        2026-11-28: the error is as large as the motion itself), so the corner that folds over
        it meets faces that were never its candidates and passes through them. Over a round
        of a few substeps it moves a few millimetres, and the broad phase sees that.

        Returns (failed, strayed, strays): failed the first substep whose positions were not
        finite (or -1); when every round kept its watched particles within their tolerance of
        their boxes, strayed (G,) bool the groups with one beyond CLEAN of it and strays None;
        when one went farther and more rounds may follow (the caller runs the step again from
        its start, those groups in rounds), strayed None and strays (G,) bool the groups that
        went farther."""
        args = list(self._loop_args(h, field_keep, asleep))
        S, iterations, contact_iterations = args[ARG["counts"]][:3]
        bodies = self.bodies
        st, ctl = self.state, self.control
        strayed = np.zeros(bodies.n_groups, bool)
        for r in range(rounds):
            first, last = (r * S) // rounds, ((r + 1) * S) // rounds
            if rounds > 1 and st.round_groups.any():
                bodies.collide(st.x, st.x_prev, h, (last - first) * h, acc, acc_max,
                               self._pinned, ctl.pin_target, self.contacts,
                               ctl.particle_friction, asleep=self._dormant,
                               only=st.round_groups)
                args[ARG["bodies"]] = self.contacts.body_args(*self._body_inputs)
            args[ARG["counts"]] = (S, iterations, contact_iterations, first, last)
            failed = self.kernels.run_substeps(*args)
            if failed >= 0:
                return failed, strayed, None
            ratio, strays = bodies.surprised(st.x, CLEAN)
            if ratio > 1.0 and rounds < S:
                return -1, None, strays
            strayed |= strays
        return -1, strayed, None

    def _next_rounds(self, rounds, strayed):
        """The rounds the next step starts with, given this step's and (G,) bool the groups
        that strayed beyond CLEAN of their tolerance in it. When no group strayed for
        ROUNDS_KEPT steps in a row, half as many rounds, the groups staying in them (at one
        round they leave): a flag calm at 8 rounds is not calm at 1, and leaving at once it
        strayed in the next step's first substeps, which ran again in 2, 4 and 8 rounds (the
        demo, 2026-11-30: 49 steps of 120 ran again, a sixth of the rounds' time). While
        another group still strays, a group that kept within CLEAN for ROUNDS_KEPT steps in a
        row leaves (a sheet that has landed, while a flag beside it still flies in its
        gusts)."""
        st = self.state
        held = st.round_groups & ~strayed
        st.group_clean[held] += 1
        st.group_clean[strayed] = 0
        st.clean_steps = 0 if strayed.any() else st.clean_steps + 1
        if st.clean_steps >= ROUNDS_KEPT and rounds > 1:
            rounds, st.clean_steps = rounds // 2, 0
            st.group_clean[:] = 0
        else:
            calm = st.group_clean >= ROUNDS_KEPT
            st.round_groups[calm] = False
            st.group_clean[calm] = 0
        if rounds == 1 or not st.round_groups.any():
            rounds = 1
            st.round_groups[:] = False
            st.group_clean[:] = 0
        st.contact_rounds = rounds
