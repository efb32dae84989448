r"""The forms of host names, addresses and ports that request fields take, as regular
expressions: the document states them (`pattern`) and msgspec enforces them on decode, so a
value of the right form is never refused for its form (its destination may still be).

Each starts with `(?![^\n]*\n)`: Python's `$` also matches before a final newline (and
`[^\n]` rather than `.`, which JavaScript-style regexes stop at `\r` too). No `\s`: Python's
takes in more characters than JSON Schema's."""

from __future__ import annotations

# A DNS label: letters, digits and '-', not starting or ending with '-'.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_NAME = rf"{_LABEL}(?:\.{_LABEL})*"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{IPV4})"
# RFC 3986's IPv6address, alternation by alternation.
IPV6 = (
    "(?:"
    + "|".join(
        [
            rf"(?:{_H16}:){{6}}{_LS32}",
            rf"::(?:{_H16}:){{5}}{_LS32}",
            rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
            rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
            rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
            rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
        ]
    )
    + ")"
)

# A sandbox allowlist entry: a host name (at most 253 characters, not all digits and dots),
# an IPv4 address or CIDR, each with an optional port; IPv4 only (service.runtime.egress).
ALLOW_ENTRY = (
    rf"^(?![^\n]*\n)(?:(?=[A-Za-z0-9.-]{{1,253}}(?::|$))(?![0-9.]*(?::|$)){_NAME}"
    rf"|{IPV4}(?:/(?:3[0-2]|[12]?[0-9]))?)(?::{_PORT})?$"
)

# Where a secret may be sent: a host name (at most 253 characters, an optional final dot), an
# IPv4 address or a bracketed IPv6 address, with an optional port (service.secrets.hosts).
SECRET_HOST = (
    rf"^(?![^\n]*\n)(?:(?=[A-Za-z0-9.-]{{1,254}}(?::|$)){_NAME}\.?|{IPV4}|\[{IPV6}\])"
    rf"(?::(?:0|{_PORT}))?$"
)

# A review's repository: an http(s) git URL (no user, query or fragment), an uploaded
# bundle's id, or a path or file:// URL on the server (where the operator enabled those).
REPO = (
    rf"^(?![^\n]*\n)(?:https?://(?:{_NAME}|{IPV4}|\[{IPV6}\])(?::{_PORT})?"
    r"(?:/[^\x00-\x20\x7f?#]*)?|bdl_[0-9a-f]{32}|/[^\x00\n]*|file:///[^\x00\n]*)$"
)

# A private range an operator grants a tenant (`network_private_cidrs`): an IPv4 network inside
# 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 or 198.18.0.0/15 (its prefix at
# least the block's), never exactly Alibaba's metadata address (service.runtime.egress).
_BLOCKS = (
    (r"10\.{o}\.{o}\.{o}", r"(?:[89]|[12][0-9]|3[0-2])"),
    (r"172\.(?:1[6-9]|2[0-9]|3[01])\.{o}\.{o}", r"(?:1[2-9]|2[0-9]|3[0-2])"),
    (r"192\.168\.{o}\.{o}", r"(?:1[6-9]|2[0-9]|3[0-2])"),
    (r"100\.(?:6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\.{o}\.{o}", r"(?:1[0-9]|2[0-9]|3[0-2])"),
    (r"198\.1[89]\.{o}\.{o}", r"(?:1[5-9]|2[0-9]|3[0-2])"),
)
GRANT = (
    r"^(?![^\n]*\n)(?!100\.100\.100\.200/32$)(?:"
    + "|".join(f"{net.format(o=_OCTET)}/{prefix}" for net, prefix in _BLOCKS)
    + ")$"
)
