"""The Debian mirror the host itself uses, read from its apt sources at run time; and the
`bookworm-backports` suite on that mirror, which carries a runsc with systrap
(`python -m service.runtime.apt backports` prints the sources file to add, if any; used by
`scripts/runtime-setup.sh`)."""

from __future__ import annotations

import argparse
import sys
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


def _deb822_stanzas(text: str) -> list[dict[str, str]]:
    """The enabled `deb` stanzas of a deb822 sources file, keys lower-cased."""
    found = []
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for raw in stanza.splitlines():
            if raw.startswith("#") or ":" not in raw or raw[:1].isspace():
                continue
            key, _, value = raw.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
            found.append(fields)
    return found


def _deb822_sources(text: str) -> list[tuple[str, list[str]]]:
    return [
        (uri, fields.get("suites", "").split())
        for fields in _deb822_stanzas(text)
        for uri in fields.get("uris", "").split()
    ]


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


DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def backports_sources(suite: str = "bookworm", apt_dir: Path = _APT) -> str | None:
    """The deb822 sources file that adds `<suite>-backports` from the mirror (and with the
    keyring) the host's `suite` source uses; None when the host already has that suite."""
    wanted = f"{suite}-backports"
    if any(wanted in suites for _, suites in host_sources(apt_dir)):
        return None
    mirror = host_mirror(suite, apt_dir)
    keyring = DEBIAN_KEYRING
    for path in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        for fields in _deb822_stanzas(path.read_text(errors="replace")):
            uris = [u.rstrip("/") for u in fields.get("uris", "").split()]
            if mirror in uris and suite in fields.get("suites", "").split():
                keyring = fields.get("signed-by") or keyring
    return f"Types: deb\nURIs: {mirror}\nSuites: {wanted}\nComponents: main\nSigned-By: {keyring}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.runtime.apt")
    parser.add_argument("what", choices=["backports"])
    parser.add_argument("--suite", default="bookworm")
    parser.add_argument("--apt-dir", type=Path, default=_APT)
    args = parser.parse_args(argv)
    try:
        text = backports_sources(args.suite, args.apt_dir)
    except ImageBuildFailed as exc:
        print(exc, file=sys.stderr)
        return 1
    sys.stdout.write(text or "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
