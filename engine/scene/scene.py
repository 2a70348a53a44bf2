"""Scene API contract (to be implemented): see the module docstring of engine/scene."""
