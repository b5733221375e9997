#!/usr/bin/env python3
"""MCP interop with the reference Python SDK (PyPI `mcp`): initialize, tools/list and one
call of each tool against `atlas mcp`, on a copy of fixtures/python. Every answer must
parse as JSON; typed errors must carry the JSON error envelope.

  python3 .ci/mcp_interop.py BIN        (run by .ci/run inside a fresh virtualenv)
"""
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent


def text_of(result):
    assert len(result.content) == 1, result
    return json.loads(result.content[0].text)


async def main(binary: str) -> None:
    with tempfile.TemporaryDirectory() as temp:
        repo = Path(temp) / "repo"
        shutil.copytree(ROOT / "fixtures" / "python", repo)
        subprocess.run([binary, "build", "--no-progress"], cwd=repo, check=True,
                       stdout=subprocess.DEVNULL)
        params = StdioServerParameters(command=binary, args=["mcp"], cwd=str(repo))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                info = await session.initialize()
                assert info.server_info.name == "atlas", info
                tools = {t.name: t for t in (await session.list_tools()).tools}
                expected = {"atlas_context", "atlas_search", "atlas_expand", "atlas_status"}
                assert expected <= set(tools), sorted(tools)

                status = text_of(await session.call_tool("atlas_status", {}))
                assert status["fingerprint"], status

                context = await session.call_tool(
                    "atlas_context", {"query": "Cart.total", "profile": "symbol"})
                assert not context.is_error, context
                doc = text_of(context)
                assert any(e["symbol"] == "shop/models.py::Cart.total" for e in doc["evidence"])

                search = text_of(await session.call_tool(
                    "atlas_search", {"query": "cart total", "top_k": 3}))
                ref = search["hits"][0]["ref"]
                expanded = text_of(await session.call_tool("atlas_expand", {"refs": [ref]}))
                assert expanded["items"][0]["content"], expanded

                missing = await session.call_tool(
                    "atlas_context", {"query": "NoSuchSymbolAnywhere", "profile": "symbol"})
                assert missing.is_error, missing
                assert text_of(missing)["error"]["code"] == "atlas-context-no-match"

                inspections = {
                    "atlas_find_all": {"literal": "total"},
                    "atlas_file_api": {"path": "shop/models.py"},
                    "atlas_repo_map": {},
                    "atlas_trace_calls": {"symbol": "Cart.total", "direction": "callers"},
                    "atlas_check_freshness": {},
                }
                for name, arguments in inspections.items():
                    result = await session.call_tool(name, arguments)
                    assert not result.is_error, (name, result)
                    assert "truncated" in text_of(result), name
                called = expected | set(inspections)
                assert called == set(tools), sorted(set(tools) - called)
                print(f"mcp interop: {len(tools)} tools listed, {len(called)} called, "
                      f"answers parse")


if __name__ == "__main__":
    asyncio.run(main(str(Path(sys.argv[1]).resolve())))
