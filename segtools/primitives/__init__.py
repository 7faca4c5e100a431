"""Primitives: CRCs, varints, compression codecs, Java's string and number rules, size limits.

Nothing here knows a Kafka file; everything above builds on it."""
