"""The one exception type the CLI turns into a clean message and a non-zero exit."""


class KgcultError(Exception):
    """A user-facing error: the message says what went wrong and where."""

    exit_code = 1
