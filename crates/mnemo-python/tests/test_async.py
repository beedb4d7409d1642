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

            rs = await asyncio.gather(*(m.recall(f"which bin holds Part P-{i}") for i in range(20)))
            assert all(r.memories for r in rs)
            # One long native call (200 recalls inside Rust): the loop ticks all along, which it
            # could not if the call held the GIL or ran on the loop's thread.
            t = asyncio.create_task(ticker())
            await asyncio.sleep(0)
            before = ticks
            await asyncio.to_thread(m._sync._engine._time_recall, "which bin holds Part P-7", 200)
            during = ticks - before
            stop.set()
            await t
            assert during > 100, during
            assert len(await m.list()) == 30

    asyncio.run(main())


def test_async_client(server):
    async def main():
        c = AsyncClient(server.url, server.token, namespace="me")
        await c.remember("[SEM] Northwind Labs | owner | Carla")
        r = await c.recall("who owns Northwind Labs", about="Northwind Labs | owner")
        assert r.decision == "act"

    asyncio.run(main())
