"""What the gateway logs about its replicas' health."""

from __future__ import annotations


async def test_a_replica_still_starting_is_not_reported_down_but_one_that_dies_is() -> None:
    """`lore-up` printed `replica_down` for every service on each healthy start."""
    import structlog
    from aiohttp import web

    from lore_common.testing.processes import free_port
    from lore_gateway.proxy import Proxy

    port = free_port()
    proxy = Proxy({"docdb": [f"http://127.0.0.1:{port}"]}, connect_timeout=1)
    upstream = proxy.downstreams["docdb"]
    replica = upstream.replicas[0]
    try:
        with structlog.testing.capture_logs() as starting:
            assert (await proxy.probe(replica, upstream, 1))["status"] == "down"  # nothing listens yet
        assert not [e for e in starting if e["event"] == "replica_down"]

        async def ok(_: web.Request) -> web.Response:
            return web.json_response({"status": "ok"})

        health = web.Application()
        health.router.add_get("/health", ok)
        runner = web.AppRunner(health)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        assert (await proxy.probe(replica, upstream, 1))["status"] == "up"
        await runner.cleanup()
        with structlog.testing.capture_logs() as dying:
            assert (await proxy.probe(replica, upstream, 1))["status"] == "down"
        assert [e["event"] for e in dying] == ["replica_down"]
    finally:
        await proxy.close()
