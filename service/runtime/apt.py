"""The Debian mirror the host itself uses, read from its apt sources at run time."""

from __future__ import annotations

from pathlib import Path

from .errors import ImageBuildFailed

_APT = Path("/etc/apt")


def _one_line_sources(text: str) -> list[tuple[str, list[str]]]:
    found = []
    for raw in text.splitlines():
        parts = raw.split("#", 1)[0].split()
        if len(parts) < 3 or parts[0] != "deb":
            continue
        rest = parts[1:]
        if rest[0].startswith("["):  # options such as [arch=amd64 signed-by=...]
            while rest and not rest[0].endswith("]"):
                rest = rest[1:]
            rest = rest[1:]
        if len(rest) >= 2:
            found.append((rest[0], [rest[1]]))
    return found


def _deb822_sources(text: str) -> list[tuple[str, list[str]]]:
    found = []
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for raw in stanza.splitlines():
            if raw.startswith("#") or ":" not in raw or raw[:1].isspace():
                continue
            key, _, value = raw.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
            continue
        for uri in fields.get("uris", "").split():
            found.append((uri, fields.get("suites", "").split()))
    return found


def host_sources(apt_dir: Path = _APT) -> list[tuple[str, list[str]]]:
    """(uri, suites) of every enabled `deb` source on the host."""
    sources: list[tuple[str, list[str]]] = []
    files = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]
    for path in files:
        if path.is_file():
            sources += _one_line_sources(path.read_text(errors="replace"))
    for path in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        sources += _deb822_sources(path.read_text(errors="replace"))
    return sources


def host_mirror(suite: str = "bookworm", apt_dir: Path = _APT) -> str:
    """The URI of the host's Debian archive that carries `suite`."""
    for uri, suites in host_sources(apt_dir):
        if suite in suites and "security" not in uri:
            return uri.rstrip("/")
    raise ImageBuildFailed(
        f"no apt source for {suite} found in {apt_dir}/sources.list or sources.list.d; "
        f"add the Debian mirror the host uses"
    )
