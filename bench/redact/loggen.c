/*
 * loggen.c - log text in the shapes people actually redact (see loggen.h).
 *
 * Every format is generated line by line from a seeded xorshift generator, so
 * a corpus is the same on every run. Clean corpora hold nothing any class
 * should match: hosts are names, not addresses, users are ids, not emails. A
 * dense corpus carries one secret of a rotating class about every 1 KB, put
 * where that format would carry it (a query string, a message, a JSON value).
 */
#include "loggen.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const loggen_formats[] = {"synthetic",  "nginx",   "apache", "syslog3164", "syslog5424",
				      "postgres",   "jsonl",   "k8s",	 "java",       "python",
				      "prometheus", "numeric", "agent",	 NULL};

static const char *const secrets[] = {
	"jane.doe@example.com",
	"+14155552671",
	"4111 1111 1111 1111",
	"10.20.30.40",
	"2001:db8::8a2e:370:7334",
	"AKIAIOSFODNN7EXAMPLE",
	"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"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",
	"xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
	"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"Authorization: Bearer c2VjcmV0LXRva2VuLXZhbHVlLTEyMw",
	"postgres://alice:s3cr3t@db.internal/app",
	"password=hunter2hunter2",
	"awk_HZpoKRzdLSXUjhp3JiTUc66JzdXmJiHlaCOpJqXZw14",
};
#define NFIXED (sizeof secrets / sizeof secrets[0])

/* The credentials agents leak, generated once from each provider's shape
 * (random characters of the documented alphabet and length; none is a real
 * key): {Xn} = n characters of alphabet X. Then a US SSN and an IBAN. */
static const char *const templates[] = {
	"sk-proj-{u74}T3BlbkFJ{u74}",
	"sk-ant-api03-{u93}AA",
	"AIzaSy{u33}",
	"hf_{l34}",
	"gsk_{A52}",
	"sk_live_{A24}",
	"glpat-{u20}",
	"https://hooks.slack.com/workflows/T{U10}/A{U10}/{d18}/{A24}",
	"{d10}:AA{u33}",
	"IQoJb3JpZ2luX2Vj{b300}",
	"SG.{u22}.{u43}",
	"hvs.CAES{u90}",
	"https://{h32}@o{d6}.ingest.sentry.io/{d7}",
};
#define NTEMPL (sizeof templates / sizeof templates[0])
#define NSECRETS (NFIXED + NTEMPL + 2)
static char generated[NTEMPL + 2][512];

static const char *alpha(char x)
{
	switch (x) {
	case 'A': return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	case 'l': return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	case 'U': return "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	case 'h': return "0123456789abcdef";
	case 'u': return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	case 'b': return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	default: return "0123456789";
	}
}

static uint64_t gx = 0x853c49e6748fea9bULL;

static uint32_t next_u32(void)
{
	gx ^= gx << 13;
	gx ^= gx >> 7;
	gx ^= gx << 17;
	return (uint32_t)(gx >> 11);
}
#define NEXT() next_u32()

static void generate_secrets(void)
{
	if (generated[0][0])
		return;
	for (size_t t = 0; t < NTEMPL; t++) {
		char *o = generated[t];
		for (const char *p = templates[t]; *p;) {
			if (*p != '{') {
				*o++ = *p++;
				continue;
			}
			const char *a = alpha(p[1]);
			char *e;
			long k = strtol(p + 2, &e, 10);
			for (long i = 0; i < k; i++)
				*o++ = a[NEXT() % strlen(a)];
			p = e + 1;
		}
		*o = '\0';
	}
	/* an SSN in an issued range, and a German IBAN with its check digits */
	unsigned area = 100 + NEXT() % 500, group = 10 + NEXT() % 90, serial = 1000 + NEXT() % 9000;
	snprintf(generated[NTEMPL], sizeof generated[0], "%03u-%02u-%04u", area, group, serial);
	char bban[19], num[32];
	for (int i = 0; i < 18; i++)
		bban[i] = (char)('0' + NEXT() % 10);
	bban[18] = '\0';
	snprintf(num, sizeof num, "%s131400", bban); /* D=13 E=14, "00" */
	unsigned rem = 0;
	for (char *p = num; *p; p++)
		rem = (rem * 10 + (unsigned)(*p - '0')) % 97;
	snprintf(generated[NTEMPL + 1], sizeof generated[0], "DE%02u%s", 98 - rem, bban);
}

