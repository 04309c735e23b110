"""The consumer's side of TiCDC's ``large-message-handle-option``: where the claim-check files are read
from, and what becomes of a row that came as its handle key only.

The codecs only declare these options, so that every path that decodes (``cdclake decode``, replicate,
transcode, the API) is given them with the format's other options; the files are read and the policy is
applied by :mod:`cdclake.claimcheck`, outside the codecs, which do no I/O.
"""

from __future__ import annotations

from cdclake.formats.base import Option

CLAIM_CHECK_STORAGE_URI = "claim-check-storage-uri"
ON_HANDLE_KEY_ONLY = "on-handle-key-only"
HANDLE_KEY_ONLY_CHOICES = ("fail", "dead-letter")

LARGE_MESSAGE_OPTIONS: dict[str, Option] = {
    CLAIM_CHECK_STORAGE_URI: Option(
        "",
        "storage TiCDC wrote the claim-check files to (file://, s3://, gs://, hdfs:// or a directory); "
        "each reference's file is read from it by its base name (decoding side)",
    ),
    ON_HANDLE_KEY_ONLY: Option(
        "fail",
        "a row sent as its handle key only (large-message-handle-option=handle-key-only): stop, or put "
        "it in the dead letters and go on (decoding side)",
        choices=HANDLE_KEY_ONLY_CHOICES,
    ),
}
