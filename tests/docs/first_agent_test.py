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
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main(src, build):
    tmp = tempfile.mkdtemp(prefix="aw-first-agent.")
    os.chmod(tmp, 0o755)  # as root the tool server's sandbox runs as nobody
    procs, failed = [], []

    def check(name, ok, detail=""):
        print(("ok    " if ok else "FAIL  ") + name)
        if not ok:
            failed.append(name)
            if detail:
                print(detail[-3000:])

    try:
        os.symlink(os.path.abspath(build), os.path.join(tmp, "build"))
        shutil.copytree(os.path.join(src, "examples"), os.path.join(tmp, "examples"))
        llm_port, tg_port = free_port(), free_port()
        llm = os.path.join(tmp, "examples", "quickstart", "llm.json")
        cfg = open(llm).read()
        open(llm, "w").write(cfg.replace("9001", str(llm_port)))
        text = open(os.path.join(src, "docs", "guide", "first-agent.md"), encoding="utf-8").read()
        bl = re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)
        check("the guide has its shell blocks", len(bl) >= 4, repr(bl))
        first, rest = bl[0], bl[1:]
        check("step 1 runs make run", "make run" in first, first)
        t1 = first.replace("make run", "exec ./build/awooop serve --listen 127.0.0.1:0")
        t1 = t1.replace("9003", str(tg_port))
        serve_out = os.path.join(tmp, "serve.out")
        serve_err = os.path.join(tmp, "serve.err")
        env1 = {k: v for k, v in os.environ.items()
                if not k.startswith("AWOOOP_") or k == "AWOOOP_MCP_STDIO_MEMORY_MB"}
        procs.append(subprocess.Popen(["bash", "-euc", t1], cwd=tmp, env=env1,
                                      stdout=open(serve_out, "w"), stderr=open(serve_err, "w"),
                                      start_new_session=True))
        key = port = None
        for _ in range(300):
            m = re.search(r"^(awk_\S+)$", open(serve_out).read(), re.M)
            p = re.search(r'"msg":"awooop serving".*?"port":"?(\d+)', open(serve_err).read())
            if m and p:
                key, port = m.group(1), p.group(1)
                break
            time.sleep(0.1)
        check("make run printed the platform-admin key and serves", key and port,
              open(serve_err).read())
        if not (key and port):
            return 1
        t2 = "\n".join(rest)
        t2 = re.sub(r"^export AWOOOP_KEY=awk_\.\.\..*$", f"export AWOOOP_KEY={key}", t2, flags=re.M)
        t2 = t2.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        t2 = t2.replace("9001", str(llm_port)).replace("9003", str(tg_port))
        # a reader takes longer between two commands than the gateway's
        # recorder lingers before it writes a call's audit record
        t2 = re.sub(r"^(\./build/awooop audit export)", r"sleep 1; \1", t2, flags=re.M)
        t2 += "\nkill %1 %2\n"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWOOOP_")}
        env["AWOOOP_URL"] = f"http://127.0.0.1:{port}"
        with open(os.path.join(tmp, "t2.out"), "w") as o:
            t2p = subprocess.Popen(["bash", "-euo", "pipefail", "-c", t2], cwd=tmp, env=env,
                                   stdout=o, stderr=subprocess.STDOUT, start_new_session=True)
            procs.append(t2p)
            try:
                rc = t2p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                rc = "timeout"
        out = open(os.path.join(tmp, "t2.out")).read()
        print(out[-6000:])
        check("terminal 2's commands exit 0", rc == 0, out)
        check("onboarded", "tenant ewoooc onboarded" in out, out)
        answer = re.search(r"^final: .*$", out, re.M)
        check("the agent answered in the chat", answer is not None, out)
        a = out[answer.start():] if answer else ""
        check("quoting the four tools",
              "worker-2b1d ERROR job failed" in a and "cpu (cores)" in a
              and "cron-55aa CrashLoopBackOff" in a and "INC-101: Order API latency" in a, out)
        check("the progress message", re.search(r"^. Run [0-9a-f]{8}: ", out, re.M) is not None, out)
        check("edited with where the agent is",
              re.search(r"^\(edit\) .* - (thinking|calling [a-z_]+), turn [1-5] of 8$", out, re.M)
              is not None, out)
        check("the run's calls: four tools, five turns",
              out.count('"kind": "tool"') == 4 and out.count('"kind": "model"') == 5, out)
        check("the tool calls audited", out.count('"action":"mcp.call"') >= 4, out)
    finally:
        for p in procs:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=15)
                    break
                except subprocess.TimeoutExpired:
                    pass
        if failed and os.environ.get("KEEP"):
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"first_agent: {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
