/*
 * fairgen.c - the client of bench/fair: one tenant's calls through a gateway,
 * either as the probe (tenant B's cheap call, paced, every call counted) or
 * as the flood (tenant A's worst shape, cut at the deadline).
 *
 *   fairgen [options] URL [HEADER...]
 *     -k KIND   mcp-list | mcp-call | llm (default llm)
 *     -t TOOL   the tool of mcp-call; -a JSON its arguments (default {})
 *     -m MODEL  the model of llm; -s streamed (stream_options.include_usage)
 *     -c N      clients, each one call at a time (default 1)
 *     -d SECS   calls are started for SECS seconds (default 10)
 *     -i MS     a client starts a call at most every MS ms (default 0)
 *     -w SECS   probe: calls started before the deadline are waited for up
 *               to SECS more, then counted "unfinished" (default 90);
 *     -f        flood: at the deadline every call in flight is abandoned
 *     -r        after a 429, wait its Retry-After (at most 5 s) first
 *   SIGTERM ends the run at once (calls in flight: "unfinished").
 *
 * libcurl multi, one keep-alive connection per client; MCP clients open a
 * legacy session first (initialize + notifications/initialized, not timed).
 * A call is ok when it is answered 200 and its answer holds a result (MCP,
 * not isError) or choices / the stream's [DONE] (LLM). Prints one JSON line:
 * calls, ok, failed, rejected (429s, within failed), unfinished, the ok
 * calls' p50/p99/max ms, and the first failure's status and answer (cut to
 * 160 bytes).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

enum { K_LLM, K_LIST, K_CALL };

typedef struct {
	CURL *h;
	struct curl_slist *hdr;
	char session[128];
	char body[16384];
	size_t len;
	int done_seen;
	long retry_after;
	double t0, next;
	int phase; /* 0 initialize, 1 initialized, 2 calls */
	int busy;
} client;

static int kind = K_LLM, stream, flood, honor_retry;
static const char *url, *tool = "echo", *args = "{}", *model = "chat";
static char **extra;
static int nextra;
static char call_body[4096];
static volatile sig_atomic_t stop; /* SIGTERM: end now, print what was seen */

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

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
	if (len >= 6 && memmem(p, len, "[DONE]", 6))
		c->done_seen = 1;
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
	} else if (len > 12 && !strncasecmp(p, "retry-after:", 12)) {
		c->retry_after = strtol(p + 12, NULL, 10);
	}
	return len;
}

