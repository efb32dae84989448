"""Masking secret values out of a byte stream that arrives in arbitrary pieces."""

from __future__ import annotations

MASK = b"***"


class Masker:
    """Replaces every occurrence of any secret, including one split across chunks.

    It holds back the end of what it has seen that could be the start of a secret (at most
    `longest - 1` bytes, and only bytes that begin one) until more data or `flush()` decides
    them: an interactive program's prompt is not held back for want of more output.
    """

    def __init__(self, secrets: list[str]) -> None:
        values = {s.encode() for s in secrets if s}
        # Longest first, so a secret that contains another is masked whole.
        self._secrets = sorted(values, key=len, reverse=True)
        self._keep = max((len(s) for s in self._secrets), default=1) - 1
        self._pending = b""

    @property
    def active(self) -> bool:
        return bool(self._secrets)

    def _mask(self, data: bytes) -> bytes:
        for secret in self._secrets:
            data = data.replace(secret, MASK)
        return data

    def feed(self, data: bytes) -> bytes:
        if not self._secrets:
            return data
        buf = self._mask(self._pending + data)
        cut = len(buf) - self._start_of_secret(buf)
        out, self._pending = buf[:cut], buf[cut:]
        return out

    def _start_of_secret(self, data: bytes) -> int:
        """The length of the longest end of `data` that a secret starts with (0: none)."""
        for size in range(min(len(data), self._keep), 0, -1):
            tail = data[-size:]
            if any(secret.startswith(tail) for secret in self._secrets):
                return size
        return 0

    def flush(self, *, cut: bool = False) -> bytes:
        """The rest. With `cut` (the output was cut short), a trailing piece that could be the
        start of a secret is masked too: the missing end must not make it readable."""
        out, self._pending = self._mask(self._pending), b""
        size = self._start_of_secret(out) if cut else 0
        return out[:-size] + MASK if size else out


def mask_text(text: str, secrets: list[str]) -> str:
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK.decode())
    return text
