"""Store failures, each of which the server maps to one stable HTTP error code."""

from __future__ import annotations


class StoreError(Exception):
    """Base class. ``code`` is the stable error code a client sees."""

    code = "store-error"
    status = 500


class ScopeNotFound(StoreError):
    code, status = "scope-not-found", 404

    def __init__(self, scope_id: str) -> None:
        super().__init__("no Scope with this scope_id exists; create it with POST /v1/scopes")
        self.scope_id = scope_id


class ReferencedScopeNotFound(ScopeNotFound):
    """A ``context_references`` entry the caller cannot use: missing, or (raised by the Server) unreadable.

    One class for both so that a reference to a Scope the caller may not read answers exactly like a
    reference to a Scope that does not exist: the answer never tells which Scope ids exist.
    """

    code = "referenced-scope-not-found"

    def __init__(self, index: int, scope_id: str) -> None:
        StoreError.__init__(
            self,
            f"context_references[{index}] names a Scope that does not exist or that this caller may not read",
        )
        self.scope_id = scope_id
        self.index = index


class ScopeExists(StoreError):
    code, status = "scope-exists", 409

    def __init__(self) -> None:
        super().__init__("a Scope with this scope_id already exists")


class ArtifactNotFound(StoreError):
    code, status = "artifact-not-found", 404

    def __init__(self, message: str = "no Artifact with this id exists in this Scope") -> None:
        super().__init__(message)


class ArtifactPurged(StoreError):
    """The RFC's "unavailable recorded revision": the Artifact was purged, its text erased for good."""

    code, status = "purged", 410

    def __init__(self) -> None:
        super().__init__("this Artifact was purged: the text of every revision was erased and cannot be read")


class ProfileNotFound(ArtifactNotFound):
    def __init__(self) -> None:
        super().__init__("this Scope has no committed Profile; commit one with PUT /v1/scopes/{scope_id}/profile")


class RevisionNotFound(StoreError):
    code, status = "revision-not-found", 404

    def __init__(self, head: int) -> None:
        super().__init__(f"this Artifact has no such revision; revisions run from 1 to {head}")


class RevisionConflict(StoreError):
    code, status = "revision-conflict", 409

    def __init__(self, expected: int, current: int) -> None:
        super().__init__(f"expected revision {expected} but the head is revision {current}; read the head and retry")
        self.current = current


class NotActive(StoreError):
    code, status = "artifact-not-active", 409

    def __init__(self, message: str) -> None:
        super().__init__(message)


class IdempotencyConflict(StoreError):
    code, status = "idempotency-conflict", 409

    def __init__(self) -> None:
        super().__init__("this idempotency_key was already used with a different body; use a new key")


class InvalidMerge(StoreError):
    code, status = "invalid-merge", 422

    def __init__(self, message: str) -> None:
        super().__init__(message)


class InvalidReference(StoreError):
    code, status = "invalid-reference", 422

    def __init__(self) -> None:
        super().__init__("a Scope cannot list itself in context_references")


class CandidateNotFound(StoreError):
    code, status = "candidate-not-found", 404

    def __init__(self, what: str = "Experience Candidate") -> None:
        super().__init__(f"no {what} with this id exists in this Scope")


class CandidateNotPending(StoreError):
    code, status = "candidate-not-pending", 409

    def __init__(self, status: str) -> None:
        super().__init__(f"this Candidate is already {status}; only pending Candidates can be reviewed")


class CandidatePurged(StoreError):
    """An extracted write whose Source (or a memory it names) was purged: its text is erased, it cannot apply."""

    code, status = "purged", 410

    def __init__(self) -> None:
        super().__init__(
            "this Candidate's Source or memory was purged: its text was erased and it cannot be approved; reject it"
            " to clear it from the inbox"
        )


class CandidateRevisionConflict(StoreError):
    code, status = "candidate-revision-conflict", 409

    def __init__(self, expected: int, current: int) -> None:
        super().__init__(
            f"expected candidate revision {expected} but the Candidate is at revision {current}; read it and retry"
        )
        self.current = current


