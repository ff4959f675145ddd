"""What the MCP SDK client scripts of the tests share: a failure type, a
check, and a tool call that expects one JSON text content."""

import json


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


async def call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    check(not getattr(result, "is_error", False), f"{name} failed: {result}")
    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
    check(len(texts) == 1, f"{name}: expected one text content, got {result.content}")
    return json.loads(texts[0])
