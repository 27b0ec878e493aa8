"""The MCP server: the service's tools for MCP clients, over stdio (`manage.py mcp`) and streamable HTTP (/api/mcp).

Built on the SDK's low-level `Server` (server.py), so the tool table (tools.py) is the whole contract: hand-written
JSON input schemas, and a tools/list that is rebuilt on every call (run_saved_query's description names the saved
queries of the moment: catalogue.py). Tools are adapters: check the arguments, call one service, shape the answer.
Errors come back as tool results with isError and the service's "<code>: <message>", never a traceback. The HTTP
endpoint (http.py) answers a wrong key like the API does.

Django code runs in pool threads (`in_thread`), never on the event loop: under daphne the loop serves the whole API.
"""
