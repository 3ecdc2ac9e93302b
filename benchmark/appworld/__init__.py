"""AppWorld with a ReAct code agent, with and without ReMe's task memory over HTTP (see README.md)."""
