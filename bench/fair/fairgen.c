/*
 * fairgen.c - the client of bench/fair: one tenant's calls through a gateway,
 * either as the probe (tenant B's cheap call, paced, every call counted) or
 * as the flood (tenant A's worst shape, cut at the deadline).
 *
 *   fairgen [options] URL [HEADER...]
 *     -k KIND   mcp-list | mcp-call | llm | http | upload (default llm)
 *     -t TOOL   the tool of mcp-call; -a JSON its arguments (default {})
 *     -m MODEL  the model of llm; -s streamed (stream_options.include_usage)
 *     -X METHOD the method of http (default GET); -b BODY its body (none)
 *     -b BYTES  upload: each client declares a body of BYTES, sends all but
 *               its last byte and holds it (a slow upload) until the server
 *               answers or closes, then starts again
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
 * not isError) or choices / the stream's [DONE] (LLM), or 2xx (http). An
 * upload is never ok: it counts its answers (429 in rejected) and the ones
 * the server cut (failed), over plain sockets. Prints one JSON line:
 * calls, ok, failed, rejected (429s, within failed), unfinished, the ok
 * calls' p50/p99/max ms, and the first failure's status and answer (cut to
 * 160 bytes).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { K_LLM, K_LIST, K_CALL, K_HTTP, K_UPLOAD };

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
static const char *url, *tool = "echo", *args = "{}", *model = "chat", *method = "GET", *http_body;
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
	if (kind == K_LIST || kind == K_CALL)
		c->hdr = curl_slist_append(c->hdr, "Accept: application/json, text/event-stream");
	for (int i = 0; i < nextra; i++)
		c->hdr = curl_slist_append(c->hdr, extra[i]);
	if ((kind == K_LIST || kind == K_CALL) && c->phase > 0) {
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
	if (kind == K_HTTP) {
		curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, method);
		if (http_body)
			curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, http_body);
	} else {
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, b);
	}
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

/* ---- -k upload: slow uploads over plain sockets */

typedef struct {
	int fd;
	size_t sent, want; /* bytes of head + body sent, and to send (all but one) */
	double next;	   /* when to connect again */
	char in[512];
	size_t inlen;
} uploader;

static char up_head[1024];
static size_t up_size, up_headlen;
static struct sockaddr_in up_addr;
static char up_zeros[65536];

static int up_connect(uploader *u)
{
	u->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (u->fd < 0)
		return -1;
	int one = 1;
	setsockopt(u->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(u->fd, (struct sockaddr *)&up_addr, sizeof up_addr) && errno != EINPROGRESS) {
		close(u->fd);
		u->fd = -1;
		return -1;
	}
	u->sent = u->inlen = 0;
	u->want = up_headlen + up_size - 1;
	return 0;
}

