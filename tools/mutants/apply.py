"""Applying a mutant: a scratch copy of `minihdfs/` (and, unpatched, of the
`hdfs_contract/` it imports) with one patch, and running the local backend's cluster
processes on that copy while the harness (and the harness's own
mini-HDFS client, used for read-back and final state) stays unmutated."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Iterator

from .catalogue import Mutant

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "minihdfs"
# what the package imports besides the standard library: copied beside it, never patched,
# so the copy's processes import the whole system from the copy
CONTRACT = "hdfs_contract"


class MutantError(RuntimeError):
    """A mutant that cannot be applied as written (its snippet moved or changed)."""


def patch_text(mutant: Mutant, text: str) -> str:
    """`text` with the mutant's snippet replaced; the snippet must occur exactly once."""
    count = text.count(mutant.original)
    if count != 1:
        where = "not found" if count == 0 else f"found {count} times"
        raise MutantError(f"mutant {mutant.name}: snippet {mutant.original!r} {where} in "
                          f"{mutant.file}; update tools/mutants/catalogue.py to the current code")
    return text.replace(mutant.original, mutant.replacement)


def copy_package(dest_root: str, source_root: str = REPO_ROOT) -> str:
    """Copy `minihdfs/` and `hdfs_contract/` from source_root into dest_root (without
    byte code)."""
    for package in (PACKAGE, CONTRACT):
        shutil.copytree(os.path.join(source_root, package), os.path.join(dest_root, package),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest_root


def apply_mutant(mutant: Mutant | None, dest_root: str, source_root: str = REPO_ROOT) -> str:
    """A copy of the package in dest_root with `mutant` applied (None: unmutated, the
    baseline); returns dest_root, the directory to put first on PYTHONPATH."""
    copy_package(dest_root, source_root)
    if mutant is None:
        return dest_root
    if not mutant.file.startswith(PACKAGE + "/"):
        raise MutantError(f"mutant {mutant.name}: {mutant.file} is not in {PACKAGE}/")
    path = os.path.join(dest_root, mutant.file)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    mutated = patch_text(mutant, text)
    compile(mutated, path, "exec")   # a mutant that does not even parse is a broken mutant
    with open(path, "w", encoding="utf-8") as f:
        f.write(mutated)
    return dest_root


@contextlib.contextmanager
def mutated_tree(mutant: Mutant | None, source_root: str = REPO_ROOT, keep: bool = False,
                 parent_dir: str | None = None) -> Iterator[str]:
    """Inside the block, every cluster process the local backend starts (NameNode,
    DataNodes, workload clients) imports the mutated copy; yields the copy's root.

    The local launcher puts minihdfs.cluster.PACKAGE_ROOT first on each process's
    PYTHONPATH (its processes run from the cluster's folder, not the repository), so
    pointing PACKAGE_ROOT at the copy is enough; this process's own imports are not
    touched."""
    import minihdfs.cluster as cluster

    root = tempfile.mkdtemp(prefix=f"hdfs-chaos-mutant-{mutant.name if mutant else 'none'}-",
                            dir=parent_dir)
    previous = cluster.PACKAGE_ROOT
    try:
        apply_mutant(mutant, root, source_root)
        cluster.PACKAGE_ROOT = root
        yield root
    finally:
        cluster.PACKAGE_ROOT = previous
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
