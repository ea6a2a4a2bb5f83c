"""_errors - the package's own exception types."""


class LibraryError(RuntimeError):
    """hpvm_rt refused or failed a call; str() is its message."""
