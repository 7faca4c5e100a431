"""The story comparison does not count the order in which two followers rejoining the ISR in
one step are added (a race of their fetches), and still counts everything else. The stories
are the ones real-durability-matrix told on Kafka 4.3.1 (acksall-rf3-min1-0, steps[69]) and
in the model. No Kafka needed."""

from __future__ import annotations

from segtools.realcluster.story import compare_stories


def _c(isr: list[int], step: int, *, epoch: int = 6, leader: int = 1,
       election: str | None = None) -> dict:
    return {"epoch": epoch, "leader": leader, "isr": isr, "elr": [], "election": election,
            "step": step, "kind": "advance"}


def test_two_followers_rejoining_in_one_step_in_either_order_tell_the_same_story():
    model = {"p-0": [_c([1], 60, election="unclean"), _c([1, 2], 69), _c([1, 2, 3], 69)]}
    real = {"p-0": [_c([1], 61, election="unclean"), _c([1, 3], 69), _c([1, 2, 3], 69)]}
    assert compare_stories(model, real) == []


def test_a_different_end_of_the_step_is_still_a_difference():
    model = {"p-0": [_c([1], 60), _c([1, 2], 69), _c([1, 2, 3], 69)]}
    real = {"p-0": [_c([1], 60), _c([1, 3], 69)]}
    assert compare_stories(model, real) != []


def test_the_order_across_steps_is_still_a_difference():
    # [1, 2] lasted a whole step in the model, [1, 3] in the cluster: another story
    model = {"p-0": [_c([1], 60), _c([1, 2], 68), _c([1, 2, 3], 69)]}
    real = {"p-0": [_c([1], 60), _c([1, 3], 68), _c([1, 2, 3], 69)]}
    assert compare_stories(model, real) != []


def test_a_shrink_between_is_never_joined():
    model = {"p-0": [_c([1, 2], 60), _c([1], 69), _c([1, 2, 3], 69)]}
    real = {"p-0": [_c([1, 2], 60), _c([1, 3], 69), _c([1, 2, 3], 69)]}
    assert compare_stories(model, real) != []
