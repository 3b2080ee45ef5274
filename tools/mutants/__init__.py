"""Mutation testing of the mini-HDFS (issue 17): a catalogue of mutants, each breaking
one named rule of the seeds, a way to apply one to a scratch copy of `minihdfs/`, and a
runner that runs the scenario library against every mutant and reports which were
killed, by which scenarios and checks.

    python -m tools.mutants list
    python -m tools.mutants check                       # every mutant applies to this tree
    python -m tools.mutants report --out DIR            # rebuild a report (partial runs too)
    python -m tools.mutants run [--mutants a,b] [--scenarios GLOB...] [--targeted]
                                [--every-scenario] [--max-verify-batch N] [--workers N]
                                [--out results/mutants] [--no-baseline]

API (tests/integration/test_verifier_real_runs.py): `BY_NAME[name]` and
`mutated_tree(mutant)`, a context manager inside which the local backend's cluster
processes run the mutated copy."""

from .apply import MutantError, apply_mutant, mutated_tree, patch_text
from .catalogue import BY_NAME, MUTANTS, Mutant

__all__ = ["BY_NAME", "MUTANTS", "Mutant", "MutantError", "apply_mutant", "mutated_tree",
           "patch_text"]
