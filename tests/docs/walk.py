"""walk.py - what the tests that run a document's shell blocks as written
share (quickstart_test.py, first_agent_test.py): a scratch directory holding
`build` (a link to this build), the two terminals a reader opens, the checks,
and a cleanup that stops every process the blocks started.

Terminal 1 is the first block with `make run` replaced by `./build/awooop
serve` on a port the kernel picks; the server's printed platform-admin key
and its port are read back. Terminal 2 is every later block in one shell,
with `export AWOOOP_KEY=awk_...` given that key, 127.0.0.1:8080 that port,
and a second's pause before an audit export (a reader takes longer between
two commands than the gateway's recorder lingers before it writes a call's
audit record)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def sh_blocks(text):
    return re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)


class Walk:
    def __init__(self, name, build):
        self.name = name
        self.tmp = tempfile.mkdtemp(prefix=f"aw-{name}.")
        # as root the tool server's sandbox runs as nobody, which must reach
        # the server's path through this directory (the docs say so too)
        os.chmod(self.tmp, 0o755)
        os.symlink(os.path.abspath(build), os.path.join(self.tmp, "build"))
        self.procs, self.failed = [], []

    def path(self, *p):
        return os.path.join(self.tmp, *p)

    def check(self, name, ok, detail=""):
        print(("ok    " if ok else "FAIL  ") + name)
        if not ok:
            self.failed.append(name)
            if detail:
                print(detail[-3000:])

    def terminal1(self, block):
        """Starts the first block; (key, port), or (None, None) (checked)."""
        self.check("step 1 runs make run", "make run" in block, block)
        t1 = block.replace("make run", "exec ./build/awooop serve --listen 127.0.0.1:0")
        out, err = self.path("serve.out"), self.path("serve.err")
        # a clean environment: the reader's settings are the document's; a
        # sanitizer build's tool server cannot live under RLIMIT_DATA
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AWOOOP_") or k == "AWOOOP_MCP_STDIO_MEMORY_MB"}
        self.procs.append(subprocess.Popen(["bash", "-euc", t1], cwd=self.tmp, env=env,
                                           stdout=open(out, "w"), stderr=open(err, "w"),
                                           start_new_session=True))
        key = port = None
        for _ in range(300):
            m = re.search(r"^(awk_\S+)$", open(out).read(), re.M)
            p = re.search(r'"msg":"awooop serving".*?"port":"?(\d+)', open(err).read())
            if m and p:
                key, port = m.group(1), p.group(1)
                break
            time.sleep(0.1)
        self.check("make run printed the platform-admin key and serves", key and port,
                   open(err).read())
        return key, port

    def terminal2(self, text, key, port, timeout):
        """Runs the later blocks in one shell; (exit code or "timeout", output)."""
        t2 = re.sub(r"^export AWOOOP_KEY=awk_\.\.\..*$", f"export AWOOOP_KEY={key}", text,
                    flags=re.M)
        t2 = t2.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        t2 = re.sub(r"^(\./build/awooop audit export)", r"sleep 1; \1", t2, flags=re.M)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWOOOP_")}
        env["AWOOOP_URL"] = f"http://127.0.0.1:{port}"  # the CLI's default is :8080
        # its output to a file: a fake started with `&` holds the shell's
        # stdout, a pipe would not end while it lives
        with open(self.path("t2.out"), "w") as o:
            p = subprocess.Popen(["bash", "-euo", "pipefail", "-c", t2], cwd=self.tmp, env=env,
                                 stdout=o, stderr=subprocess.STDOUT, start_new_session=True)
            self.procs.append(p)
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                rc = "timeout"
        out = open(self.path("t2.out")).read()
        print(out[-6000:])
        self.check("terminal 2's commands exit 0", rc == 0, out)
        return rc, out

    def close(self):
        """Stops every process (each in a session of its own, with what it
        started), removes the directory (kept with KEEP=1 on a failure);
        the exit code."""
        for p in self.procs:
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
        if self.failed and os.environ.get("KEEP"):
            print("kept", self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        print(f"{self.name}: {len(self.failed)} failed")
        return 1 if self.failed else 0
