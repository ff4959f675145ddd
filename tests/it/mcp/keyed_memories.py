"""Keyed memories over MCP with the official Python MCP SDK, as one
tenant's agent: recall finds only that tenant's entries, remember and
forget act on its own keys, and naming another tenant is refused.

    python3 keyed_memories.py URL KEY OWN_ACTION OTHER_TENANT

Prints one JSON line of what it saw and exits 0, or prints the failure and
exits 1.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError

from client_common import Failure, call, check

async def refused(session, name, arguments):
    try:
        result = await session.call_tool(name, arguments)
        check(getattr(result, "is_error", False), f"{name} {arguments} was accepted: {result}")
        return " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    except MCPError as e:
        return str(e)

async def agent(session, own_action, other):
    seen = {}
    await session.initialize()
    tools = {t.name for t in (await session.list_tools()).tools}
    for required in ("memory_remember", "memory_recall", "memory_forget", "memory_purge"):
        check(required in tools, f"no {required} tool in {sorted(tools)}")
    found = await call(session, "memory_recall", {"namespace": "incidents", "text": "pods out of memory"})
    actions = [m["content"]["action"] for m in found["matches"]]
    check(own_action in actions, f"own incident not recalled: {actions}")
    seen["recalled"] = [m["id"] for m in found["matches"]]
    seen["actions"] = actions
    await call(session, "memory_remember", {
        "namespace": "incidents", "id": "inc-mcp", "text": "disk full on the mcp host",
        "content": {"action": "clean up"}, "metadata": {"service": "mcp"},
    })
    only = await call(session, "memory_recall", {
        "namespace": "incidents", "text": "disk full", "metadata": {"service": "mcp"},
    })
    check([m["id"] for m in only["matches"]] == ["inc-mcp"], f"metadata recall: {only}")
    forgot = await call(session, "memory_forget", {"namespace": "incidents", "id": "inc-mcp"})
    check(forgot["forgotten"], f"forget: {forgot}")
    seen["other_tenant_error"] = await refused(
        session, "memory_recall", {"tenant": other, "namespace": "incidents", "text": "pods"})
    seen["bad_limit_error"] = await refused(
        session, "memory_recall", {"namespace": "incidents", "text": "pods", "limit": 0})
    purged = await call(session, "memory_purge", {"older_than": "2000-01-01T00:00:00Z"})
    check(purged["purged"] == 0, f"purge of nothing: {purged}")
    return seen

async def main(argv):
    url, key, own_action, other = argv[1:5]
    headers = {"Authorization": f"Bearer {key}"}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                return await agent(session, own_action, other)

if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(main(sys.argv))))
    except Failure as f:
        print(f"FAILED: {f}", file=sys.stderr)
        sys.exit(1)
