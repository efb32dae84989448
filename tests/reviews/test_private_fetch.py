"""Fetching a private repository on the host: the secret goes to git through the fetch's
environment only, a wrong one fails the fetch, and nothing of it is left behind on disk or in
error text. Real git against a real HTTPS git host with Basic auth; no database, no sandbox."""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import pytest

from service.reviews.fetch import FetchFailed, HttpAuth, fetch
from service.reviews.source import parse, pin_addresses
from tests.reviews.conftest import BILLING, PRIVATE_PASSWORD, TESTS, make_repo
from tests.reviews.git_https import GitHost

pytestmark = pytest.mark.sqlite


def on_disk(root: Path, needles: list[bytes]) -> list[str]:
    """Files under `root` holding any of `needles`."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and any(n in path.read_bytes() for n in needles):
            found.append(str(path))
    return found


async def private_source(host: GitHost, name: str):  # type: ignore[no-untyped-def]
    return await pin_addresses(parse(host.url(name), allow_local=True), allow_private=True)


@pytest.fixture
def private_repo(git_host: GitHost, tmp_path: Path) -> str:
    name = f"billing-{secrets.token_hex(4)}"
    repo = make_repo(tmp_path / "src", {"billing.py": BILLING}, {"test_billing.py": TESTS})
    git_host.add(name, repo)
    return name


async def test_the_right_secret_fetches_and_leaves_nothing_behind(
    git_host: GitHost, private_repo: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    auth = HttpAuth("x-access-token", PRIVATE_PASSWORD)
    source = await private_source(git_host, private_repo)
    fetched = await fetch(source, "main", "pr-42", work, source.location, auth)
    assert fetched.bundle.is_file() and len(fetched.head_commit) == 40
    assert git_host.authorizations[-1] == git_host.expected()
    # Not in the bundle, nor anywhere else the fetch left: its bare repository was in a
    # workspace of its own, removed at the end.
    needles = [PRIVATE_PASSWORD.encode(), auth.token.encode()]
    assert [p.name for p in work.iterdir()] == ["review.bundle"]
    assert on_disk(work, needles) == []


async def test_no_secret_and_a_wrong_secret_fail_the_fetch(
    git_host: GitHost, private_repo: str, tmp_path: Path
) -> None:
    source = await private_source(git_host, private_repo)
    wrong = "ghp-wrong-" + secrets.token_urlsafe(16)
    for auth in (None, HttpAuth("x-access-token", wrong)):
        work = tmp_path / secrets.token_hex(4)
        work.mkdir()
        with pytest.raises(FetchFailed) as failed:
            await fetch(source, "main", "pr-42", work, source.location, auth)
        text = str(failed.value)
        # The host refused and asked for credentials git cannot give.
        assert "could not read Username" in text, text
        if auth is not None:
            assert "with the credentials of user 'x-access-token' failed" in text
        assert wrong not in text
    assert git_host.log[-1].endswith(" 401")


async def test_a_host_that_echoes_the_secret_gets_it_masked(
    git_host: GitHost, tmp_path: Path
) -> None:
    source = await private_source(git_host, "echo")
    value = "ghp-echoed-" + secrets.token_urlsafe(16)
    with pytest.raises(FetchFailed) as failed:
        await fetch(source, "main", "pr-42", tmp_path, source.location, HttpAuth("u", value))
    text = str(failed.value)
    # git printed the host's message, and the value in it is masked.
    assert "access denied for password [secret]" in text, text
    assert value not in text


def test_the_credentials_never_show_in_their_repr() -> None:
    auth = HttpAuth("x-access-token", PRIVATE_PASSWORD)
    assert PRIVATE_PASSWORD not in repr(auth)
    assert base64.b64decode(auth.token) == f"x-access-token:{PRIVATE_PASSWORD}".encode()
