"""The client's README walked as a newcomer walks it, against a real server on gVisor: an empty
virtualenv, the client installed from its wheel as the README says, then every ```sh block (bash,
the venv's `sbx` first on PATH) and every ```python block (the venv's python) in order, in one
shell's state: a variable a block sets is there for the blocks after it.

Each block is known by a line only it has (`STEPS`); a block the table does not know, or a step
whose block is gone, fails the test. Where a block cannot run here as written, its step says
what is done instead and why. The server listens where the README's would
(`AIRLOCK_URL` is set from the start, and the README's URL in a block is replaced by its own)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO, Airlock
from tests.wheels import Venv, Wheels, checked, new_venv

README = REPO / "clients/python/README.md"
# Where the README's server listens (`./scripts/run.sh`); the walk's has a free port.
README_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True)
class Step:
    marker: str  # a line only this block has
    prints: tuple[str, ...] = ()  # its stdout, line by line, where the README says what it prints
    instead: str = ""  # what is done in its place ("" for the block as written)
    why: str = ""  # why it cannot run here as written
    prelude: str = ""  # shell lines run before it


# The blocks that do not run as written have `instead` and `why`.
INSTALL = Step(
    "make wheels",
    instead="only its line installing the client's wheel from dist/, where the session's wheels "
    "fixture put it (`make wheels` builds the same)",
    why="its lines are alternatives, each run by tests/packaging/test_client_readme_install.py",
)
AGENTS = Step(
    "from airlock_agents import AirlockSandboxClient, AirlockSandboxClientOptions",
    instead="compiled, not run",
    why="it needs OPENAI_API_KEY and a model; tests/e2e/test_agents_sdk.py drives the client",
)
ROUND_TRIP = Step(
    "from airlock_client import AuthenticatedClient", ("0 done", "b'{\"answer\": 42}'")
)
STEPS = (
    INSTALL,
    Step(
        'echo "$KEY" | sbx login',
        (
            "logged in to {url} as a tenant's key; stored in {config}",
            "ID STATE SIZE TEMPLATE EXPIRES",  # `sbx ls`: the new tenant has no sandbox yet
        ),
    ),
    Step('export AIRLOCK_URL=http://127.0.0.1:8080 AIRLOCK_API_KEY="$KEY"'),
    ROUND_TRIP,
    Step('with Sandbox.create(ttl=600, size="small") as sandbox:', ("3 42", "1", "2", "3")),
    Step("from airlock_sdk import AsyncSandbox", ("3 42", "1", "2", "3")),
    Step(
        'sbx exec "$id" --timeout 60 -- python3 -c "$GENERATED_CODE"',
        ("42",),
        instead="run after GENERATED_CODE='print(6 * 7)'",
        why="$GENERATED_CODE is the code the user brings",
        prelude="GENERATED_CODE='print(6 * 7)'",
    ),
    Step(
        "run = sandbox.run_code(\"print('area:')\\nround(math.pi * radius ** 2, 3)\")",
        ("area:", " 12.566", "False KeyError"),
    ),
    AGENTS,
)


@dataclass(frozen=True)
class Block:
    language: str
    code: str


def readme_blocks() -> list[Block]:
    fences = re.findall(r"^```(\w*)\n(.*?)^```$", README.read_text(), flags=re.DOTALL | re.M)
    return [Block(language, code) for language, code in fences]


def step_of(block: Block) -> Step:
    assert block.language in ("sh", "python"), f"a ```{block.language} block:\n{block.code}"
    found = [s for s in STEPS if s.marker in block.code]
    assert len(found) == 1, f"{len(found)} steps know this block; add one to STEPS:\n{block.code}"
    return found[0]


def test_every_block_of_the_readme_has_its_step() -> None:
    steps = [step_of(block) for block in readme_blocks()]
    assert steps == list(STEPS), "STEPS has one step a block, in the README's order"
    assert all(bool(s.instead) == bool(s.why) for s in STEPS)
    (round_trip,) = [b.code for b in readme_blocks() if step_of(b) is ROUND_TRIP]
    assert len(round_trip.strip().splitlines()) <= 25, "the first example should stay short"


@dataclass
class Walk:
    venv: Venv
    clone: Path  # the working directory: dist/ and .airlock/operator_key, as in the clone
    env: dict[str, str]  # the shell's exported state, carried from block to block

    def sh(self, code: str) -> str:
        state = self.clone / ".walk-env"
        script = f"set -euo pipefail\nset -a\n{code}\nenv -0 > {state}\n"
        out = self.run(["bash", "-c", script], code)
        entries = state.read_text().split("\0")
        self.env = dict(e.split("=", 1) for e in entries if "=" in e)
        return out

    def python(self, code: str) -> str:
        return self.run([self.venv.bin("python"), "-c", code], code)

    def run(self, argv: list[str], code: str) -> str:
        return checked(argv, cwd=self.clone, env=self.env, timeout=600, what=code).stdout


def walk(walker: Walk, url: str) -> None:
    config = walker.env["XDG_CONFIG_HOME"] + "/airlock/config.json"
    for block in readme_blocks():
        step = step_of(block)
        code = block.code.replace(README_URL, url)
        if step is INSTALL:
            (line,) = [x for x in code.splitlines() if re.match(r"pip install .*airlock_client", x)]
            code = line
        elif step is AGENTS:
            compile(code, "README.md", "exec")
            continue
        elif step.prelude:
            code = f"{step.prelude}\n{code}"
        out = walker.sh(code) if block.language == "sh" else walker.python(code)
        if step.prints:
            expected = [x.replace("{url}", url).replace("{config}", config) for x in step.prints]
            assert out.splitlines() == expected, (code, out)
    assert Path(config).stat().st_mode & 0o777 == 0o600


async def test_the_client_readme_walked_from_an_empty_venv(
    airlock: Airlock, wheels: Wheels, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp("readme-walk")
    clone = home / "clone"
    (clone / "dist").mkdir(parents=True)
    (clone / "dist" / wheels.client.name).symlink_to(wheels.client)
    (clone / ".airlock").mkdir()
    (clone / ".airlock/operator_key").write_text(airlock.operator_key + "\n")
    venv = await asyncio.to_thread(new_venv, home / "venv")
    # The server is where the README's would be; the sbx config is the walk's own.
    env = venv.env(AIRLOCK_URL=airlock.server.url, XDG_CONFIG_HOME=str(home / "config"))
    walker = Walk(venv, clone, env)
    await asyncio.to_thread(walk, walker, airlock.server.url)

    # Each of the five blocks that made a sandbox deleted it.
    async with airlock.http(walker.env["KEY"]) as http:
        listed = (await http.get("/v1/sandboxes")).json()["items"]
    assert len(listed) == 5 and {s["state"] for s in listed} == {"stopped"}, listed