static const char *const words[] = {"request", "handled",   "cache",  "miss",  "upstream",
				    "retry",   "scheduled", "worker", "lease", "renewed",
				    "policy",  "revision",  "loaded", "tool",  "call",
				    "timeout", "connected", "closed", "flush", "commit"};
#define NWORDS (sizeof words / sizeof words[0])
static const char *const hosts[] = {"api-7f9c", "web-2", "edge.eu-west", "billing-svc",
				    "gw-internal"};
static const char *const paths[] = {
	"/v1/projects/acme/runs", "/static/app.3f9a1c.js", "/healthz",
	"/v1/chat/completions",	  "/login?next=%2Fhome",   "/api/orders/123456/items?page=2"};
static const char *const agents[] = {
	"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "curl/7.88.1",
	"kube-probe/1.29", "python-requests/2.31.0",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15"};
static const char *const mons[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
				   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

typedef struct {
	uint64_t s;
	char *buf;
	size_t len, cap;
	size_t next_secret, planted;
	int dense;
} gen;

static uint32_t rnd(gen *g)
{
	g->s ^= g->s << 13;
	g->s ^= g->s >> 7;
	g->s ^= g->s << 17;
	return (uint32_t)g->s;
}

#define W(g) words[rnd(g) % NWORDS]

/* The secret for this line, or "" (about one per KB in a dense corpus). */
static const char *secret(gen *g)
{
	if (!g->dense || g->len < g->next_secret)
		return "";
	g->next_secret += 1024;
	g->planted++;
	size_t k = g->planted % NSECRETS;
	return k < NFIXED ? secrets[k] : generated[k - NFIXED];
}

static void put(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(gen *g, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line)
		n = sizeof line - 1;
	if (g->len + (size_t)n + 1 > g->cap) {
		g->cap = (g->len + (size_t)n + 1) * 2;
		g->buf = realloc(g->buf, g->cap);
		if (!g->buf)
			abort();
	}
	memcpy(g->buf + g->len, line, (size_t)n);
	g->len += (size_t)n;
	g->buf[g->len] = '\0';
}

/* ISO 8601 UTC with milliseconds for second-of-day t. */
static void iso(gen *g, char *out, size_t cap)
{
	snprintf(out, cap, "2026-12-01T%02u:%02u:%02u.%03uZ", rnd(g) % 24, rnd(g) % 60, rnd(g) % 60,
		 rnd(g) % 1000);
}

static void rnd_chars(gen *g, char *out, size_t n, const char *a)
{
	size_t al = strlen(a);
	for (size_t i = 0; i < n; i++)
		out[i] = a[rnd(g) % al];
	out[n] = '\0';
}

/* An agent's JSON lines: the request to the model (trace and span ids, some
 * numeric: "span": "4212201616914172" is an id, not a card), its answer with
 * a tool call and token usage, the tool's result - a config dump with a .env
 * file - and the run's step record. A dense corpus puts the secret where an
 * agent leaks it: the user's message, the tool's output, an .env line. */
static void agent_line(gen *g, const char *sec)
{
	static const char *const models[] = {"gpt-4o-2024-08-06", "claude-sonnet-4-20250514",
					     "gemini-2.0-flash", "llama3.1:70b", "qwen2.5:32b"};
	static const char *const tools[] = {"read_file", "search_logs", "kubectl_get", "http_get",
					    "query_metrics"};
	static const char *const env_keys[] = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN",
					       "STRIPE_SECRET_KEY", "SLACK_WEBHOOK_URL"};
	char ts[40], id[32], call[32], span[20], parent[20];
	const char *b62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	int has = sec[0] != 0;
	iso(g, ts, sizeof ts);
	rnd_chars(g, id, 29, b62);
	rnd_chars(g, call, 24, b62);
	/* numeric span ids, as some tracers write them: about one in ten is
	   Luhn-valid with a card's first digit */
	snprintf(span, sizeof span, "%u%07u%08u", 1 + rnd(g) % 9, rnd(g) % 10000000,
		 rnd(g) % 100000000);
	snprintf(parent, sizeof parent, "%u%07u%08u", 1 + rnd(g) % 9, rnd(g) % 10000000,
		 rnd(g) % 100000000);
	const char *model = models[rnd(g) % 5], *tool = tools[rnd(g) % 5];
	switch (rnd(g) % 4) {
	case 0:
		put(g,
		    "{\"ts\":\"%s\",\"type\":\"llm.request\",\"project\":\"acme\",\"trace_id\":"
		    "\"%08x%08x%08x%08x\",\"span\":\"%s\",\"parent\":\"%s\",\"model\":\"%s\","
		    "\"messages\":[{\"role\":\"system\",\"content\":\"You are the on-call "
		    "assistant for %s. Use tools; never print credentials.\"},{\"role\":\"user\","
		    "\"content\":\"why did the %s %s %s?%s%s\"}],\"max_tokens\":%u,\"temperature\":"
		    "0.%u,\"stream\":true}\n",
		    ts, rnd(g), rnd(g), rnd(g), rnd(g), span, parent, model, hosts[rnd(g) % 5],
		    W(g), W(g), W(g), has ? " it says " : "", sec, 256 << rnd(g) % 5, rnd(g) % 10);
		break;
	case 1:
		put(g,
		    "{\"ts\":\"%s\",\"type\":\"llm.response\",\"id\":\"chatcmpl-%s\",\"model\":"
		    "\"%s\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
		    "\"content\":\"Checking the %s %s.%s%s\",\"tool_calls\":[{\"id\":\"call_%s\","
		    "\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":"
		    "\"{\\\"path\\\":\\\"/srv/%s/.env\\\",\\\"lines\\\":%u}\"}}]},"
		    "\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":%u,"
		    "\"completion_tokens\":%u,\"total_tokens\":%u},\"span\":\"%s\"}\n",
		    ts, id, model, W(g), W(g), has ? " Found " : "", sec, call, tool,
		    hosts[rnd(g) % 5], rnd(g) % 200, rnd(g) % 100000, rnd(g) % 4000,
		    rnd(g) % 104000, span);
		break;
	case 2:
		put(g,
		    "{\"ts\":\"%s\",\"type\":\"tool.result\",\"tool\":\"%s\",\"call_id\":"
		    "\"call_%s\",\"parent\":\"%s\",\"is_error\":false,\"content\":[{\"type\":"
		    "\"text\",\"text\":\"# /srv/%s/.env\\nNODE_ENV=production\\nLOG_LEVEL=%s\\n"
		    "PORT=%u\\nDATABASE_URL=postgres://db.internal:5432/%s\\nREDIS_URL=redis://"
		    "cache:6379/%u\\nOTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4318\\n"
		    "MODEL=%s\\nMAX_TOKENS=%u\\n%s%s%s\"}]}\n",
		    ts, tool, call, parent, hosts[rnd(g) % 5], rnd(g) % 2 ? "info" : "debug",
		    8000 + rnd(g) % 1000, W(g), rnd(g) % 16, model, 1024 << rnd(g) % 4,
		    !has	       ? ""
		    : strchr(sec, ' ') ? "# "
				       : env_keys[rnd(g) % 5],
		    !has	       ? ""
		    : strchr(sec, ' ') ? ""
				       : "=",
		    sec);
		break;
	default:
		put(g,
		    "{\"ts\":\"%s\",\"type\":\"run.step\",\"run_id\":\"%08x-%04x-7%03x-%04x-"
		    "%08x%04x\",\"step\":%u,\"state\":\"%s\",\"span\":\"%s\",\"trace\":\"%s\","
		    "\"tokens\":{\"in\":%u,\"out\":%u},\"cost_usd\":0.%04u,\"note\":\"%s %s%s%s\"}\n",
		    ts, rnd(g), rnd(g) & 0xffff, rnd(g) & 0xfff, 0x8000 | (rnd(g) & 0x3fff), rnd(g),
		    rnd(g) & 0xffff, rnd(g) % 20, rnd(g) % 2 ? "running" : "succeeded", span,
		    parent, rnd(g) % 100000, rnd(g) % 4000, rnd(g) % 10000, W(g), W(g),
		    has ? " " : "", sec);
	}
}

/* One record of format f (several lines for stack traces). The secrets hold
 * no character JSON would escape, so they go into JSON strings as they are. */
static void one_line(gen *g, int f)
{
	char ts[40];
	const char *sec = secret(g);
	int has = sec[0] != 0;
	switch (f) {
	case 0: /* synthetic: the bench's original format */
		iso(g, ts, sizeof ts);
		put(g,
		    "%s INFO svc=%s req=%08x method=GET path=/v1/projects/p%u/runs status=%u "
		    "dur_ms=%u msg=\"%s %s %s\"%s%s\n",
		    ts, W(g), rnd(g), rnd(g) % 100, 200 + rnd(g) % 5, rnd(g) % 900, W(g), W(g),
		    W(g), has ? " extra=" : "", sec);
		break;
	case 1: /* nginx combined, client behind a named proxy */
		put(g,
		    "%s - - [01/Dec/2026:%02u:%02u:%02u +0000] \"GET %s%s%s HTTP/1.1\" %u %u \"-\" "
		    "\"%s\"\n",
		    hosts[rnd(g) % 5], rnd(g) % 24, rnd(g) % 60, rnd(g) % 60, paths[rnd(g) % 6],
		    has ? "?q=" : "", sec, 200 + (rnd(g) % 4) * 100, rnd(g) % 50000,
		    agents[rnd(g) % 5]);
		break;
	case 2: /* Apache combined + %D (microseconds) */
		put(g,
		    "%s - u%u [01/Dec/2026:%02u:%02u:%02u +0000] \"POST %s HTTP/1.1\" %u %u "
		    "\"https://%s.example/%s\" \"%s%s%s\" %u\n",
		    hosts[rnd(g) % 5], rnd(g) % 10000, rnd(g) % 24, rnd(g) % 60, rnd(g) % 60,
		    paths[rnd(g) % 6], 200 + (rnd(g) % 3), rnd(g) % 90000, hosts[rnd(g) % 5], W(g),
		    agents[rnd(g) % 5], has ? " " : "", sec, rnd(g) % 2000000);
		break;
	case 3: /* RFC 3164 */
		put(g, "<%u>%s %2u %02u:%02u:%02u %s %s[%u]: %s %s %s%s%s\n", rnd(g) % 191,
		    mons[rnd(g) % 12], 1 + rnd(g) % 28, rnd(g) % 24, rnd(g) % 60, rnd(g) % 60,
		    hosts[rnd(g) % 5], W(g), rnd(g) % 65536, W(g), W(g), W(g), has ? " " : "", sec);
		break;
	case 4: /* RFC 5424 with structured data */
		iso(g, ts, sizeof ts);
		put(g,
		    "<%u>1 %s %s.example.com %s %u ID%u [meta@32473 seq=\"%u\" iut=\"%u\"] %s %s%s%s\n",
		    rnd(g) % 191, ts, hosts[rnd(g) % 5], W(g), rnd(g) % 65536, rnd(g) % 100, rnd(g),
		    rnd(g) % 10, W(g), W(g), has ? " " : "", sec);
		break;
	case 5: /* PostgreSQL server log, lines ending in numbers */
		if (!has && rnd(g) % 3 == 0)
			put(g,
			    "2026-12-01 %02u:%02u:%02u.%03u UTC [%u] LOG:  checkpoint complete: wrote "
			    "%u buffers (%u.%u%%); 0 WAL file(s) added, 0 removed, %u recycled; "
			    "write=%u.%03u s, sync=0.%03u s, total=%u.%03u s; distance=%u kB, "
			    "estimate=%u kB\n",
			    rnd(g) % 24, rnd(g) % 60, rnd(g) % 60, rnd(g) % 1000, rnd(g) % 99999,
			    rnd(g) % 9999, rnd(g) % 99, rnd(g) % 10, rnd(g) % 9, rnd(g) % 300,
			    rnd(g) % 1000, rnd(g) % 1000, rnd(g) % 300, rnd(g) % 1000,
			    rnd(g) % 999999, rnd(g) % 999999);
		else
			put(g,
			    "2026-12-01 %02u:%02u:%02u.%03u UTC [%u] LOG:  duration: %u.%03u ms  "
			    "statement: SELECT id, state FROM runs WHERE project_id = '%s' AND note = '%s' AND id "
			    "> %u\n",
			    rnd(g) % 24, rnd(g) % 60, rnd(g) % 60, rnd(g) % 1000, rnd(g) % 99999,
			    rnd(g) % 900, rnd(g) % 1000, W(g), sec, rnd(g));
		break;
	case 6: /* JSON lines with trace ids, UUIDs and numbers */
		iso(g, ts, sizeof ts);
		put(g,
		    "{\"ts\":\"%s\",\"level\":\"info\",\"msg\":\"%s %s%s%s\",\"trace_id\":"
		    "\"%08x%08x%08x%08x\",\"span_id\":\"%08x%08x\",\"request_id\":"
		    "\"%08x-%04x-7%03x-%04x-%08x%04x\",\"user\":%u,\"duration_ms\":%u.%u,"
		    "\"bytes\":%u}\n",
		    ts, W(g), W(g), has ? " " : "", sec, rnd(g), rnd(g), rnd(g), rnd(g), rnd(g),
		    rnd(g), rnd(g), rnd(g) & 0xffff, rnd(g) & 0xfff, 0x8000 | (rnd(g) & 0x3fff),
		    rnd(g), rnd(g) & 0xffff, rnd(g) % 100000, rnd(g) % 5000, rnd(g) % 1000,
		    rnd(g) % 10000000);
		break;
	case 7: /* Kubernetes container log (CRI) around a klog line */
		put(g,
		    "2026-12-01T%02u:%02u:%02u.%09uZ stdout F I1201 %02u:%02u:%02u.%06u       1 "
		    "controller.go:%u] Reconciled pod default/web-%x-%x in %u.%03ums%s%s\n",
		    rnd(g) % 24, rnd(g) % 60, rnd(g) % 60, rnd(g) % 1000000000, rnd(g) % 24,
		    rnd(g) % 60, rnd(g) % 60, rnd(g) % 1000000, rnd(g) % 900, rnd(g),
		    rnd(g) & 0xfffff, rnd(g) % 200, rnd(g) % 1000, has ? " " : "", sec);
		break;
	case 8: /* Java: an error line and its stack trace */
		iso(g, ts, sizeof ts);
		put(g,
		    "%s ERROR [http-nio-8080-exec-%u] c.e.orders.OrderService - %s failed%s%s\n"
		    "java.lang.IllegalStateException: %s %s\n"
		    "\tat com.example.orders.OrderService.place(OrderService.java:%u)\n"
		    "\tat com.example.orders.OrderController.create(OrderController.java:%u)\n"
		    "\tat org.springframework.web.method.support.InvocableHandlerMethod.invoke"
		    "(InvocableHandlerMethod.java:%u)\n"
		    "\t... %u more\n",
		    ts, rnd(g) % 200, W(g), has ? ": " : "", sec, W(g), W(g), rnd(g) % 900,
		    rnd(g) % 900, rnd(g) % 900, rnd(g) % 90);
		break;
	case 9: /* Python traceback */
		put(g,
		    "Traceback (most recent call last):\n"
		    "  File \"/app/service/%s.py\", line %u, in handle\n"
		    "    result = self.%s(payload)\n"
		    "  File \"/usr/lib/python3.11/json/decoder.py\", line %u, in decode\n"
		    "    obj, end = self.raw_decode(s, idx=_w(s, 0).end())\n"
		    "ValueError: %s %s at offset %u%s%s\n",
		    W(g), rnd(g) % 900, W(g), rnd(g) % 400, W(g), W(g), rnd(g) % 100000,
		    has ? " " : "", sec);
		break;
	case 10: /* Prometheus exposition: VALUE TIMESTAMP */
		put(g,
		    "http_requests_total{method=\"%s\",code=\"%u\",handler=\"%s\",note=\"%s\"} %u "
		    "17330%08u\n",
		    rnd(g) % 2 ? "get" : "post", 200 + (rnd(g) % 4) * 100, W(g), sec,
		    rnd(g) % 100000, rnd(g) % 100000000);
		break;
	case 12: /* agent traffic: LLM requests and answers, tool calls, .env dumps */
		agent_line(g, sec);
		break;
	default: /* numeric: every line ends in a number, the next starts with a date */
		iso(g, ts, sizeof ts);
		put(g, "%s worker=%u processed batch %s items=%u%s%s bytes=%u\n", ts, rnd(g) % 64,
		    W(g), rnd(g) % 100000, has ? " note=" : "", sec, rnd(g) % 99999999);
	}
}

int loggen_format_index(const char *name)
{
	for (int i = 0; loggen_formats[i]; i++)
		if (strcmp(name, loggen_formats[i]) == 0)
			return i;
	return -1;
}

char *loggen(int format, size_t size, int dense, size_t *len, size_t *planted)
{
	generate_secrets();
	gen g = {.s = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(format + 1) * 0x100000001b3ULL,
		 .next_secret = 1024,
		 .dense = dense};
	while (g.len < size)
		one_line(&g, format);
	*len = g.len;
	*planted = g.planted;
	return g.buf;
}

/* ------------------------------------------------------------------ grid */

/* One digit run in a shape log lines carry it in: a counter, a port, a pid,
 * a label value, a line number, a duration, a bare field. nd: its digits. */
static int grid_run(gen *g, char *o, size_t cap, unsigned nd, int last)
{
	static const char *const keys[] = {"n",	   "port",  "pid",   "attempt", "took",
					   "code", "count", "bytes", "shard",	"seq"};
	unsigned v = 0;
	for (unsigned i = 0; i < nd; i++)
		v = v * 10 + (i ? rnd(g) % 10 : 1 + rnd(g) % 9);
	if (nd > 9) /* an epoch in seconds: ten digits */
		return snprintf(o, cap, " 17%08u", rnd(g) % 100000000);
	if (last) { /* the line ends in it */
		switch (rnd(g) % 4) {
		case 0: return snprintf(o, cap, " %u", v);
		case 1: return snprintf(o, cap, " %s=%u", keys[rnd(g) % 10], v);
		case 2: return snprintf(o, cap, " (%s.java:%u)", W(g), v);
		default: return snprintf(o, cap, " %s:%u", hosts[rnd(g) % 5], v);
		}
	}
	switch (rnd(g) % 7) {
	case 0: return snprintf(o, cap, " %s=%u", keys[rnd(g) % 10], v);
	case 1: return snprintf(o, cap, " [%u]", v);
	case 2: return snprintf(o, cap, " %s=\"%u\"", keys[rnd(g) % 10], v);
	case 3: return snprintf(o, cap, " %s:%u", hosts[rnd(g) % 5], v);
	case 4: return snprintf(o, cap, " %ums", v);
	case 5: return snprintf(o, cap, " #%u", v);
	default: return snprintf(o, cap, " %u", v);
	}
}

/* A line of about linelen bytes with `runs` digit runs of 1-6 digits (a few
 * of 10) among words and dotted names, the last run at the line's end when
 * endnum; when the runs alone are longer than linelen the line is longer. */
static void grid_line(gen *g, int linelen, int runs, int endnum)
{
	static const char *const names[] = {"com.example.orders.OrderService", "io.netty.channel",
					    "controller.go", "kube-proxy", "web-7f9c.default"};
	char tok[16][48], line[1024];
	int tl[16], total = 0, n = runs < 16 ? runs : 16;
	const char *sec = secret(g);
	for (int i = 0; i < n; i++) {
		unsigned nd = rnd(g) % 16 == 0 ? 10 : 1 + rnd(g) % 6;
		if (linelen < 80 && nd > 3 && runs > 3)
			nd = 1 + rnd(g) % 3; /* short lines with many runs: short runs */
		tl[i] = grid_run(g, tok[i], sizeof tok[i], nd, endnum && i == n - 1);
		total += tl[i];
	}
	/* words between the runs (not after the last one when it ends the line) */
	int o = 0, gaps = n + 1, budget = linelen - 1 - total - (int)strlen(sec);
	for (int i = 0; i <= n; i++) {
		if (i == n && endnum && n)
			break;
		int share = budget > 0 ? budget / gaps : 0, used = 0;
		if (i == 0)
			share = share > 3 ? share : 3;
		gaps--;
		while (used < share && o < 900) {
			const char *w = rnd(g) % 4 ? W(g) : names[rnd(g) % 5];
			int k = snprintf(line + o, sizeof line - (size_t)o, "%s%s",
					 o && line[o - 1] != ' ' ? " " : "", w);
			o += k;
			used += k;
		}
		budget -= used;
		if (i == 0 && sec[0])
			o += snprintf(line + o, sizeof line - (size_t)o, " %s", sec);
		/* a bare number right after a number ("6287 657 5882 152367 6807")
		   can be a card's grouping by chance, Luhn and all: a word between */
		if (i < n && o && line[o - 1] >= '0' && line[o - 1] <= '9' && tok[i][1] >= '0' &&
		    tok[i][1] <= '9')
			o += snprintf(line + o, sizeof line - (size_t)o, " %s", W(g));
		if (i < n && o < 900) {
			memcpy(line + o, tok[i], (size_t)tl[i]);
			o += tl[i];
		}
	}
	line[o] = '\0';
	put(g, "%s\n", line);
}

char *loggen_grid(int linelen, int runs, int endnum, size_t size, int dense, size_t *len,
		  size_t *planted)
{
	generate_secrets();
	gen g = {.s = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(linelen * 131 + runs * 7 + endnum + 1),
		 .next_secret = 1024,
		 .dense = dense};
	while (g.len < size)
		grid_line(&g, linelen, runs, endnum);
	*len = g.len;
	*planted = g.planted;
	return g.buf;
}

char *loggen_named(const char *name, size_t size, int dense, size_t *len, size_t *planted)
{
	int l, r, e;
	if (sscanf(name, "grid:%d:%d:%d", &l, &r, &e) == 3 && l > 0 && l <= 800 && r >= 0 &&
	    r <= 16)
		return loggen_grid(l, r, e != 0, size, dense, len, planted);
	int f = loggen_format_index(name);
	return f < 0 ? NULL : loggen(f, size, dense, len, planted);
}
