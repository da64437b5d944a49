"""Business rules as plain functions over models: no storage, no clock, no side effects."""
