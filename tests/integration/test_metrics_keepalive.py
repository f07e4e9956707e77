"""A server that closes an idle keep-alive connection is not a metrics outage.

A real HTTP server on 127.0.0.1 answers each scrape with keep-alive and closes the
connection as the next request arrives, as uvicorn does when its keep-alive timeout passes
at that moment: the console's shared client reads "Server disconnected without sending a
response". The poller reads it again on a fresh connection (seen on real vLLM under load).
"""

from __future__ import annotations

import asyncio

import httpx

from tui.serving.metrics import MetricsPoller

BODY = b"vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n"


async def test_a_closed_keepalive_connection_is_read_again_not_an_outage() -> None:
    accepted = 0

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        await reader.readuntil(b"\r\n\r\n")
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(BODY)}\r\n"
        writer.write(head.encode() + b"Connection: keep-alive\r\n\r\n" + BODY)
        await writer.drain()
        # The keep-alive timeout passes as the next request arrives: closed, no answer.
        await reader.read(1)
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    poller = MetricsPoller(f"http://127.0.0.1:{port}")
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(3):
                await poller.poll(client)
    finally:
        server.close()
        await server.wait_closed()
    assert accepted >= 3