/* Sends what the socket takes of the head and all but the body's last byte. */
static void up_send(uploader *u)
{
	while (u->sent < u->want) {
		const char *p;
		size_t n;
		if (u->sent < up_headlen) {
			p = up_head + u->sent;
			n = up_headlen - u->sent;
		} else {
			p = up_zeros;
			n = u->want - u->sent;
			if (n > sizeof up_zeros)
				n = sizeof up_zeros;
		}
		ssize_t w = send(u->fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		u->sent += (size_t)w;
	}
}

static int run_uploads(int n, double secs, const char *hdr_extra[], int nhdr)
{
	/* http://HOST:PORT/PATH, an IPv4 host */
	unsigned a, b, c, d, port;
	char path[512] = "/";
	if (sscanf(url, "http://%u.%u.%u.%u:%u%511s", &a, &b, &c, &d, &port, path) < 5) {
		fprintf(stderr, "fairgen: upload needs http://IPV4:PORT/PATH\n");
		return 2;
	}
	up_addr.sin_family = AF_INET;
	up_addr.sin_port = htons((uint16_t)port);
	up_addr.sin_addr.s_addr = htonl(a << 24 | b << 16 | c << 8 | d);
	memset(up_zeros, ' ', sizeof up_zeros);
	int o = snprintf(up_head, sizeof up_head,
			 "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\n",
			 path, up_size);
	for (int i = 0; i < nhdr; i++)
		o += snprintf(up_head + o, sizeof up_head - (size_t)o, "%s\r\n", hdr_extra[i]);
	o += snprintf(up_head + o, sizeof up_head - (size_t)o, "\r\n");
	up_headlen = (size_t)o;
	uploader *us = calloc((size_t)n, sizeof *us);
	struct pollfd *pf = calloc((size_t)n, sizeof *pf);
	long calls = 0, failed = 0, rejected = 0;
	long first_status = 0;
	char first_fail[200] = "";
	double end = now_ms() + secs * 1000;
	for (int i = 0; i < n; i++)
		us[i].fd = -1;
	signal(SIGTERM, on_term);
	while (!stop && now_ms() < end) {
		double t = now_ms();
		for (int i = 0; i < n; i++) {
			uploader *u = &us[i];
			if (u->fd < 0 && u->next <= t && !up_connect(u))
				calls++;
			if (u->fd >= 0)
				up_send(u);
			pf[i] = (struct pollfd){
				.fd = u->fd, .events = POLLIN | (u->sent < u->want ? POLLOUT : 0)};
		}
		poll(pf, (nfds_t)n, 50);
		for (int i = 0; i < n; i++) {
			uploader *u = &us[i];
			if (u->fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = recv(u->fd, u->in + u->inlen, sizeof u->in - 1 - u->inlen, 0);
			if (r > 0) {
				u->inlen += (size_t)r;
				u->in[u->inlen] = 0;
				if (!strstr(u->in, "\r\n\r\n") && u->inlen < sizeof u->in - 1)
					continue;
			} else if (r < 0 && errno == EAGAIN) {
				continue;
			}
			/* an answer (its head), or the server closed: start again */
			long status = 0, ra = -1;
			if (!strncmp(u->in, "HTTP/1.1 ", 9))
				status = strtol(u->in + 9, NULL, 10);
			const char *h = strcasestr(u->in, "\r\nretry-after:");
			if (h)
				ra = strtol(h + 15, NULL, 10);
			failed++;
			if (status == 429)
				rejected++;
			if (!first_fail[0]) {
				first_status = status;
				snprintf(first_fail, sizeof first_fail, "%.160s",
					 status ? u->in : "closed by the server");
			}
			close(u->fd);
			u->fd = -1;
			u->next =
				now_ms() + (honor_retry && status == 429 ? (ra < 0   ? 1000
									    : ra > 5 ? 5000
										     : ra * 1000.0)
									 : 0);
		}
	}
	long holding = 0;
	for (int i = 0; i < n; i++)
		holding += us[i].fd >= 0;
	printf("{\"calls\":%ld,\"ok\":0,\"failed\":%ld,\"rejected\":%ld,\"unfinished\":%ld,"
	       "\"p50_ms\":0,\"p99_ms\":0,\"max_ms\":0,\"first_status\":%ld,"
	       "\"first_failure\":",
	       calls, failed, rejected, holding, first_status);
	json_str(stdout, first_fail);
	printf("}\n");
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	int n = 1, opt;
	double secs = 10, interval = 0, wait_max = 90;
	while ((opt = getopt(argc, argv, "k:t:a:m:sc:d:i:w:frX:b:")) != -1) {
		switch (opt) {
		case 'k':
			kind = !strcmp(optarg, "mcp-list")   ? K_LIST
			       : !strcmp(optarg, "mcp-call") ? K_CALL
			       : !strcmp(optarg, "http")     ? K_HTTP
			       : !strcmp(optarg, "upload")   ? K_UPLOAD
							     : K_LLM;
			break;
		case 'X': method = optarg; break;
		case 'b':
			http_body = optarg;
			up_size = strtoul(optarg, NULL, 10);
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
				"usage: fairgen [-k mcp-list|mcp-call|llm|http|upload] [-t TOOL] "
				"[-a JSON] [-m MODEL] [-s] [-X METHOD] [-b BODY|BYTES] [-c N] "
				"[-d SECS] [-i MS] [-w SECS] [-f] [-r] URL [HEADER...]\n");
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
	if (kind == K_UPLOAD) {
		if (up_size < 2) {
			fprintf(stderr, "fairgen: upload needs -b BYTES (at least 2)\n");
			return 2;
		}
		return run_uploads(n, secs, (const char **)extra, nextra);
	}
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
		c->phase = kind == K_LIST || kind == K_CALL ? 0 : 2;
	}
	/* sessions first (not timed, not counted) */
	if (kind == K_LIST || kind == K_CALL) {
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
			if (kind == K_HTTP)
				ok = msg->data.result == CURLE_OK && status >= 200 && status < 300;
			else if (ok && kind == K_LLM)
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
