/*
 * loadgen.c - the load generator of bench/llm: the same requests, the same
 * way, against any OpenAI-compatible endpoint (the fake upstream directly,
 * awooop, Portkey's gateway). libcurl multi, keep-alive, N requests in
 * flight; each finished request starts the next until the time is up.
 *
 *   loadgen URL MODEL CONCURRENCY SECONDS STREAM(0|1) [HEADER...]
 *
 * Prints one JSON line: requests, errors, req/s, latency p50/p90/p99 (ms,
 * whole request) and time to first body byte p50/p99 (ms), and for streams
 * the SSE events seen per second.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
	CURL *h;
	double t0, tfirst;
	long events;
	int slot;
} xfer;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	xfer *x = ud;
	size_t len = sz * n;
	if (!x->tfirst)
		x->tfirst = now_ms();
	for (size_t i = 0; i + 5 < len; i++) /* "data:" at a line start */
		if ((i == 0 || p[i - 1] == '\n') && !memcmp(p + i, "data:", 5))
			x->events++;
	return len;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, long n, double p)
{
	if (!n)
		return 0;
	long i = (long)(p * (double)(n - 1) + 0.5);
	return v[i];
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr,
			"usage: loadgen URL MODEL CONCURRENCY SECONDS STREAM [HEADER...]\n");
		return 2;
	}
	const char *url = argv[1], *model = argv[2];
	int conc = atoi(argv[3]);
	double secs = atof(argv[4]);
	int stream = atoi(argv[5]);
	char prompt[1400];
	memset(prompt, 'x', sizeof prompt);
	for (size_t i = 7; i < sizeof prompt; i += 8)
		prompt[i] = ' ';
	prompt[sizeof prompt - 1] = 0;
	char body[2048];
	snprintf(
		body, sizeof body,
		"{\"model\":\"%s\",\"messages\":[{\"role\":\"system\",\"content\":\"You are a "
		"terse SRE assistant.\"},{\"role\":\"user\",\"content\":\"%s\"}],\"temperature\":0.2,"
		"\"max_tokens\":256%s}",
		model, prompt,
		stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}" : "");
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	for (int i = 6; i < argc; i++)
		hdr = curl_slist_append(hdr, argv[i]);
	curl_global_init(CURL_GLOBAL_ALL);
	CURLM *m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)conc);
	long cap = 4000000, n = 0, errors = 0, events = 0;
	double *lat = malloc(sizeof(double) * (size_t)cap),
	       *ttfb = malloc(sizeof(double) * (size_t)cap);
	xfer *xs = calloc((size_t)conc, sizeof *xs);
	double start = now_ms(), end = start + secs * 1000;
	for (int i = 0; i < conc; i++) {
		xfer *x = &xs[i];
		x->h = curl_easy_init();
		curl_easy_setopt(x->h, CURLOPT_URL, url);
		curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
		curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
		curl_easy_setopt(x->h, CURLOPT_TCP_NODELAY, 1L);
		x->t0 = now_ms();
		curl_multi_add_handle(m, x->h);
	}
	int running = conc;
	while (running) {
		curl_multi_perform(m, &running);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			xfer *x;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			long status = 0;
			curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
			double t = now_ms();
			if (msg->data.result != CURLE_OK || status != 200) {
				errors++;
			} else if (n < cap) {
				lat[n] = t - x->t0;
				ttfb[n] = (x->tfirst ? x->tfirst : t) - x->t0;
				n++;
				events += x->events;
			}
			curl_multi_remove_handle(m, x->h);
			if (t < end) {
				x->t0 = now_ms();
				x->tfirst = 0;
				x->events = 0;
				curl_multi_add_handle(m, x->h);
				running++;
			}
		}
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	double elapsed = (now_ms() - start) / 1000;
	qsort(lat, (size_t)n, sizeof *lat, cmp);
	qsort(ttfb, (size_t)n, sizeof *ttfb, cmp);
	printf("{\"requests\":%ld,\"errors\":%ld,\"rps\":%.1f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,"
	       "\"p99_ms\":%.3f,\"ttfb_p50_ms\":%.3f,\"ttfb_p99_ms\":%.3f,\"events_per_s\":%.0f}\n",
	       n, errors, (double)n / elapsed, pct(lat, n, 0.5), pct(lat, n, 0.9),
	       pct(lat, n, 0.99), pct(ttfb, n, 0.5), pct(ttfb, n, 0.99), (double)events / elapsed);
	for (int i = 0; i < conc; i++)
		curl_easy_cleanup(xs[i].h);
	curl_multi_cleanup(m);
	curl_slist_free_all(hdr);
	free(lat);
	free(ttfb);
	free(xs);
	return 0;
}
