"""engram-client: the light SDK for agent applications (confluent-kafka and fastavro only).

from engram_client import ClientConfig, EngramClient

async with EngramClient(ClientConfig("kafka:9092", token=token)) as engram:  # or ClientConfig.from_env()
    await engram.publish_turn(user_id="ada", session_id="s1", turn_index=0, content="I moved to Berlin.")
    context = await engram.ask("Where does Ada live?", user_id="ada", session_id="s1")
"""

from engram_client.client import MAX_TURN_BYTES, ClientConfig, EngramClient
from engram_client.codec import ClientCodec, ClientCodecError
from engram_client.deadletters import DeadLetter, read_dead_letter
from engram_client.errors import (
    EngramAuthorizationError,
    EngramClientError,
    EngramDecodeError,
    EngramInputError,
    EngramInvalidRequestError,
    EngramRefusedError,
)

__all__ = [
    "MAX_TURN_BYTES", "ClientCodec", "ClientCodecError", "ClientConfig", "DeadLetter", "EngramAuthorizationError",
    "EngramClient", "EngramClientError", "EngramDecodeError", "EngramInputError", "EngramInvalidRequestError",
    "EngramRefusedError", "read_dead_letter",
]  # fmt: skip
