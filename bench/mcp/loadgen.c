/*
 * loadgen.c - the lean load generator of bench/mcp: MCP tools/call over
 * Streamable HTTP with as little client work as possible, so the servers'
 * time is what is measured. libcurl multi, one keep-alive connection and one
 * legacy session per client (initialize + notifications/initialized first,
 * not timed), then each client sends its next call as soon as the last one
 * is answered, until the time is up. Answers may be JSON or SSE; a call
 * counts as an error unless its answer holds a "result".
 *
 *   loadgen URL TOOL CLIENTS SECONDS [HEADER...]
 *
 * Prints one JSON line: calls, errors, calls_per_s, p50_ms, p90_ms, p99_ms.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
	CURL *h;
	struct curl_slist *hdr;
	char session[128];
	char body[65536];
	size_t len;
	double t0;
	int phase; /* 0 initialize, 1 initialized, 2 calls */
} client;

static const char *url, *tool;
static char **extra;
static int nextra;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	client *c = ud;
	size_t len = sz * n, room = sizeof c->body - 1 - c->len;
	memcpy(c->body + c->len, p, len < room ? len : room);
	c->len += len < room ? len : room;
	c->body[c->len] = 0;
	return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	client *c = ud;
	size_t len = sz * n;
	if (len > 15 && !strncasecmp(p, "mcp-session-id:", 15)) {
		const char *v = p + 15;
		while (*v == ' ')
			v++;
		size_t vl = strcspn(v, "\r\n");
		if (vl < sizeof c->session) {
			memcpy(c->session, v, vl);
			c->session[vl] = 0;
		}
	}
	return len;
}

static void send_next(CURLM *m, client *c)
{
	static const char *init =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		"\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
		"\"clientInfo\":{\"name\":\"loadgen\",\"version\":\"1\"}}}";
	static const char *inited =
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
	static char call[512];
	if (!call[0])
		snprintf(call, sizeof call,
			 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
			 "\"name\":\"%s\",\"arguments\":{\"message\":\"hello\"}}}",
			 tool);
	curl_slist_free_all(c->hdr);
	c->hdr = curl_slist_append(NULL, "Content-Type: application/json");
	c->hdr = curl_slist_append(c->hdr, "Accept: application/json, text/event-stream");
	for (int i = 0; i < nextra; i++)
		c->hdr = curl_slist_append(c->hdr, extra[i]);
	if (c->phase > 0) {
		char h[200];
		snprintf(h, sizeof h, "Mcp-Session-Id: %s", c->session);
		c->hdr = curl_slist_append(c->hdr, h);
		c->hdr = curl_slist_append(c->hdr, "MCP-Protocol-Version: 2025-11-25");
	}
	const char *b = c->phase == 0 ? init : c->phase == 1 ? inited : call;
	curl_multi_remove_handle(m, c->h);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdr);
	curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, b);
	c->len = 0;
	c->body[0] = 0;
	c->t0 = now_ms();
	curl_multi_add_handle(m, c->h);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: loadgen URL TOOL CLIENTS SECONDS [HEADER...]\n");
		return 2;
	}
	url = argv[1];
	tool = argv[2];
	int n = (int)strtol(argv[3], NULL, 10);
	double secs = strtod(argv[4], NULL);
	extra = argv + 5;
	nextra = argc - 5;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURLM *m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)n);
	client *cs = calloc((size_t)n, sizeof *cs);
	size_t cap = 1 << 20, ncalls = 0;
	double *lat = malloc(cap * sizeof *lat);
	long errors = 0;
	for (int i = 0; i < n; i++) {
		cs[i].h = curl_easy_init();
		curl_easy_setopt(cs[i].h, CURLOPT_URL, url);
		curl_easy_setopt(cs[i].h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(cs[i].h, CURLOPT_WRITEDATA, &cs[i]);
		curl_easy_setopt(cs[i].h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(cs[i].h, CURLOPT_HEADERDATA, &cs[i]);
		curl_easy_setopt(cs[i].h, CURLOPT_PRIVATE, &cs[i]);
		curl_easy_setopt(cs[i].h, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(cs[i].h, CURLOPT_FORBID_REUSE, 0L);
		send_next(m, &cs[i]);
	}
	double start = 0, end = 0;
	int ready = 0, running = 1, active = n;
	while (running) {
		int still;
		curl_multi_perform(m, &still);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			client *c;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			double t = now_ms();
			int ok = msg->data.result == CURLE_OK;
			if (c->phase < 2) {
				if (!ok || (c->phase == 0 && !c->session[0])) {
					fprintf(stderr, "loadgen: initialize failed: %s\n",
						c->body);
					return 1;
				}
				if (++c->phase == 2 && ++ready == n)
					start = now_ms(), end = start + secs * 1000;
			} else if (start && t <= end) {
				if (!ok || !strstr(c->body, "\"result\""))
					errors++;
				if (ncalls == cap)
					lat = realloc(lat, (cap *= 2) * sizeof *lat);
				lat[ncalls++] = t - c->t0;
			}
			if (ready == n && t > end) {
				curl_multi_remove_handle(m, c->h);
				if (--active == 0)
					running = 0;
				continue;
			}
			send_next(m, c);
		}
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	qsort(lat, ncalls, sizeof *lat, cmp);
#define PCT(p) (ncalls ? lat[(size_t)((double)(ncalls - 1) * (p))] : 0)
	printf("{\"calls\":%zu,\"errors\":%ld,\"calls_per_s\":%.1f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,"
	       "\"p99_ms\":%.3f}\n",
	       ncalls, errors, (double)ncalls / secs, PCT(0.5), PCT(0.9), PCT(0.99));
	return 0;
}
