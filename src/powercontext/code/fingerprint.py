"""The stable id of a work tree within a Scope.

* A git work tree with commits: ``"git:" + hex(sha256(root commit id))[:16]``, where the root commit is
  the smallest id among the parentless commits reachable from HEAD. Every clone of a repository shares
  it, it survives moves, re-indexes and new commits, and it reveals nothing about the server. A
  subdirectory of a repository is a work tree of its own: ``sha256(root commit + "\\0" + prefix)``.
* Anything else (a plain directory, or a repository without commits):
  ``"dir:" + hex(sha256(scope_id + "\\0" + canonical absolute path))[:16]``, stable for as long as
  the directory stays where it is. The path is kept server-side only and never returned.

Sixteen hex digits (64 bits) keep collisions negligible among the few trees of one Scope.
"""

from __future__ import annotations

import hashlib

from powercontext.code.discovery import WorkTree


def fingerprint(scope_id: str, tree: WorkTree) -> str:
    if tree.kind == "git" and tree.root_commit is not None:
        seed = tree.root_commit if not tree.prefix else tree.root_commit + "\0" + tree.prefix
        return "git:" + hashlib.sha256(seed.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    seed = scope_id + "\0" + str(tree.root)
    return "dir:" + hashlib.sha256(seed.encode("utf-8", "surrogateescape")).hexdigest()[:16]
