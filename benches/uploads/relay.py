#!/usr/bin/env python3
"""A TCP relay that delays each direction: what the upload benchmark puts
between h2load and the server to have a round trip of 2 × DELAY without
netem (not available here).

    relay.py LISTEN_PORT UPSTREAM_PORT DELAY_MS CAP_BYTES

Each direction holds at most CAP_BYTES in flight (read, not yet written):
past it, the relay stops reading that side until some is delivered, so
the sender is held back as TCP's receive window holds it back on a real
path — a bound of CAP_BYTES per DELAY, i.e. a window of 2 × CAP_BYTES per
round trip.
"""

import asyncio
import collections
import sys
import time


async def pipe(reader, writer, delay, cap):
    queue = collections.deque()
    held = 0
    room = asyncio.Event()
    room.set()
    arrived = asyncio.Event()
    done = False

    async def deliver():
        nonlocal held
        while True:
            while not queue:
                if done:
                    writer.close()
                    return
                arrived.clear()
                await arrived.wait()
            due, data = queue.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
            held -= len(data)
            if held < cap:
                room.set()

    sender = asyncio.ensure_future(deliver())
    try:
        while True:
            await room.wait()
            data = await reader.read(1 << 16)
            if not data:
                break
            queue.append((time.monotonic() + delay, data))
            held += len(data)
            if held >= cap:
                room.clear()
            arrived.set()
    except ConnectionError:
        pass
    done = True
    arrived.set()
    try:
        await sender
    except ConnectionError:
        pass


async def main():
    listen, upstream, delay_ms, cap = (int(a) for a in sys.argv[1:5])
    delay = delay_ms / 1000

    async def serve(client_r, client_w):
        server_r, server_w = await asyncio.open_connection("127.0.0.1", upstream)
        await asyncio.gather(pipe(client_r, server_w, delay, cap),
                             pipe(server_r, client_w, delay, cap))

    srv = await asyncio.start_server(serve, "127.0.0.1", listen)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
