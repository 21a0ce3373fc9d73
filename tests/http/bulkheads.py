#!/usr/bin/env python3
"""bulkheads.py - one tenant holds its share of a shared resource of the API
server, the others pass at once, and its extra requests are refused with the
bound's code and Retry-After (issue 39):
  bulkheads.py URL HOLD ADMIN_KEY ALPHA_OP ALPHA_ADMIN BETA_OP GAMMA_OP
HOLD says how to hold the store's writes from outside: psql://... (a row lock
on the projects alpha and gamma) or sqlite:PATH (the database's write lock).
The server runs with --pool-size 8 --project-pool 2,gamma=3 --body-limit 4096
--body-memory 65536 --project-body-memory 8192,gamma=16384
--anon-body-memory 4096 (bulkheads_test.sh starts it so).
Prints 'N passed, M failed' and the failures; exit 1 on any failure."""
import json, socket, sqlite3, subprocess, sys, threading, time, urllib.parse

URL, HOLD, ADMIN, A, AA, B, G = sys.argv[1:8]
PORT = urllib.parse.urlparse(URL).port
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", name, detail)


def run_body(size):
    """A valid run submission of exactly size bytes (padded with spaces)."""
    core = b'{"workflow":[{"kind":"sleep","args":{"ms":1}}]'
    return core + b" " * (size - len(core) - 1) + b"}"


def head(method, path, key=None, cl=None, chunked=False, extra=b""):
    h = b"%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" % (method.encode(), path.encode())
    if key:
        h += b"Authorization: Bearer %s\r\n" % key.encode()
    if cl is not None or chunked:
        h += b"Content-Type: application/json\r\n"
    if cl is not None:
        h += b"Content-Length: %d\r\n" % cl
    if chunked:
        h += b"Transfer-Encoding: chunked\r\n"
    return h + extra + b"\r\n"


def connect():
    s = socket.socket()
    s.settimeout(10)
    s.connect(("127.0.0.1", PORT))
    return s


def answer(s, t0):
    """Reads one answer: (status, headers, body as JSON or None, seconds)."""
    buf = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            if b"\r\n\r\n" in buf:
                hd, _, body = buf.partition(b"\r\n\r\n")
                cl = [l for l in hd.split(b"\r\n") if l.lower().startswith(b"content-length:")]
                if cl and len(body) >= int(cl[0].split(b":")[1]):
                    break
    except (socket.timeout, ConnectionResetError):
        pass
    dt = time.monotonic() - t0
    s.close()
    if not buf.startswith(b"HTTP/1.1 "):
        return None, {}, None, dt
    hd, _, body = buf.partition(b"\r\n\r\n")
    lines = hd.split(b"\r\n")
    hdrs = {}
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        hdrs[k.strip().lower().decode()] = v.strip().decode()
    try:
        doc = json.loads(body.decode()) if body else None
    except ValueError:
        doc = None
    return int(lines[0].split(b" ")[1]), hdrs, doc, dt


def req(method, path, key=None, body=None, send_body=True, chunked=None):
    """One request on a new connection; the body is sent after the head (or
    not at all: then the answer must come from the head)."""
    s = connect()
    t0 = time.monotonic()
    if chunked is not None:
        s.sendall(head(method, path, key, chunked=True))
        s.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunked), chunked))
    else:
        s.sendall(head(method, path, key, None if body is None else len(body)))
        if body is not None and send_body:
            try:
                s.sendall(body)
            except OSError:
                pass
    return answer(s, t0)


def hold_upload(path, key, cl):
    """An upload that declares cl bytes and sends 100: its body is held."""
    s = connect()
    s.sendall(head("POST", path, key, cl) + b" " * 100)
    return s


def code(doc):
    if not isinstance(doc, dict):
        return None
    if "code" in doc:
        return doc["code"]
    return ((doc.get("error") or {}).get("data") or {}).get("code")  # JSON-RPC


