"""Masking secret values out of a byte stream that arrives in arbitrary pieces."""

from __future__ import annotations

MASK = b"***"


class Masker:
    """Replaces every occurrence of any secret, including one split across chunks.

    It holds back the last `longest - 1` bytes of what it has seen (a possible start of a
    secret) until more data or `flush()` decides them.
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
        if self._keep == 0:
            self._pending = b""
            return buf
        cut = max(0, len(buf) - self._keep)
        out, self._pending = buf[:cut], buf[cut:]
        return out

    def flush(self, *, cut: bool = False) -> bytes:
        """The rest. With `cut` (the output was cut short), a trailing piece that could be the
        start of a secret is masked too: the missing end must not make it readable."""
        out, self._pending = self._mask(self._pending), b""
        if cut:
            for size in range(min(len(out), self._keep), 0, -1):
                tail = out[-size:]
                if any(secret.startswith(tail) for secret in self._secrets):
                    return out[:-size] + MASK
        return out


def mask_text(text: str, secrets: list[str]) -> str:
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK.decode())
    return text
