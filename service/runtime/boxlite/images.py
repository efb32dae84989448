"""A box's image: a local OCI layout by name, else a registry reference BoxLite pulls.

A registry reference is pulled only from the registries the operator allows
(`AIRLOCK_IMAGE_REGISTRIES`): any other is ImageNotAllowed before BoxLite is asked. Bare words
are local names and never become Docker Hub pulls.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

from .. import images
from ..errors import ImageNotAllowed, ImageNotFound
from .core import Core, ImageSource
from .errors import ImagePullFailed
from .native import bounded, describe

PULL_TIMEOUT_S = 600.0
PULL_REUSE_S = 60.0  # a pull by check_image serves the create that follows

# A registry reference ([registry[:port]/]path[:tag][@digest]), after the distribution
# reference grammar. Bare words are left to the local image store (see `registry_reference`).
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    r"(?:(?P<registry>[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]{1,5})?)/)?"
    rf"(?P<path>{_PATH_PART}(?:/{_PATH_PART})*)"
    r"(?::(?P<tag>\w[\w.-]{0,127}))?"
    r"(?:@(?P<digest>[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}))?"
)


def registry_reference(name: str) -> bool:
    """Whether `name` is a plausible registry reference to pull.

    It must follow the reference grammar and name a tag, digest or repository path
    (`python:3.12-slim`, `ghcr.io/org/tool`, `alpine@sha256:...`): a bare word such as
    `default` is a local image name, and one that is missing is ImageNotFound rather than a
    pull from Docker Hub.
    """
    if len(name) > 255 or not _REFERENCE.fullmatch(name):
        return False
    return any(mark in name for mark in ":/@")


def normalized_reference(name: str) -> str:
    """`registry/repository` of a reference, as Docker reads it: the first part is a registry
    when it has a dot or a port or is `localhost`, else Docker Hub (`library/` for one part)."""
    repository = name.split("@", 1)[0]
    head, _, last = repository.rpartition("/")
    repository = f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]
    first, _, rest = repository.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return repository
    return f"docker.io/{repository if rest else 'library/' + repository}"


def pull_allowed(name: str, registries: tuple[str, ...]) -> bool:
    """Whether `name` is under one of `registries` (registries or repository prefixes)."""
    if "*" in registries:
        return True
    full = normalized_reference(name)
    return any(full == entry or full.startswith(entry + "/") for entry in registries)


class Images(Core):
    image_registries: tuple[str, ...]
    pull_timeout_s: float
    _pulled: dict[str, tuple[float, ImageSource]]

    async def check_image(self, image: str) -> None:
        """Raise ImageNotFound (or InvalidImage) unless `create` could use `image`.

        A registry reference is pulled here (bounded), so a failed pull is ImagePullFailed
        before the caller records anything; `create` right after reuses that pull.
        """
        await self.resolve_image(image)

    async def resolve_image(self, image: str) -> ImageSource:
        """A local layout by that name, else a registry reference BoxLite pulls (bounded)."""
        try:
            info = await asyncio.to_thread(images.get_image, self.state_dir, image)
            return ImageSource(image, info.digest, rootfs_path=Path(info.path))
        except ImageNotFound:
            if not registry_reference(image):
                raise
        if not pull_allowed(image, self.image_registries):
            raise ImageNotAllowed(image)
        recent = self._pulled.get(image)
        if recent is not None and time.monotonic() - recent[0] < PULL_REUSE_S:
            return recent[1]
        try:
            pulled = await bounded(self._runtime.images.pull(image), self.pull_timeout_s)
        except TimeoutError:
            why = f"the pull did not finish within {self.pull_timeout_s:g} s"
            raise ImagePullFailed(image, why) from None
        except Exception as exc:  # BoxLite reports a failed pull as StorageError/ImageError
            raise ImagePullFailed(image, describe(exc)) from exc
        digest = str(getattr(pulled, "config_digest", "") or "")
        source = ImageSource(image, digest, reference=image)
        self._pulled[image] = (time.monotonic(), source)
        return source