def refused(name, got, want_code, status=429, fast=1.0):
    st, hd, doc, dt = got
    check(name + ": %d %s" % (status, want_code), st == status and code(doc) == want_code,
          (st, doc))
    if status == 429:
        check(name + ": Retry-After", hd.get("retry-after") == "1", hd)
    check(name + ": at once", dt < fast, "%.3f s" % dt)


def answered(name, got, ok=lambda st: 200 <= st < 300, fast=2.0):
    st, _, doc, dt = got
    check(name, st is not None and ok(st), (st, doc))
    check(name + ": at once", dt < fast, "%.3f s" % dt)


RUNS = "/v1/platform/runs"
APPROVE = "/v1/platform/runs/0190b7a0-0000-7000-8000-000000000000/approve"

# ---- 1. request-body memory per project ---------------------------------
# alpha holds its bound (8192): two slow uploads of 4000 bytes
held = [hold_upload(RUNS, A, 4000) for _ in range(2)]
time.sleep(0.3)
refused("alpha's third upload, from its head", req("POST", RUNS, A, run_body(4000), send_body=False),
        "E-REQ-014")
refused("alpha's small upload", req("POST", RUNS, A, run_body(300)), "E-REQ-014")
got = req("POST", "/v1/projects/alpha/mcp", A, b'{"jsonrpc":"2.0"}' + b" " * 300)
refused("alpha's MCP call with a body", got, "E-REQ-014")
check("alpha's MCP call: refused in JSON-RPC, as the endpoint answers",
      isinstance(got[2], dict) and got[2].get("jsonrpc") == "2.0", got[2])
# a tenant does not borrow another project's bound by naming it in the URL:
# its key's project is counted (gamma's bound is twice alpha's)
refused("alpha's key on gamma's URL", req("POST", "/v1/projects/gamma/keys", AA, b'{"name":"x","scope":"reader"}' + b" " * 300),
        "E-REQ-014")
answered("alpha's requests without a body pass", req("GET", "/v1/projects/alpha", A),
         ok=lambda st: st == 200)
answered("beta's upload passes beside alpha's", req("POST", RUNS, B, run_body(4000)))
answered("the platform's upload passes", req("POST", "/v1/projects", ADMIN, b'{"id":"delta"}'))
# a chunked upload is counted as it comes: past the bound it is dropped,
# then refused
st, hd, doc, dt = req("POST", RUNS, A, chunked=b" " * 300)
check("alpha's chunked upload: 429 E-REQ-014", st == 429 and code(doc) == "E-REQ-014", (st, doc))
check("alpha's chunked upload: Retry-After", hd.get("retry-after") == "1", hd)
for s in held:
    s.close()
time.sleep(0.3)  # the server sees them go
answered("alpha's upload passes once its own ended", req("POST", RUNS, A, run_body(4000)))

# gamma's bound is the platform's override: 16384, four uploads of 4000
held = [hold_upload(RUNS, G, 4000) for _ in range(4)]
time.sleep(0.3)
for i, s in enumerate(held):
    s.setblocking(False)
    try:
        early = s.recv(100)
    except BlockingIOError:
        early = b""
    check("gamma's upload %d held, not refused (the override)" % (i + 1), early == b"", early)
refused("gamma's fifth upload", req("POST", RUNS, G, run_body(4000), send_body=False), "E-REQ-014")
for s in held:
    s.close()

# ---- 2. requests without a valid key: a small allowance -----------------
held = [hold_upload(APPROVE, None, 4000)]
time.sleep(0.3)
refused("a second upload without a key", req("POST", APPROVE, None, b" " * 4000, send_body=False),
        "E-REQ-015")
answered("beta passes beside them", req("POST", RUNS, B, run_body(2000)))
# a bad key is refused before its body is kept: not counted anywhere, so not 429
st, _, doc, _ = req("POST", "/v1/projects/alpha/mcp", "awk_" + "x" * 43, b" " * 4000)
check("MCP with a bad key: 401 E-MCP-GATE-001 (JSON-RPC), not the allowance",
      st == 401 and code(doc) == "E-MCP-GATE-001", (st, doc))
