"""The asyncio API: calls run off the event loop, which keeps running meanwhile."""

from __future__ import annotations

import asyncio

from mnemo import AsyncClient, AsyncMemory


def test_async_memory_does_not_block_the_loop(tmp_path):
    async def main():
        async with AsyncMemory(tmp_path / "d", namespace="me") as m:
            for i in range(30):
                await m.remember(f"[SEM] Part P-{i} | bin | B{i}")
            ticks = 0
            stop = asyncio.Event()

            async def ticker():
                nonlocal ticks
                while not stop.is_set():
                    ticks += 1
                    await asyncio.sleep(0)

            t = asyncio.create_task(ticker())
            rs = await asyncio.gather(*(m.recall(f"which bin holds Part P-{i}") for i in range(20)))
            stop.set()
            await t
            assert all(r.memories for r in rs)
            assert ticks > 20, ticks  # the loop ran while the engine worked
            assert len(await m.list()) == 30

    asyncio.run(main())


def test_async_client(server):
    async def main():
        c = AsyncClient(server.url, server.token, namespace="me")
        await c.remember("[SEM] Northwind Labs | owner | Carla")
        r = await c.recall("who owns Northwind Labs", about="Northwind Labs | owner")
        assert r.decision == "act"

    asyncio.run(main())
