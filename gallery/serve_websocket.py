"""The served app's kernel websocket, hardened: only the v1 protocol, with its frames checked.

Imported by the Voilà server process (``--Voila.kernel_websocket_connection_class`` names
:class:`V1OnlyKernelWebsocketConnection`), never by the CLI: it imports jupyter_server.
"""

from __future__ import annotations

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

__all__ = ["KERNEL_WS_PROTOCOL", "V1OnlyKernelWebsocketConnection", "v1_frame_ok"]

#: The only kernel websocket protocol the server accepts (what Voilà's and Lab's front-ends use).
KERNEL_WS_PROTOCOL = "v1.kernel.websocket.jupyter.org"
_MAX_V1_PARTS = 2 + 4 + 1024  # offsets: channel start/end + header, parent, metadata, content,
# and up to 1024 binary buffers


def v1_frame_ok(message: bytes | str) -> bool:
    """Is ``message`` a well-formed v1 kernel websocket frame (as far as its offset table goes)?

    jupyter_server's ``deserialize_msg_from_ws_v1`` trusts the first 8 bytes as the number of
    offsets and loops that many times: one 72-byte message claiming 2**40 offsets blocks the
    server's event loop and eats memory until it is killed (checked with jupyter_server 2.21).
    """
    if isinstance(message, str) or len(message) < 8:
        return False
    count = int.from_bytes(message[:8], "little")
    table_end = 8 * (count + 1)
    if not 3 <= count <= _MAX_V1_PARTS or table_end > len(message):
        return False
    offsets = [int.from_bytes(message[8 * i : 8 * (i + 1)], "little") for i in range(1, count + 1)]
    return offsets[0] == table_end and offsets == sorted(offsets) and offsets[-1] <= len(message)


class V1OnlyKernelWebsocketConnection(ZMQChannelsWebsocketConnection):
    """Kernel websocket connection that only speaks the v1 protocol, and checks its frames.

    * Clients that do not ask for the v1 subprotocol get the "legacy" protocol, on which
      Voilà 0.5.13 misreads every outgoing binary message (widget images, any buffer) as a
      v1 frame: the server then loops over a garbage offset count, freezing every page it
      serves and growing without bound (20 GB in 10 minutes seen here). They are refused
      (close code 1008) before anything is sent.
    * Incoming v1 frames whose offset table does not fit the message are refused (close
      1003) instead of being handed to jupyter_server's decoder (see ``v1_frame_ok``).
    * The protocol is pinned once negotiated. When the server closes a socket (a refused
      frame, a ping timeout), tornado forgets the subprotocol at once but the kernel's
      output keeps arriving until the client answers the close: jupyter_server then encodes
      it in the legacy format and Voilà's ``write_message`` loops over it as above (seen
      here: the next page load hung). Output for a closing socket is dropped instead.
    """

    _refused = False
    _protocol: str | None = None

    @property
    def subprotocol(self) -> str | None:
        if self._protocol is None:
            self._protocol = super().subprotocol  # None until the handshake is done
        return self._protocol

    def handle_outgoing_message(self, stream, outgoing_msg):
        ws = self.websocket_handler.ws_connection
        if ws is None or ws.is_closing():
            return None  # the socket is going away: nobody is left to read this
        return super().handle_outgoing_message(stream, outgoing_msg)

    async def connect(self):  # type: ignore[override]
        if self.subprotocol != KERNEL_WS_PROTOCOL:
            self._refused = True
            self.log.warning(
                "refusing a kernel websocket without the %s subprotocol", KERNEL_WS_PROTOCOL
            )
            self.websocket_handler.close(1008, f"only {KERNEL_WS_PROTOCOL} is supported")
            return None
        connected = super().connect()
        if connected is not None:
            await connected
        return None

    def disconnect(self):
        if self._refused:  # never connected: do not decrement the kernel's connection count
            return None
        return super().disconnect()

    def handle_incoming_message(self, incoming_msg):
        if self._refused:
            return None
        if not v1_frame_ok(incoming_msg):
            self.log.warning("closing a kernel websocket after a malformed v1 frame")
            self.websocket_handler.close(1003, "malformed v1 frame")
            return None
        return super().handle_incoming_message(incoming_msg)
