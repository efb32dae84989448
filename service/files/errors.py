"""Problems particular to file transfer (the runtime's path errors are mapped centrally)."""

from __future__ import annotations

from service.errors import AppError, Unprocessable


class PayloadTooLarge(AppError):
    status, code, title = 413, "payload_too_large", "The upload exceeds the tenant's limit"


class ArchiveRejected(Unprocessable):
    code, title = "archive_rejected", "The archive could not be unpacked"


class ArchiveFailed(AppError):
    status, code, title = 409, "archive_failed", "The sandbox could not make the archive"
