#!/usr/bin/env python3
"""The README's quickstart, run as written (CTest quickstart).

Takes the shell blocks of README.md's "Quickstart" section in order and runs
them in a scratch directory holding `build` (a link to this build) and a copy
of examples/quickstart/. What a test cannot do literally it changes, and only
that: `make run` (the build is this build's) becomes `./build/awooop serve`
on a port the kernel picks, the fake model server's port 9001 and the dead
port 9002 become free ports (in the commands and in the copy of llm.json),
8080 becomes the server's port, `export AWOOOP_KEY=awk_...` takes the
key the server printed, and the audit export waits a second, as a reader
does. Then it checks what the README says the reader sees.

  quickstart_test.py SOURCE_DIR BUILD_DIR"""
import os
import re
import shutil
import socket
import sys

from walk import Walk, free_port, sh_blocks


def main(src, build):
    w = Walk("quickstart", build)
    try:
        shutil.copytree(os.path.join(src, "examples", "quickstart"),
                        w.path("examples", "quickstart"))
        fake = free_port()
        # the dead upstream: a port bound and never listened on, kept for the
        # test's length, so connecting is refused and nobody else takes it
        hold = socket.socket()
        hold.bind(("127.0.0.1", 0))
        dead = hold.getsockname()[1]
        llm = w.path("examples", "quickstart", "llm.json")
        cfg = open(llm).read()
        w.check("llm.json names ports 9001 and 9002", "9001" in cfg and "9002" in cfg)
        open(llm, "w").write(cfg.replace("9001", str(fake)).replace("9002", str(dead)))

        text = open(os.path.join(src, "README.md"), encoding="utf-8").read()
        bl = sh_blocks(text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0])
        w.check("the quickstart has its shell blocks", len(bl) >= 5, repr(bl))
        key, port = w.terminal1(bl[0])
        if not (key and port):
            return 1
        t2 = "\n".join(bl[1:]).replace("--port 9001", f"--port {fake}") + "\nkill %1\n"
        rc, out = w.terminal2(t2, key, port, 240)
        w.check("onboarded", "tenant demo onboarded" in out, out)
        w.check("awooop llm printed the answer",
                re.search(r"^fake: t0 t1 t2 t3 t4 t5 t6 t7$", out, re.M) is not None, out)
        w.check("the OpenAI-style call answered",
                '"message":{"role":"assistant","content":"fake: t0' in out, out)
        w.check("the audit record shows the route and the failover",
                '"route":"chat"' in out and '"upstream":"openai"' in out
                and '"upstream_model":"gpt-4o-mini"' in out
                and '"attempts":2,"failovers":1' in out, out)
        w.check("the tool answered through the MCP gateway",
                '"result":{"content":[{"type":"text","text":"INC-101: Order API latency above SLO'
                in out, out)
        w.check("the run succeeded with both steps' results",
                '"state": "succeeded"' in out and '"text": "INC-101' in out
                and '"content": "fake: t0' in out, out)
        w.check("the budget counted the tokens", "tokens settled" in out, out)
        w.check("the audit chain is intact", "audit chain of demo intact" in out, out)
    finally:
        code = w.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
