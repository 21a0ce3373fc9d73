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


def blocks(readme):
    text = open(readme, encoding="utf-8").read()
    section = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)


def main(src, build):
    tmp = tempfile.mkdtemp(prefix="aw-quickstart.")
    # as root the tool server's sandbox runs as nobody, which must reach the
    # server's path through this directory (the README says so too)
    os.chmod(tmp, 0o755)
    procs = []
    failed = []

    def check(name, ok, detail=""):
        print(("ok    " if ok else "FAIL  ") + name)
        if not ok:
            failed.append(name)
            if detail:
                print(detail[-3000:])

    try:
        os.symlink(os.path.abspath(build), os.path.join(tmp, "build"))
        shutil.copytree(os.path.join(src, "examples", "quickstart"),
                        os.path.join(tmp, "examples", "quickstart"))
        fake = free_port()
        # the dead upstream: a port bound and never listened on, kept for the
        # test's length, so connecting is refused and nobody else takes it
        hold = socket.socket()
        hold.bind(("127.0.0.1", 0))
        dead = hold.getsockname()[1]
        llm = os.path.join(tmp, "examples", "quickstart", "llm.json")
        cfg = open(llm).read()
        check("llm.json names ports 9001 and 9002", "9001" in cfg and "9002" in cfg)
        open(llm, "w").write(cfg.replace("9001", str(fake)).replace("9002", str(dead)))

        bl = blocks(os.path.join(src, "README.md"))
        check("the quickstart has its shell blocks", len(bl) >= 5, repr(bl))
        first, rest = bl[0], bl[1:]
        check("step 1 runs make run", "make run" in first, first)

        # terminal 1: the exports, then the server in place of `make run`
        t1 = first.replace("make run", "exec ./build/awooop serve --listen 127.0.0.1:0")
        serve_log = open(os.path.join(tmp, "serve.err"), "w")
        serve_out = os.path.join(tmp, "serve.out")
        # a clean environment: the reader's settings are the README's; a
        # sanitizer build's tool server cannot live under RLIMIT_DATA
        env1 = {k: v for k, v in os.environ.items()
                if not k.startswith("AWOOOP_") or k == "AWOOOP_MCP_STDIO_MEMORY_MB"}
        procs.append(subprocess.Popen(["bash", "-euc", t1], cwd=tmp, env=env1,
                                      stdout=open(serve_out, "w"), stderr=serve_log,
                                      start_new_session=True))
        key, port = None, None
        for _ in range(300):
            out = open(serve_out).read()
            m = re.search(r"^(awk_\S+)$", out, re.M)
            log = open(os.path.join(tmp, "serve.err")).read()
            p = re.search(r'"msg":"awooop serving".*?"port":"?(\d+)', log)
            if m and p:
                key, port = m.group(1), p.group(1)
                break
            time.sleep(0.1)
        check("make run printed the platform-admin key and serves", key and port,
              open(os.path.join(tmp, "serve.err")).read())
        if not (key and port):
            return 1

        # terminal 2: every later block, in one shell, as written
        t2 = "\n".join(rest)
        t2 = re.sub(r"^export AWOOOP_KEY=awk_\.\.\..*$", f"export AWOOOP_KEY={key}", t2,
                    flags=re.M)
        t2 = t2.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        t2 = t2.replace("--port 9001", f"--port {fake}")
        # a reader takes longer between two commands than the gateway's
        # recorder lingers before it writes a call's audit record (10 ms)
        t2 = re.sub(r"^(\./build/awooop audit export)", r"sleep 1; \1", t2, flags=re.M)
        t2 += "\nkill %1\n"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWOOOP_")}
        env["AWOOOP_URL"] = f"http://127.0.0.1:{port}"  # the CLI's default is :8080
        # its output to a file: the fake model server started with `&` holds
        # the shell's stdout, a pipe would not end while it lives
        with open(os.path.join(tmp, "t2.out"), "w") as o:
            t2p = subprocess.Popen(["bash", "-euo", "pipefail", "-c", t2], cwd=tmp, env=env,
                                   stdout=o, stderr=subprocess.STDOUT, start_new_session=True)
            procs.append(t2p)
            try:
                rc = t2p.wait(timeout=240)
            except subprocess.TimeoutExpired:
                rc = "timeout"
        out = open(os.path.join(tmp, "t2.out")).read()
        print(out[-6000:])
        check("terminal 2's commands exit 0", rc == 0, out)
        check("onboarded", "tenant demo onboarded" in out, out)
        check("awooop llm printed the answer",
              re.search(r"^fake: t0 t1 t2 t3 t4 t5 t6 t7$", out, re.M) is not None, out)
        check("the OpenAI-style call answered",
              '"message":{"role":"assistant","content":"fake: t0' in out, out)
        check("the audit record shows the route and the failover",
              '"route":"chat"' in out and '"upstream":"openai"' in out
              and '"upstream_model":"gpt-4o-mini"' in out
              and '"attempts":2,"failovers":1' in out, out)
        check("the tool answered through the MCP gateway",
              '"result":{"content":[{"type":"text","text":"INC-101: Order API latency above SLO'
              in out, out)
        check("the run succeeded with both steps' results",
              '"state": "succeeded"' in out and '"text": "INC-101' in out
              and '"content": "fake: t0' in out, out)
        check("the budget counted the tokens", "tokens settled" in out, out)
        check("the audit chain is intact", "audit chain of demo intact" in out, out)
    finally:
        for p in procs:  # each in a session of its own, with what it started
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
    print(f"quickstart: {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
