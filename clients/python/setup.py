import pathlib

from setuptools import find_packages, setup

here = pathlib.Path(__file__).parent.resolve()
long_description = (here / "README.md").read_text(encoding="utf-8")

# airlock_client is generated (never edited by hand); airlock_sdk (the Sandbox classes and the
# `sbx` command) is written by hand over it and kept across regenerations by scripts/gen-client.sh.
setup(
    name="airlock-client",
    version="0.1.0",
    description="A client library for accessing Airlock",
    long_description=long_description,
    long_description_content_type="text/markdown",
    packages=find_packages(),
    python_requires=">=3.10, <4",
    install_requires=[
        "httpx >= 0.23.0, < 0.29.0",
        "attrs >= 22.2.0",
        "python-dateutil >= 2.8.0, < 3",
        "httpx-sse == 0.4.3",
        "click >= 8.1, < 9",
        "anyio >= 4, < 5",
    ],
    # `mcp`: `sbx mcp` and the tools the API mounts at /mcp. The OpenAI Agents SDK's
    # AirlockSandboxClient is a distribution of its own: airlock-agents (clients/agents).
    extras_require={
        "mcp": ["mcp == 2.3.0", "mcp-types == 2.3.0"],
    },
    package_data={"airlock_client": ["py.typed"]},
    entry_points={"console_scripts": ["sbx = airlock_sdk.cli:run"]},
)