static void start(CURLM *m, client *c)
{
	static const char *init =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		"\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
		"\"clientInfo\":{\"name\":\"fairgen\",\"version\":\"1\"}}}";
	static const char *inited =
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
	curl_slist_free_all(c->hdr);
	c->hdr = curl_slist_append(NULL, "Content-Type: application/json");
	if (kind != K_LLM)
		c->hdr = curl_slist_append(c->hdr, "Accept: application/json, text/event-stream");
	for (int i = 0; i < nextra; i++)
		c->hdr = curl_slist_append(c->hdr, extra[i]);
	if (kind != K_LLM && c->phase > 0) {
		char h[200];
		snprintf(h, sizeof h, "Mcp-Session-Id: %s", c->session);
		c->hdr = curl_slist_append(c->hdr, h);
		c->hdr = curl_slist_append(c->hdr, "MCP-Protocol-Version: 2025-11-25");
	}
	const char *b = kind == K_LLM	? call_body
			: c->phase == 0 ? init
			: c->phase == 1 ? inited
					: call_body;
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdr);
	curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, b);
	c->len = 0;
	c->body[0] = 0;
	c->done_seen = 0;
	c->retry_after = -1;
	c->t0 = now_ms();
	c->busy = 1;
	curl_multi_add_handle(m, c->h);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fputc(' ', f);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int main(int argc, char **argv)
{
	int n = 1, opt;
	double secs = 10, interval = 0, wait_max = 90;
	while ((opt = getopt(argc, argv, "k:t:a:m:sc:d:i:w:fr")) != -1) {
		switch (opt) {
		case 'k':
			kind = !strcmp(optarg, "mcp-list")   ? K_LIST
			       : !strcmp(optarg, "mcp-call") ? K_CALL
							     : K_LLM;
			break;
		case 't': tool = optarg; break;
		case 'a': args = optarg; break;
		case 'm': model = optarg; break;
		case 's': stream = 1; break;
		case 'c': n = atoi(optarg); break;
		case 'd': secs = atof(optarg); break;
		case 'i': interval = atof(optarg); break;
		case 'w': wait_max = atof(optarg); break;
		case 'f': flood = 1; break;
		case 'r': honor_retry = 1; break;
		default:
			fprintf(stderr,
				"usage: fairgen [-k mcp-list|mcp-call|llm] [-t TOOL] [-a JSON] "
				"[-m MODEL] [-s] [-c N] [-d SECS] [-i MS] [-w SECS] [-f] [-r] "
				"URL [HEADER...]\n");
			return 2;
		}
	}
	if (optind >= argc || n < 1 || n > 4096) {
		fprintf(stderr, "fairgen: URL missing or -c out of 1..4096\n");
		return 2;
	}
	url = argv[optind];
	extra = argv + optind + 1;
	nextra = argc - optind - 1;
	if (kind == K_LIST)
		snprintf(call_body, sizeof call_body,
			 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	else if (kind == K_CALL)
		snprintf(call_body, sizeof call_body,
			 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
			 "\"name\":\"%s\",\"arguments\":%s}}",
			 tool, args);
	else
		snprintf(call_body, sizeof call_body,
			 "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":"
			 "\"ping\"}],\"max_tokens\":8%s}",
			 model,
			 stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}"
				: "");

	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURLM *m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)n);
	client *cs = calloc((size_t)n, sizeof *cs);
	size_t cap = 1 << 16, nok = 0;
	double *lat = malloc(cap * sizeof *lat);
	long calls = 0, failed = 0, rejected = 0, unfinished = 0;
	char first_fail[200] = "";
	long first_status = 0;
	for (int i = 0; i < n; i++) {
		client *c = &cs[i];
		c->h = curl_easy_init();
		curl_easy_setopt(c->h, CURLOPT_URL, url);
		curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
		curl_easy_setopt(c->h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(c->h, CURLOPT_HEADERDATA, c);
		curl_easy_setopt(c->h, CURLOPT_PRIVATE, c);
		curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, (long)((secs + wait_max) * 1000));
		c->phase = kind == K_LLM ? 2 : 0;
	}
	/* sessions first (not timed, not counted) */
	if (kind != K_LLM) {
		for (int i = 0; i < n; i++)
			start(m, &cs[i]);
		int ready = 0;
		double give_up = now_ms() + 30000;
		while (ready < n && now_ms() < give_up) {
			int still, left;
			curl_multi_perform(m, &still);
			CURLMsg *msg;
			while ((msg = curl_multi_info_read(m, &left))) {
				client *c;
				curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
				curl_multi_remove_handle(m, c->h);
				c->busy = 0;
				if (msg->data.result != CURLE_OK ||
				    (c->phase == 0 && !c->session[0])) {
					fprintf(stderr, "fairgen: initialize failed: %s\n",
						c->body);
					return 1;
				}
				if (++c->phase == 2)
					ready++;
				else
					start(m, c);
			}
			curl_multi_poll(m, NULL, 0, 50, NULL);
		}
		if (ready < n) {
			fprintf(stderr, "fairgen: %d of %d sessions opened in 30 s\n", ready, n);
			return 1;
		}
	}
	double t_start = now_ms(), end = t_start + secs * 1000,
	       hard = end + (flood ? 0 : wait_max * 1000);
	for (int i = 0; i < n; i++)
		cs[i].next = t_start;
	int inflight = 0;
	signal(SIGTERM, on_term);
	for (;;) {
		double t = now_ms();
		if (stop)
			end = hard = t;
		if (t < end)
			for (int i = 0; i < n; i++)
				if (!cs[i].busy && cs[i].next <= t) {
					start(m, &cs[i]);
					inflight++;
					calls++;
				}
		if (t >= end && (inflight == 0 || t >= hard))
			break;
		int still, left;
		curl_multi_perform(m, &still);
		CURLMsg *msg;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			client *c;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			long status = 0;
			curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
			double done = now_ms();
			int ok = msg->data.result == CURLE_OK && status == 200;
			if (ok && kind == K_LLM)
				ok = stream ? c->done_seen && !strstr(c->body, "\"error\"")
					    : strstr(c->body, "\"choices\"") != NULL;
			else if (ok)
				ok = strstr(c->body, "\"result\"") &&
				     !strstr(c->body, "\"isError\":true");
			curl_multi_remove_handle(m, c->h);
			c->busy = 0;
			inflight--;
			if (ok) {
				if (nok == cap)
					lat = realloc(lat, (cap *= 2) * sizeof *lat);
				lat[nok++] = done - c->t0;
			} else {
				failed++;
				if (status == 429)
					rejected++;
				if (!first_fail[0]) {
					first_status = status;
					snprintf(first_fail, sizeof first_fail, "%.160s",
						 msg->data.result != CURLE_OK
							 ? curl_easy_strerror(msg->data.result)
							 : c->body);
				}
			}
			c->next = c->t0 + interval;
			if (status == 429 && honor_retry) {
				double ra = c->retry_after < 0	 ? 1
					    : c->retry_after > 5 ? 5
								 : (double)c->retry_after;
				if (done + ra * 1000 > c->next)
					c->next = done + ra * 1000;
			}
		}
		double wake = end - now_ms();
		int ms = wake > 0 && wake < 50 ? (int)wake + 1 : 50;
		if (interval > 0 && interval < ms)
			ms = (int)interval > 0 ? (int)interval : 1;
		curl_multi_poll(m, NULL, 0, ms, NULL);
	}
	unfinished = inflight;
	qsort(lat, nok, sizeof *lat, cmp);
#define PCT(p) (nok ? lat[(size_t)((double)(nok - 1) * (p) + 0.5)] : 0)
	printf("{\"calls\":%ld,\"ok\":%zu,\"failed\":%ld,\"rejected\":%ld,\"unfinished\":%ld,"
	       "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,\"first_status\":%ld,"
	       "\"first_failure\":",
	       calls, nok, failed, rejected, unfinished, PCT(0.5), PCT(0.99),
	       nok ? lat[nok - 1] : 0, first_status);
	json_str(stdout, first_fail);
	printf("}\n");
	fflush(stdout);
	/* abandoned calls: no cleanup of handles still in the multi, exit now */
	_exit(0);
}
