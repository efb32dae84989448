"""File transfer through a sandbox's own processes (`sh`, `cat`, `find`).

The host never resolves a sandbox path: every open happens inside the sandbox, as the
sandbox's user, so a symlink planted in the sandbox resolves within the sandbox. Exit codes
of the small scripts below tell the runtime which typed error to raise.
"""

from __future__ import annotations

from .errors import FileTooLarge, PathNotAllowed, PathNotFound, SandboxRuntimeError
from .types import FileEntry

NOT_FOUND, IS_DIR, NOT_DIR, DENIED, WRITE_FAILED, TOO_LARGE = 44, 45, 46, 47, 48, 49

# $1: path, $2: octal mode, $3: temporary name. Writes to a temporary file beside the target,
# then renames, so a failed upload never leaves a partial file in its place.
WRITE_SCRIPT = r"""
p="$1"; m="$2"
[ -d "$p" ] && exit 45
d="${p%/*}"; [ -n "$d" ] || d=/
mkdir -p -- "$d" 2>/dev/null || exit 47
t="$d/$3"
(umask 077; : > "$t") 2>/dev/null || exit 47
if ! cat > "$t"; then rm -f -- "$t"; exit 48; fi
if ! chmod "$m" -- "$t" || ! mv -f -- "$t" "$p"; then rm -f -- "$t"; exit 47; fi
"""

# $1: path, $2: a limit in bytes, or empty for none. With a limit, a regular file (a link's
# target, since -e, -f and stat -L follow links) longer than it is refused by its own size
# before anything is read; whatever it is, at most one byte past the limit is read, so the host
# can tell "longer than the limit" even for a device, a pipe or a file that grows meanwhile.
READ_SCRIPT = r"""
p="$1"; n="$2"
[ -e "$p" ] || exit 44
[ -d "$p" ] && exit 45
[ -r "$p" ] || exit 47
[ -n "$n" ] || exec cat -- "$p"
if [ -f "$p" ]; then
  s=$(stat -L -c %s -- "$p") || exit 47
  [ "$s" -le "$n" ] || { echo "$s" >&2; exit 49; }
fi
exec head -c "$((n + 1))" -- "$p"
"""

# The same, for runtimes whose output streams carry text lines only.
READ_BASE64_SCRIPT = READ_SCRIPT.replace('exec cat -- "$p"', 'exec base64 -w 76 -- "$p"').replace(
    'exec head -c "$((n + 1))" -- "$p"', 'head -c "$((n + 1))" -- "$p" | base64 -w 76'
)

LIST_SCRIPT = r"""
p="$1"
[ -e "$p" ] || exit 44
[ -d "$p" ] || exit 46
[ -r "$p" ] && [ -x "$p" ] || exit 47
exec find -H "$p" -mindepth 1 -maxdepth 1 -printf '%y\t%s\t%m\t%T@\t%f\0'
"""


def upload_temp_name(token: str) -> str:
    return f".airlock-upload.{token}"


def upload_temp_path(target: str, token: str) -> str:
    parent = target.rsplit("/", 1)[0] or "/"
    return f"{parent.rstrip('/')}/{upload_temp_name(token)}"


_KINDS = {"f": "file", "d": "dir", "l": "symlink"}


def raise_for_read(code: int | None, path: str, stderr: bytes, limit: int | None) -> None:
    """`raise_for`, and FileTooLarge with the file's own size for READ_SCRIPT's refusal."""
    if code == TOO_LARGE and limit is not None:
        said = stderr.decode(errors="replace").strip().splitlines()
        size = int(said[-1]) if said and said[-1].isdigit() else None
        raise FileTooLarge(path, limit, size)
    raise_for(code, path, stderr)


def raise_for(code: int | None, path: str, stderr: bytes) -> None:
    """Turn a script's exit code into the typed error (0 returns)."""
    if code == 0:
        return
    detail = stderr.decode(errors="replace").strip()[-300:]
    if code == NOT_FOUND:
        raise PathNotFound(path)
    if code == IS_DIR:
        raise PathNotAllowed(path, "is a directory")
    if code == NOT_DIR:
        raise PathNotAllowed(path, "not a directory")
    if code == DENIED:
        raise PathNotAllowed(path, "permission denied")
    if code == WRITE_FAILED:
        raise PathNotAllowed(path, f"write failed: {detail or 'disk full?'}")
    raise SandboxRuntimeError(f"file operation on {path!r} failed (exit {code}): {detail}")


def parse_listing(raw: bytes) -> list[FileEntry]:
    entries = []
    for record in raw.split(b"\0"):
        if not record:
            continue
        kind, size, mode, mtime, name = record.decode(errors="surrogateescape").split("\t", 4)
        entries.append(
            FileEntry(
                name=name,
                kind=_KINDS.get(kind, "other"),  # type: ignore[arg-type]
                size=int(size),
                mode=int(mode, 8),
                mtime=float(mtime),
            )
        )
    return sorted(entries, key=lambda e: e.name)
