"""An MCP server (official `mcp` Python SDK) whose one tool returns image content, honest or
hostile, so the API tests can check what AgentChat keeps of it.

  pictures(kinds, size)  one image block per kind, between two text blocks:
    ok          a 30 x 20 red PNG
    svg         an SVG, declared image/svg+xml
    svg_as_png  an SVG, declared image/png
    bad_base64  data that is not base64, declared image/png
    oversize    `size` bytes of PNG signature and zeros, declared image/png
    bomb        a well-formed PNG header claiming 40,000 x 40,000 pixels

Usage: image_server.py   (stdio)
"""

import base64
import struct
import zlib

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations

server = MCPServer("agentchat-image-server")

SIGNATURE = b"\x89PNG\r\n\x1a\n"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>'


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _png(width: int, height: int, rgb: bytes, pixels: bool = True) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + rgb * width for _ in range(height)) if pixels else b"\x00"
    return SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(rows)) + _chunk(b"IEND", b"")


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _block(kind: str, size: int) -> ImageContent:
    if kind == "ok":
        return ImageContent(data=_b64(_png(30, 20, b"\xdc\x14\x14")), mime_type="image/png")
    if kind == "svg":
        return ImageContent(data=_b64(SVG), mime_type="image/svg+xml")
    if kind == "svg_as_png":
        return ImageContent(data=_b64(SVG), mime_type="image/png")
    if kind == "bad_base64":
        return ImageContent(data="!!not base64 at all!!", mime_type="image/png")
    if kind == "oversize":
        return ImageContent(data=_b64(SIGNATURE + b"\x00" * size), mime_type="image/png")
    if kind == "bomb":
        return ImageContent(data=_b64(_png(40_000, 40_000, b"\x00\x00\x00", pixels=False)), mime_type="image/png")
    raise ValueError(f"unknown kind {kind}")


@server.tool(
    description="Return one image per kind (ok, svg, svg_as_png, bad_base64, oversize, bomb)",
    annotations=ToolAnnotations(read_only_hint=True),
)
def pictures(kinds: list[str], size: int = 0) -> CallToolResult:
    content = [TextContent(text="Here are the pictures:")]
    content.extend(_block(k, size) for k in kinds)
    content.append(TextContent(text="That is all."))
    return CallToolResult(content=content)


if __name__ == "__main__":
    server.run()
