"""Masking secret values out of a byte stream that arrives in arbitrary pieces."""

from __future__ import annotations

from collections.abc import Iterable

MASK = b"***"


class SecretValues:
    """Secret values to mask, longest first (so a secret that contains another is masked
    whole). It may grow while maskers use it: every exec of a sandbox masks what any exec of
    that sandbox was given, also a value that arrived after it started."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.ordered: tuple[bytes, ...] = ()
        self.size = 0  # bytes, all values together
        self.add(self.new_of(values))

    def __len__(self) -> int:
        return len(self.ordered)

    def new_of(self, values: Iterable[str]) -> set[bytes]:
        """Those of `values` not held yet (empty ones are never secrets)."""
        return {v.encode() for v in values if v} - set(self.ordered)

    def add(self, values: set[bytes]) -> None:
        if values:
            self.ordered = tuple(sorted({*self.ordered, *values}, key=len, reverse=True))
            self.size = sum(len(v) for v in self.ordered)

    def joined(self, values: Iterable[str]) -> SecretValues:
        """A copy holding these values and `values`."""
        both = SecretValues()
        both.add({*self.ordered, *self.new_of(values)})
        return both

    def mask_text(self, text: str) -> str:
        for secret in self.ordered:
            text = text.replace(secret.decode(), MASK.decode())
        return text


class Masker:
    """Replaces every occurrence of any secret, including one split across chunks.

    It holds back the end of what it has seen that could be the start of a secret (at most
    `longest - 1` bytes, and only bytes that begin one) until more data or `flush()` decides
    them: an interactive program's prompt is not held back for want of more output.
    """

    def __init__(self, secrets: SecretValues) -> None:
        self._secrets = secrets
        self._pending = b""

    @property
    def active(self) -> bool:
        return bool(self._secrets.ordered)

    def _mask(self, data: bytes, secrets: tuple[bytes, ...]) -> bytes:
        for secret in secrets:
            data = data.replace(secret, MASK)
        return data

    def feed(self, data: bytes) -> bytes:
        secrets = self._secrets.ordered  # the values now: the set may grow between feeds
        if not secrets:
            return data
        buf = self._mask(self._pending + data, secrets)
        cut = len(buf) - _start_of_secret(buf, secrets)
        out, self._pending = buf[:cut], buf[cut:]
        return out

    def flush(self, *, cut: bool = False) -> bytes:
        """The rest. With `cut` (the output was cut short), a trailing piece that could be the
        start of a secret is masked too: the missing end must not make it readable."""
        secrets = self._secrets.ordered
        out, self._pending = self._mask(self._pending, secrets), b""
        size = _start_of_secret(out, secrets) if cut else 0
        return out[:-size] + MASK if size else out


def _start_of_secret(data: bytes, secrets: tuple[bytes, ...]) -> int:
    """The length of the longest end of `data`, shorter than the longest secret, that a secret
    starts with (0: none)."""
    keep = len(secrets[0]) - 1 if secrets else 0
    longest = 0
    for secret in secrets:
        # Only where the secret's first byte occurs can one of its beginnings start; the
        # leftmost such place that matches is the longest end for this secret.
        at = data.find(secret[:1], max(0, len(data) - min(len(secret), keep)))
        while at != -1 and len(data) - at > longest:
            if data.startswith(secret[: len(data) - at], at):
                longest = len(data) - at
                break
            at = data.find(secret[:1], at + 1)
    return longest
