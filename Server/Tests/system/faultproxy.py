"""A TCP proxy on 127.0.0.1 with the faults of a network, for the database and the DCS of the system tests.

Between a client (a `latchkey serve` instance, a Patroni node) and one upstream port. The faults are what a cut cable
or a dropped route does to TCP, played in user space because this kernel has no `netem` and the tests stay on
loopback:

- `hold_new_connections()`: a new connection is accepted but not connected upstream until `release()`: the client's
  startup bytes wait, as behind a connect that takes longer than the client's timeout (the pool-stall defect's trigger).
- `cut()`: a partition. New connections are held as above, and the connections already open go silent both ways:
  nothing is delivered, nothing is closed (no FIN, no RST; the peer cannot tell a dead link from a slow one).
- `heal()`: everything held is delivered and the connections flow again, as TCP's retransmissions do after a short
  partition: a statement sent into the cut may still arrive, late, once it heals.
- `reset_all()`: every open connection is closed (the link came back after TCP gave up).

Runs its own event loop in a daemon thread; the controls are called from the test's thread.
"""
import asyncio
import socket
import threading


class FaultProxy:
    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.loop = asyncio.new_event_loop()
        self.accepted = 0
        self.waiting_to_connect = 0
        self._writers = set()
        listening = socket.socket()
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(("127.0.0.1", 0))
        listening.listen(128)
        self.port = listening.getsockname()[1]
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            # Both gates open: traffic flows. `connects` gates new upstream connections, `flowing` every byte.
            self._connects = asyncio.Event()
            self._flowing = asyncio.Event()
            self._connects.set()
            self._flowing.set()
            self._server = self.loop.run_until_complete(asyncio.start_server(self._serve, sock=listening))
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True, name=f"fault-proxy-{self.port}")
        self.thread.start()
        started.wait(10)

    # Controls (from any thread).

    def hold_new_connections(self):
        self._call(self._connects.clear)

    def cut(self):
        self._call(self._connects.clear)
        self._call(self._flowing.clear)

    def release(self):
        self._call(self._connects.set)

    def heal(self):
        self._call(self._flowing.set)
        self._call(self._connects.set)

    def reset_all(self):
        def close_all():
            for writer in list(self._writers):
                writer.transport.abort()
        self._call(close_all)

    def close(self):
        def stop():
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            self.loop.stop()
        self.loop.call_soon_threadsafe(stop)
        self.thread.join(10)

    def _call(self, function):
        done = threading.Event()

        def run():
            function()
            done.set()
        self.loop.call_soon_threadsafe(run)
        done.wait(10)

    # The proxy.

    async def _serve(self, client_reader, client_writer):
        self.accepted += 1
        self._writers.add(client_writer)
        upstream_writer = None
        try:
            self.waiting_to_connect += 1
            try:
                await self._connects.wait()
                await self._flowing.wait()
            finally:
                self.waiting_to_connect -= 1
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
            self._writers.add(upstream_writer)
            await asyncio.gather(self._pump(client_reader, upstream_writer), self._pump(upstream_reader, client_writer))
        except (ConnectionError, OSError):
            pass
        finally:
            for writer in (client_writer, upstream_writer):
                if writer is not None:
                    self._writers.discard(writer)
                    writer.transport.abort()

    async def _pump(self, reader, writer):
        try:
            while True:
                data = await reader.read(65536)
                # Bytes read during a cut are kept here, in order, and written once it heals.
                await self._flowing.wait()
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        finally:
            # One side ended: so does the other (PostgreSQL and etcd have no half-closed conversations).
            writer.transport.abort()
