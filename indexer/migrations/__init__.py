"""Versioned SQL migrations, applied in order at start; `NNNN_name.sql`, one transaction each."""