st, _, doc, _ = req("POST", "/v1/projects/alpha/mcp", None, b" " * 4000)
check("MCP without a key: 401 E-MCP-GATE-001", st == 401 and code(doc) == "E-MCP-GATE-001", (st, doc))
st, _, doc, _ = req("POST", APPROVE, "awk_" + "x" * 43, b" " * 4000)
check("an approval with a bad key: 401 E-AUTH-002", st == 401 and code(doc) == "E-AUTH-002", (st, doc))
st, _, doc, _ = req("POST", RUNS, "awk_" + "x" * 43, b" " * 4000)
check("a bad key: 401 E-AUTH-002 from the head", st == 401 and code(doc) == "E-AUTH-002", (st, doc))
for s in held:
    s.close()
time.sleep(0.3)
st, _, doc, _ = req("POST", APPROVE, None, b'{"token":"x.y.z"}')
check("without a key again: the token is judged", st == 401 and code(doc) == "E-APPROVAL-001", (st, doc))

# ---- 3. store connections per project ------------------------------------
# From outside, alpha's and gamma's writes are made to wait (a row lock on
# their projects; SQLite: its one writer): each of their write requests
# holds a store connection meanwhile.
HOLD_S = 3.0
if HOLD.startswith("psql://"):
    holder = subprocess.Popen(
        ["psql", "-q", HOLD.replace("psql://", "postgresql://"), "-c",
         "BEGIN; SELECT 1 FROM awooop.projects WHERE project_id IN ('alpha','gamma') FOR UPDATE; "
         "SELECT pg_sleep(%s); COMMIT;" % HOLD_S],
        stdout=subprocess.DEVNULL)
    end_hold = holder.wait
else:
    db = sqlite3.connect(HOLD[len("sqlite:"):], isolation_level=None, check_same_thread=False)
    db.execute("BEGIN IMMEDIATE")
    t = threading.Timer(HOLD_S, lambda: db.execute("COMMIT"))
    t.start()
    end_hold = t.join
time.sleep(0.5)
results = {}


def write(name, key):
    results[name] = req("POST", RUNS, key, run_body(200))


threads = [threading.Thread(target=write, args=("alpha%d" % i, A)) for i in range(2)]
threads += [threading.Thread(target=write, args=("gamma%d" % i, G)) for i in range(3)]
for th in threads:  # one after the other: each is taken by an idle server thread
    th.start()
    time.sleep(0.1)
time.sleep(0.3)
t0 = time.monotonic()
st, hd, doc, dt = req("GET", "/v1/projects/alpha", A)
check("alpha past its 2 connections: 429 E-STORE-007", st == 429 and code(doc) == "E-STORE-007", (st, doc))
check("alpha past its connections: Retry-After", hd.get("retry-after") == "1", hd)
check("alpha past its connections: after a short wait", 0.1 < dt < 2.0, "%.3f s" % dt)
answered("beta's read passes beside alpha's held connections", req("GET", "/v1/projects/beta", B),
         ok=lambda st: st == 200, fast=1.0)
answered("beta's list passes", req("GET", RUNS, B), ok=lambda st: st == 200, fast=1.0)
if HOLD.startswith("psql://"):  # SQLite has one writer for everybody
    answered("beta's write passes", req("POST", RUNS, B, run_body(200)), fast=1.0)
answered("the platform's key on alpha's project passes (its own count)",
         req("GET", "/v1/projects/alpha", ADMIN), ok=lambda st: st == 200, fast=1.0)
st, _, doc, _ = req("GET", "/v1/projects/gamma", G)
check("gamma past its 3 connections (the override): 429 E-STORE-007",
      st == 429 and code(doc) == "E-STORE-007", (st, doc))
held_for = time.monotonic() - t0
end_hold()
for th in threads:
    th.join()
check("the checks ran while the writes were held", held_for < HOLD_S - 0.5, "%.2f s" % held_for)
for name in sorted(results):
    st, _, doc, _ = results[name]
    check("%s's held write completed (not refused)" % name, st is not None and 200 <= st < 300, (st, doc))
answered("alpha passes again", req("GET", "/v1/projects/alpha", A), ok=lambda st: st == 200)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
