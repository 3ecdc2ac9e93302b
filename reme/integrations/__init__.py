"""Adapters that put ReMe inside agent frameworks, one module per framework, each an optional extra.

Importing this package imports no framework: import the module for yours (for example
`reme.integrations.agentscope1` with the `agentscope1` extra)."""
