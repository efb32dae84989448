"""Reading a sandbox's TCP tables for the connections a checkpoint cuts (the pause's report;
tests/network/test_api.py shows it on a real sandbox through HTTP)."""

from __future__ import annotations

from service.runtime.gvisor.connections import outside

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid"
TAIL = "00000000:00000000 00:00000000 00000000  1000 0 4242 1 0000000000000000 20 4 30 10 -1"


MAPPED = "0000000000000000FFFF0000"  # ::ffff:a.b.c.d, each word in host order
DOC = "B80D01200000000000000000"  # 2001:db8::
ZERO = "000000000000000000000000"


def line(n: int, local: str, remote: str, state: str) -> str:
    return f"   {n}: {local} {remote} {state} {TAIL}"


def test_open_connections_to_outside_are_named_and_the_rest_are_not() -> None:
    tables = "\n".join([
        HEADER,
        line(0, "00000000:1F90", "00000000:0000", "0A"),  # listening on 8080
        line(1, "0201E70A:B5C6", "0500FA0A:1F91", "01"),  # 10.231.1.2:46534 -> 10.250.0.5:8081
        line(2, "0100007F:2396", "0100007F:D431", "01"),  # loopback: kept by a checkpoint
        line(3, "0201E70A:B5C8", "0500FA0A:1F90", "06"),  # TIME_WAIT: nothing to cut
        line(4, "0201E70A:B5CA", "0500FA0A:01BB", "08"),  # CLOSE_WAIT: still open here
        HEADER,
        # ::ffff:10.231.1.2 -> ::ffff:10.250.0.5 (a v6 socket speaking v4), and 2001:db8::1
        line(0, f"{MAPPED}0201E70A:C000", f"{MAPPED}0500FA0A:0050", "01"),
        line(1, f"{DOC}02000000:C001", f"{DOC}01000000:0050", "01"),
        line(2, f"{ZERO}01000000:C002", f"{ZERO}01000000:0050", "01"),  # ::1 to ::1
    ])  # fmt: skip
    assert outside(tables) == [
        "10.231.1.2:46534 -> 10.250.0.5:8081",
        "10.231.1.2:46538 -> 10.250.0.5:443",
        "10.231.1.2:49152 -> 10.250.0.5:80",
        "[2001:db8::2]:49153 -> [2001:db8::1]:80",
    ]


def test_nothing_readable_is_nothing_cut() -> None:
    assert outside("") == []
    assert outside("garbage\n   0: zz:zz yy:yy 01") == []
