"""Print the service's OpenAPI document, built from the code without a running server.

Deterministic (sorted keys, trailing newline), so the committed copy in `clients/openapi.json`
can be compared byte for byte with a fresh one.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

from service.app import create_app
from service.settings import Settings


def openapi_document() -> str:
    with tempfile.TemporaryDirectory(prefix="airlock-openapi-") as state_dir:
        settings = Settings.from_env({}, state_dir=Path(state_dir), operator_key="x" * 40)
        # Building the app generates a throw-away signing key and says so; keep stdout clean.
        with contextlib.redirect_stderr(io.StringIO()):
            app = create_app(settings, check_migrations=False, run_jobs=False)
        schema = app.openapi_schema.to_schema()
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    sys.stdout.write(openapi_document())


if __name__ == "__main__":
    main()
