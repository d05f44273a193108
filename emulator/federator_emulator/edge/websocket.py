"""AMQP over WebSockets, as Azure serves it: ``GET /$servicebus/websocket`` upgraded with the
subprotocol ``AMQPWSB10``; each binary message carries AMQP bytes (frames may span messages)."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import WSMsgType, web

from federator_emulator.edge.bridge import Adopt, pipe_to_broker

logger = logging.getLogger(__name__)

PATH = "/$servicebus/websocket"
SUBPROTOCOL = "AMQPWSB10"
_READ_SIZE = 64 * 1024


def route(adopt: Adopt) -> web.RouteDef:
    async def handle(request: web.Request) -> web.StreamResponse:
        offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        if SUBPROTOCOL not in offered:
            raise web.HTTPBadRequest(text=f"AMQP over WebSockets needs the subprotocol {SUBPROTOCOL}")
        ws = web.WebSocketResponse(protocols=(SUBPROTOCOL,), autoping=True)
        await ws.prepare(request)
        reader, writer = await asyncio.open_connection(sock=pipe_to_broker(adopt))
        to_client = asyncio.create_task(_broker_to_client(reader, ws))
        try:
            async for message in ws:
                if message.type is WSMsgType.BINARY:
                    writer.write(message.data)
                    await writer.drain()
                elif message.type is WSMsgType.ERROR:
                    logger.info("AMQP over WebSockets connection failed: %s", ws.exception())
        finally:
            writer.close()
            to_client.cancel()
        return ws

    return web.get(PATH, handle)


async def _broker_to_client(reader: asyncio.StreamReader, ws: web.WebSocketResponse) -> None:
    while data := await reader.read(_READ_SIZE):
        await ws.send_bytes(data)
    await ws.close()
