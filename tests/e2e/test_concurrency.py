"""Several clients at once on one sandbox and one tenant: outputs stay apart, quotas hold."""

from __future__ import annotations

import asyncio

from tests.e2e.conftest import Airlock, Tenant


async def test_concurrent_execs_keep_their_own_output(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    program = (
        "import sys, time\n"
        "for i in range(20):\n"
        "    print(sys.argv[1], i, flush=True)\n"
        "    time.sleep(0.02)\n"
    )
    async with airlock.http(tenant.key) as http:
        answers = await asyncio.gather(
            *(
                http.post(
                    f"/v1/sandboxes/{sandbox.id}/execs",
                    json={"cmd": ["python3", "-c", program, f"w{n}"]},
                )
                for n in range(5)
            )
        )
    for n, r in enumerate(answers):
        assert r.status_code == 200, r.text
        assert r.json()["stdout"] == "".join(f"w{n} {i}\n" for i in range(20))
    assert len({r.json()["id"] for r in answers}) == 5
