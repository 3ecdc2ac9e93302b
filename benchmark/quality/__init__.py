"""Memory quality: what a library remembers of short dialogues, scored by keyword rules (README.md)."""
