"""engram-client: the light SDK for agent applications (confluent-kafka and fastavro only).

from engram_client import ClientConfig, EngramClient

async with EngramClient(ClientConfig("kafka:9092", token=token)) as engram:
    await engram.publish_turn(user_id="ada", session_id="s1", turn_index=0, content="I moved to Berlin.")
    context = await engram.ask("Where does Ada live?", user_id="ada", session_id="s1")
"""

from engram_client.client import MAX_TURN_BYTES, ClientConfig, EngramClient
from engram_client.codec import ClientCodecError
from engram_client.errors import (
    EngramAuthorizationError,
    EngramClientError,
    EngramInputError,
    EngramInvalidRequestError,
    EngramRefusedError,
)

__all__ = [
    "MAX_TURN_BYTES", "ClientCodecError", "ClientConfig", "EngramAuthorizationError", "EngramClient",
    "EngramClientError", "EngramInputError", "EngramInvalidRequestError", "EngramRefusedError",
]  # fmt: skip
