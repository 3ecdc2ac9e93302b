"""LoCoMo benchmark harness (see README.md here). Data: CC BY-NC 4.0, keep its notice."""