class FamilyUnsupported(StoreError):
    code, status = "family-unsupported", 501

    def __init__(self) -> None:
        super().__init__("this store does not implement Topic Memory, Experience and Profile")


class SourceNotFound(StoreError):
    code, status = "source-not-found", 404

    def __init__(self) -> None:
        super().__init__("no Source with this id exists in this Scope")


class SourcePurged(StoreError):
    code, status = "purged", 410

    def __init__(self) -> None:
        super().__init__("this Source was purged: its content was erased and cannot be read")


class SourceLeaseLost(StoreError):
    """A worker's lease on a Source expired or was taken over: it must apply nothing (never seen by a client)."""

    code, status = "source-lease-lost", 409

    def __init__(self) -> None:
        super().__init__("this worker no longer holds the Source's lease; another worker extracts it")


class StoreUnavailable(StoreError):
    code, status = "store-unavailable", 503

    def __init__(self) -> None:
        super().__init__("the store could not complete the operation; retry shortly")


class CodeNotFound(StoreError):
    code, status = "code-not-found", 404

    def __init__(self, message: str = "no indexed work tree with this fingerprint exists in this Scope") -> None:
        super().__init__(message)


class StorageFault(StoreError):
    """The store's storage failed under an operation: its disk, its file or its mount, not the request.

    A write that meets one is rolled back whole, so nothing it would have written is stored and nothing
    committed before it is touched; the client may retry once the cause is fixed. ``cause`` names the fault in
    logs (content-free)."""

    code, status = "store-unavailable", 503
    cause = "storage"
    describe = "the store's storage failed"
    remedy = "retry shortly"

    def __init__(self, operation: str = "write") -> None:
        super().__init__(f"{self.describe}: {_OUTCOMES.get(operation, 'the read failed')}; {self.remedy}")
        self.operation = operation


# What became of the operation a fault interrupted (``operation``: a write, its commit, a read).
_OUTCOMES = {
    "write": "nothing was written",
    # The engine did not answer the commit: it may still complete it once it can write again.
    "commit": "whether the write was stored is not known (its commit did not complete); send it again with the same"
    " idempotency keys, which store it at most once",
}


class StoreFull(StorageFault):
    code, status, cause = "store-full", 507, "disk-full"
    describe = "the disk that holds the store is full"
    remedy = "free space on that file system, then retry"


class EngineStoppedByFullDisk(StoreFull):
    """Embedded seekdb met a full disk: its log stops, so statements time out instead of failing, and it does not
    always start writing again once space is freed, even restarted (measured, issue 42; docs/operations.md)."""

    describe = "the disk that holds the store is full, and the embedded engine stopped writing"
    remedy = "free space on that file system, then retry (docs/operations.md, Storage faults: it may not resume)"


class StoreReadOnly(StorageFault):
    code, status, cause = "store-read-only", 503, "read-only"
    describe = "the store cannot be written (its file, directory or file system is read-only)"
    remedy = "make it writable by the Server's user, then retry"


class StoreIOError(StorageFault):
    code, status, cause = "store-io-error", 503, "io-error"
    describe = "the disk that holds the store reported an I/O error"
    remedy = "check the disk and the system log, then retry"


class StoreCorrupt(StorageFault):
    code, status, cause = "store-corrupt", 503, "corrupt"
    describe = "the store file is damaged (a page fails its integrity check)"
    remedy = "stop the Server and restore a backup (docs/operations.md, Backup)"


class StoreOpenRefused(RuntimeError):
    """The store cannot be used, found before anything is written to it: the message says what is wrong and
    what to do, in one line (``powercontext server run`` prints it and exits with code 6)."""


class SchemaTooNew(StoreOpenRefused):
    """The store was written by a newer PowerContext: this one would misread it."""


class StoreNotFound(LookupError):
    """Nothing is stored where a command that reads or updates an existing store was pointed (``store copy
    --from``, ``memory reindex``, ``code index --db``); it is refused before anything is created there."""

    code = "store-not-found"

    def __init__(self, where: str) -> None:
        super().__init__(
            f"no store at {where}; check the path (only `server run` and `store copy --to` create a new store)"
        )
