"""Drives a strataflow MCP server with the official Python MCP SDK, as an
agent following the evidence-gate protocol would.

    python3 agent_protocol.py http URL [KEY]
    python3 agent_protocol.py stdio STRATAFLOW_BINARY DATA_DIR

It lists the tools, searches, assesses a batch as sufficient with one of
its refs, uses that ref (and checks that the weights view changed for
exactly that event), assesses another batch as partial and expands it, and
calls a tool with a bad argument (the error must name the argument). It
prints one JSON line of what it saw and exits 0, or prints the failure and
exits 1.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError

from client_common import Failure, call, check

REQUIRED_TOOLS = {
    "remember", "search", "expand", "context", "assess", "use", "forget",
    "events", "graph", "status",
}

async def weights(session):
    view = await call(session, "weights", {})
    return view["events"]

async def protocol(session):
    seen = {}
    await session.initialize()
    tools = {t.name for t in (await session.list_tools()).tools}
    missing = REQUIRED_TOOLS - tools
    check(not missing, f"tools missing: {sorted(missing)}")
    seen["tools"] = sorted(tools)

    status = await call(session, "status", {})
    check(status["stats"]["messages"] > 0, f"no messages served: {status}")

    # Search compact records first.
    found = await call(session, "search", {"query": "adoption agency", "channel": "events", "limit": 5})
    check(found["batch"], "search recorded no batch")
    check(found["hits"], "search found nothing")
    ref = found["hits"][0]["ref"]
    check(ref.startswith("event:"), f"first hit is not an event: {ref}")

    # Sufficient: assess with a ref of that batch, answer, then use it.
    before = await weights(session)
    verdict = await call(session, "assess", {
        "batch": found["batch"], "verdict": "sufficient", "evidence": [ref],
        "fit": "the event states it", "missing": "", "next": "answer",
    })
    check(verdict["verdict"] == "sufficient", f"assess: {verdict}")
    used = await call(session, "use", {"batch": found["batch"], "refs": [ref]})
    after = await weights(session)
    changed = sorted(e for e in set(before) | set(after) if before.get(e) != after.get(e))
    check(used["events"] == [ref.split(":", 1)[1]], f"use reinforced {used['events']}, not {ref}")
    check(changed == used["events"], f"weights changed for {changed}, expected exactly {used['events']}")
    seen["used"] = ref
    seen["used_outcome"] = used

    # Partial: assess, then expand the ref the assessment points at.
    other = await call(session, "search", {"query": "camping trip", "channel": "events", "limit": 3})
    check(other["hits"], "second search found nothing")
    ref2 = other["hits"][0]["ref"]
    partial = await call(session, "assess", {
        "batch": other["batch"], "verdict": "partial", "evidence": [ref2],
        "fit": "mentions the trip", "missing": "when it was", "next": "expand_event",
    })
    check(partial["verdict"] == "partial", f"assess partial: {partial}")
    expanded = await call(session, "expand", {"ref": ref2})
    check(expanded.get("batch"), f"expand recorded no batch: {expanded}")
    check(expanded.get("source_messages"), f"expand shows no source messages: {expanded}")
    seen["expanded"] = ref2

    # A bad argument is an MCP error naming it.
    try:
        result = await session.call_tool("search", {"query": "x", "limit": 0})
        check(getattr(result, "is_error", False), f"limit 0 was accepted: {result}")
        text = " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    except MCPError as e:
        text = str(e)
    check("limit" in text, f"the error does not name `limit`: {text}")
    seen["bad_argument_error"] = text
    return seen

async def main(argv):
    mode = argv[1]
    if mode == "http":
        url = argv[2]
        headers = {"Authorization": f"Bearer {argv[3]}"} if len(argv) > 3 else None
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    return await protocol(session)
    if mode == "stdio":
        params = StdioServerParameters(command=argv[2], args=["--data", argv[3], "mcp"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                return await protocol(session)
    raise Failure(f"unknown mode {mode}")

if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(main(sys.argv))))
    except Failure as f:
        print(f"FAILED: {f}", file=sys.stderr)
        sys.exit(1)
