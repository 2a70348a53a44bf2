"""Consumers of the record stream that write it out: the shutdown report (``report``), the
Chrome trace (``trace``) and the JSON Lines file (``jsonl``), each a small module over the
telemetry with its tool."""
