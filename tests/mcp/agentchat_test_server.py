"""An MCP server of the test suite's own, written with the official `mcp` Python SDK (v2).

It misbehaves on request, so the API tests can check how AgentChat copes:
  whoami    verifies the forwarded identity JWT (X-AgentChat-User header over HTTP, the
            `io.agentchat/identity` _meta entry over stdio) against AgentChat's JWKS and
            returns its claims; refuses (isError) without a valid one
  crash     the process dies in the middle of the call
  hang      never answers (well, after `seconds`)
  add_tool  registers a new tool and announces notifications/tools/list_changed
  echo      a plain tool with a required argument

With --bulk-pages N (or --endless) its tool list is hostile: after the tools above, N pages
(or pages without end) of --bulk-per-page generated tools each, with descriptions of
--bulk-description-bytes and schemas padded to --bulk-schema-bytes.

Usage: agentchat_test_server.py [--http PORT] [--jwks-url URL] [--audience NAME]
           [--bulk-pages N | --endless] [--bulk-per-page M] [--bulk-description-bytes B]
           [--bulk-schema-bytes S]
"""

import argparse
import os

import anyio
import jwt
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListToolsResult
from mcp_types import Tool as MCPTool

parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int, default=None, help="serve Streamable HTTP on this port")
parser.add_argument("--jwks-url", default=None)
parser.add_argument("--audience", default="own")
parser.add_argument("--bulk-pages", type=int, default=0)
parser.add_argument("--endless", action="store_true", help="every tools/list page has a next cursor")
parser.add_argument("--bulk-per-page", type=int, default=100)
parser.add_argument("--bulk-description-bytes", type=int, default=40)
parser.add_argument("--bulk-schema-bytes", type=int, default=0)
opts = parser.parse_args()


class BulkListing(MCPServer):
    """Lists its real tools on the first page, then generated ones page after page."""

    async def _handle_list_tools(self, ctx, params) -> ListToolsResult:
        page = int(params.cursor) if params is not None and params.cursor else 0
        tools = await self.list_tools() if page == 0 else []
        for i in range(opts.bulk_per_page):
            schema = {"type": "object", "properties": {"q": {"type": "string"}}}
            if opts.bulk_schema_bytes:
                schema["description"] = "s" * opts.bulk_schema_bytes
            tools.append(
                MCPTool(
                    name=f"bulk_{page}_{i}",
                    description="d" * opts.bulk_description_bytes,
                    input_schema=schema,
                )
            )
        more = opts.endless or page + 1 < opts.bulk_pages
        return ListToolsResult(tools=tools, next_cursor=str(page + 1) if more else None)


bulk = opts.endless or opts.bulk_pages > 0
server = (BulkListing if bulk else MCPServer)("agentchat-test-server")
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
