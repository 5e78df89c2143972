"""An MCP server of the test suite's own, written with the official `mcp` Python SDK (v2).

It misbehaves on request, so the API tests can check how AgentChat copes:
  whoami    verifies the forwarded identity JWT (X-AgentChat-User header over HTTP, the
            `io.agentchat/identity` _meta entry over stdio) against AgentChat's JWKS and
            returns its claims; refuses (isError) without a valid one
  crash     the process dies in the middle of the call
  hang      never answers (well, after `seconds`)
  add_tool  registers a new tool and announces notifications/tools/list_changed
  echo      a plain tool with a required argument

Usage: agentchat_test_server.py [--http PORT] [--jwks-url URL] [--audience NAME]
"""

import argparse
import os

import anyio
import jwt
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int, default=None, help="serve Streamable HTTP on this port")
parser.add_argument("--jwks-url", default=None)
parser.add_argument("--audience", default="own")
opts = parser.parse_args()

server = MCPServer("agentchat-test-server")
_jwks = jwt.PyJWKClient(opts.jwks_url) if opts.jwks_url else None


def _token(ctx: Context) -> str | None:
    headers = ctx.headers
    if headers is not None:
        value = headers.get("x-agentchat-user")
        if value:
            return value
    meta = ctx.request_context.meta
    if meta is not None:
        extra = meta if isinstance(meta, dict) else getattr(meta, "model_extra", None) or {}
        value = extra.get("io.agentchat/identity")
        if value:
            return value
    return None


@server.tool(description="Echo the text back")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="Who is calling, from the verified identity token")
def whoami(ctx: Context) -> dict:
    token = _token(ctx)
    if token is None:
        raise ToolError("no identity token was sent")
    if _jwks is None:
        raise ToolError("this server was started without --jwks-url")
    key = _jwks.get_signing_key_from_jwt(token)
    claims = jwt.decode(
        token,
        key.key,
        algorithms=["EdDSA", "RS256"],
        audience=opts.audience,
        issuer="agentchat",
        options={"require": ["exp", "sub", "aud"]},
    )
    claims["traceparent_header"] = (ctx.headers or {}).get("traceparent")
    return claims


@server.tool(description="Die in the middle of the call")
def crash() -> str:
    os._exit(3)


@server.tool(description="Take a very long time")
async def hang(seconds: float = 600) -> str:
    await anyio.sleep(seconds)
    return "late"


@server.tool(description="Add a tool and announce the change")
async def add_tool(name: str, ctx: Context) -> str:
    def added() -> str:
        return f"{name} was added at run time"

    server.add_tool(added, name=name, description=f"added at run time: {name}")
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:  # noqa: BLE001 - the stateless protocol has no session to send on
        pass
    try:
        await ctx.notify_tools_changed()
    except Exception:  # noqa: BLE001 - legacy sessions have no subscription bus
        pass
    return f"added {name}"


if __name__ == "__main__":
    if opts.http is None:
        server.run()
    else:
        server.run(transport="streamable-http", host="127.0.0.1", port=opts.http)
