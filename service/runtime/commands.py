"""`airlock image build|list|import|rm` and `airlock doctor`, registered on the main CLI."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import doctor, images
from .config import RuntimeConfig
from .errors import SandboxRuntimeError

if TYPE_CHECKING:
    from service.settings import Settings

GetSettings = Callable[[], "Settings"]
DatabaseCheck = Callable[[], Awaitable[str]]


def add_commands(
    subparsers: Any, get_settings: GetSettings, check_database: DatabaseCheck | None = None
) -> None:
    """Register `image` and `doctor`. Handlers are called as `func(args, settings)`.

    `check_database` (optional) is awaited by doctor and returns a short description; without
    it doctor connects to the configured database with SQLAlchemy and runs SELECT 1.
    """

    def settings_of(given: Settings | None) -> Settings:
        return given if given is not None else get_settings()

    image = subparsers.add_parser("image", help="build, list and import sandbox images")
    image_sub = image.add_subparsers(dest="image_command", required=True)

    build = image_sub.add_parser("build", help="build the default image from Debian packages")
    build.add_argument("--force", action="store_true", help="rebuild even if up to date")

    def do_build(args: argparse.Namespace, settings: Settings | None = None) -> int:
        state_dir = Path(settings_of(settings).state_dir)
        try:
            info = images.build_default_image(state_dir, force=args.force)
        except SandboxRuntimeError as exc:
            print(f"image build failed: {exc}", file=sys.stderr)
            return 1
        print(f"{info.name}\t{info.digest}\t{info.size_bytes / 1e6:.0f} MB")
        return 0

    build.set_defaults(func=do_build)

    listing = image_sub.add_parser("list", help="list images in the state dir")

    def do_list(args: argparse.Namespace, settings: Settings | None = None) -> int:
        for info in images.list_images(Path(settings_of(settings).state_dir)):
            print(f"{info.name}\t{info.digest}\t{info.size_bytes / 1e6:.0f} MB")
        return 0

    listing.set_defaults(func=do_list)

    imp = image_sub.add_parser("import", help="import an OCI image layout directory")
    imp.add_argument("path", type=Path)
    imp.add_argument("--name", help="image name (default: the layout's ref name)")

    def do_import(args: argparse.Namespace, settings: Settings | None = None) -> int:
        try:
            info = images.import_image(Path(settings_of(settings).state_dir), args.path, args.name)
        except SandboxRuntimeError as exc:
            print(f"import failed: {exc}", file=sys.stderr)
            return 1
        print(f"{info.name}\t{info.digest}")
        return 0

    imp.set_defaults(func=do_import)

    remove = image_sub.add_parser("rm", help="remove an image from the state dir")
    remove.add_argument("name")

    def do_remove(args: argparse.Namespace, settings: Settings | None = None) -> int:
        try:
            images.remove_image(Path(settings_of(settings).state_dir), args.name)
        except SandboxRuntimeError as exc:
            print(f"remove failed: {exc}", file=sys.stderr)
            return 1
        return 0

    remove.set_defaults(func=do_remove)

    doc = subparsers.add_parser("doctor", help="check what sandbox runtimes can work here")
    doc.add_argument(
        "--cached-probe", action="store_true", help="use the cached BoxLite probe result"
    )

    def do_doctor(args: argparse.Namespace, settings: Settings | None = None) -> int:
        given = settings_of(settings)

        async def default_check() -> str:
            return await doctor.default_database_check(given.effective_database_url)

        report = asyncio.run(
            doctor.diagnose(
                RuntimeConfig.from_settings(given),
                check_database=check_database or default_check,
                refresh_probe=not args.cached_probe,
            )
        )
        print(doctor.render(report))
        return 0 if report.ok and report.chosen else 1

    doc.set_defaults(func=do_doctor)
