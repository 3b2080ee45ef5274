"""B2, syncBlock's length rule, as the pure function checks.block.b2_length: the cases of
spec/CHECKS.md B2 (MINIHDFS.md section 3) and of seed 002 (the replicas' original states
FINALIZED / RBW / RWR decide the length the recovery keeps). The SQL that check_b2 runs is
compared with this function on random answers in tests/verifier/test_b2_sql.py."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from harness.reconcile.checks.block import b2_length  # noqa: E402


def ans(dn, state, length, gs=5):
    return {"dn": dn, "state": state, "len": length, "gs": gs}


def test_finalized_wins_and_keeps_rbw_of_its_length():
    # a FINALIZED replica decides whatever the RBW ones hold; RBW replicas of exactly the
    # finalized length take part, a longer or shorter one does not
    got = b2_length([ans("dn1", "FINALIZED", 10), ans("dn2", "RBW", 10), ans("dn3", "RBW", 12),
                     ans("dn4", "RBW", 7)])
    assert got == ("finalized", 10, ["dn1", "dn2"])


def test_rbw_beats_rwr_and_takes_the_least_length():
    got = b2_length([ans("dn1", "RBW", 7), ans("dn2", "RBW", 5), ans("dn3", "RWR", 3)])
    assert got == ("min_rbw", 5, ["dn1", "dn2"])


def test_rwr_only_takes_the_least_rwr_length():
    got = b2_length([ans("dn2", "RWR", 6), ans("dn1", "RWR", 4)])
    assert got == ("min_rwr", 4, ["dn1", "dn2"])


def test_all_empty_or_no_answer_removes_the_block():
    assert b2_length([ans("dn1", "RBW", 0), ans("dn2", "RWR", 0)]) == ("remove", 0, None)
    assert b2_length([]) == ("remove", 0, None)
    assert b2_length(None) == ("remove", 0, None)
    # the literal reading keeps the empty replicas, yet nothing holds data: remove too
    assert b2_length([ans("dn1", "RBW", 0)], keep_empty=True) == ("remove", 0, None)


def test_truncate_takes_the_requested_length_and_the_replicas_that_hold_it():
    got = b2_length([ans("dn1", "FINALIZED", 10), ans("dn2", "RBW", 3)], new_len=4)
    assert got == ("truncate", 4, ["dn1"])


def test_hadoop_leaves_empty_replicas_out_the_literal_reading_keeps_them():
    answers = [ans("dn1", "RBW", 0), ans("dn2", "RBW", 5)]
    assert b2_length(answers) == ("min_rbw", 5, ["dn2"])
    assert b2_length(answers, keep_empty=True) == ("min_rbw", 0, ["dn1", "dn2"])


def test_answers_older_than_the_block_or_without_length_never_take_part():
    answers = [ans("dn1", "FINALIZED", 9, gs=3), ans("dn2", "RBW", 6, gs=5),
               ans("dn3", "RBW", None, gs=5)]
    assert b2_length(answers, start_gs=5) == ("min_rbw", 6, ["dn2"])
    assert b2_length(answers) == ("finalized", 9, ["dn1"])


def test_a_state_outside_the_rule_gives_no_length():
    assert b2_length([ans("dn1", "RUR", 8)]) == ("remove", 0, None)


def test_a_truncate_without_answers_judges_no_participants():
    assert b2_length(None, new_len=3) == ("truncate", 3, None)
    assert b2_length([], new_len=3) == ("truncate", 3, [])
