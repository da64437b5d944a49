"""refcore: the pure domain of referral tracking and affiliate commissions.

This package imports no adapter and no I/O library. Storage, time and identifiers reach it
only through the protocols in :mod:`refcore.ports`.
"""

__version__ = "0.1.0"
