"""``on-bad-message``: what a job does with a message it cannot decode (or, transcoding, cannot carry)."""

from __future__ import annotations

from cdclake.errors import CdclakeError, OptionError

DEAD_LETTER, FAIL = "dead-letter", "fail"
BAD_MESSAGE_CHOICES = (DEAD_LETTER, FAIL)


class BadMessageError(CdclakeError):
    """A message could not be decoded (or transcoded) and the job is configured to stop at the first one."""


def check_bad_message_policy(policy: str) -> None:
    if policy not in BAD_MESSAGE_CHOICES:
        raise OptionError(f"on-bad-message={policy!r}: one of {', '.join(BAD_MESSAGE_CHOICES)}")


def stop_at_bad_message(policy: str, first: str | None, consequence: str) -> None:
    """Stop the batch under ``on-bad-message = fail`` when it found a bad message: ``first`` says the
    first one and where it is (None: there was none), ``consequence`` what stopping leaves."""
    if first is not None and policy == FAIL:
        raise BadMessageError(f"{first} (on-bad-message = {FAIL}: {consequence})")
