"""A namespace's TLS port, as Azure's namespaces answer on theirs: AMQP over TLS (Azure's port 5671),
AMQP over WebSockets (``/$servicebus/websocket``, subprotocol ``AMQPWSB10``, Azure's port 443) and
the HTTPS management plane, all on one listener so one host name serves every client.

TLS and WebSockets end here, on the management plane's asyncio thread; the AMQP bytes inside go to
the proton reactor over a socket pair, where they meet the same broker as plain AMQP connections
(``listener.SaslAcceptor.adopt``). Plain AMQP (development-emulator connection strings) keeps its
own port, straight into proton.
"""
