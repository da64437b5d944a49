"""Outgoing webhooks: signing, the SSRF guard, one delivery attempt, and the dispatcher that
drains the outbox inside the server process."""
