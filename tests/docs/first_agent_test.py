#!/usr/bin/env python3
"""docs/guide/first-agent.md, run as written (CTest first_agent).

Takes the guide's shell blocks in order and runs them in a scratch
directory holding `build` (a link to this build) and a copy of examples/.
What a test cannot do literally it changes, and only that: `make run`
becomes `./build/awooop serve` on a port the kernel picks, the fakes'
ports 9001 and 9003 become free ports (in the commands and in the copy of
llm.json), 8080 becomes the server's port and `export AWOOOP_KEY=awk_...`
takes the key the server printed. Then it checks what the guide says the
reader sees: the agent's answer in the chat, quoting the four tools, as the
reply; the progress message; the run's calls; the tool calls audited.

  first_agent_test.py SOURCE_DIR BUILD_DIR"""
import os
import re
import shutil
import sys

from walk import Walk, free_port, sh_blocks


def main(src, build):
    w = Walk("first_agent", build)
    try:
        shutil.copytree(os.path.join(src, "examples"), w.path("examples"))
        llm_port, tg_port = free_port(), free_port()
        llm = w.path("examples", "quickstart", "llm.json")
        cfg = open(llm).read()
        open(llm, "w").write(cfg.replace("9001", str(llm_port)))
        text = open(os.path.join(src, "docs", "guide", "first-agent.md"), encoding="utf-8").read()
        bl = sh_blocks(text)
        w.check("the guide has its shell blocks", len(bl) >= 4, repr(bl))
        key, port = w.terminal1(bl[0].replace("9003", str(tg_port)))
        if not (key and port):
            return 1
        t2 = "\n".join(bl[1:]).replace("9001", str(llm_port)).replace("9003", str(tg_port))
        rc, out = w.terminal2(t2 + "\nkill %1 %2\n", key, port, 120)
        w.check("onboarded", "tenant ewoooc onboarded" in out, out)
        answer = re.search(r"^final: .*$", out, re.M)
        w.check("the agent answered in the chat", answer is not None, out)
        a = out[answer.start():] if answer else ""
        w.check("quoting the four tools",
                "worker-2b1d ERROR job failed" in a and "cpu (cores)" in a
                and "cron-55aa CrashLoopBackOff" in a and "INC-101: Order API latency" in a, out)
        w.check("the progress message", re.search(r"^. Run [0-9a-f]{8}: ", out, re.M) is not None, out)
        w.check("edited with where the agent is",
                re.search(r"^\(edit\) .* - (thinking|calling [a-z_]+), turn [1-5] of 8$", out, re.M)
                is not None, out)
        w.check("the run's calls: four tools, five turns",
                out.count('"kind": "tool"') == 4 and out.count('"kind": "model"') == 5, out)
        w.check("the tool calls audited", out.count('"action":"mcp.call"') >= 4, out)
    finally:
        code = w.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
