"""Services: each public function is one unit of work through the ports.

They take a :class:`~refcore.services.runtime.Runtime` (the ports) and plain values, and return
models. Authorization rules of decisions 1 are applied here, not in the adapters, so every
adapter enforces them identically.
"""
