"""Pure planning: validated specs → the objects the operator owns. No I/O here."""
