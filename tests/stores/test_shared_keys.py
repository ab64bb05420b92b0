"""The shared key ring's source (adapters/stores/keys.py) on an injected clock: a key new
to the worker opens at once and seals only after two refresh intervals; the keys of the
first read seal at once; keys the store dropped stop opening."""

from __future__ import annotations

import asyncio

import pytest
from mcp_sansio.adapters.stores.keys import StoreKeys, rotate_key, store_key_ring

from mcp_sansio import KeyRing
from mcp_sansio.stores import MemoryStores

K1, K2, K3 = b"1" * 32, b"2" * 32, b"3" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_new_key_opens_at_once_and_seals_after_two_intervals() -> None:
    async def main() -> None:
        stores, clock = MemoryStores(max_keys=2), Clock()
        await stores.keys.add_key(K1)
        source = StoreKeys(stores.keys, await stores.keys.get_keys(), refresh_interval=5.0,
                           clock=clock)
        ring = KeyRing(source=source)
        assert ring.keys() == (K1,)
        await stores.keys.add_key(K2)
        clock.now += 1
        await source.refresh()
        assert ring.keys() == (K1, K2)  # opens with K2, still seals with K1
        clock.now += 9.5
        await source.refresh()
        assert ring.sealing_key()[1] == K1
        clock.now += 0.5
        await source.refresh()
        assert ring.keys() == (K2, K1)  # ten seconds held: it seals
        await stores.keys.add_key(K3)  # the bound (2) drops K1: it stops opening
        await source.refresh()
        assert ring.keys() == (K2, K3)
    asyncio.run(main())


def test_an_empty_answer_keeps_the_keys_in_hand() -> None:
    async def main() -> None:
        stores = MemoryStores()
        source = StoreKeys(stores.keys, [K1], clock=Clock())
        await source.refresh()  # the store was emptied by hand
        assert tuple(source.keys()) == (K1,)
    asyncio.run(main())


def test_store_key_ring_adds_one_key_to_an_empty_store_and_rotate_tells_the_bus() -> None:
    async def main() -> None:
        stores = MemoryStores()
        told: list[str] = []
        await stores.bus.subscribe("keys", lambda topic, message: told.append(topic))
        ring, _ = await store_key_ring(stores)
        (key,) = await stores.keys.get_keys()
        assert ring.keys() == (key,)
        new = await rotate_key(stores)
        assert told == ["keys"] and await stores.keys.get_keys() == [new, key]
    asyncio.run(main())


def test_refresh_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        StoreKeys(MemoryStores().keys, [K1], refresh_interval=0)
