"""BFCL-v3 multi-turn base with an agent, with and without ReMe's task memory (see README.md)."""
