/*
 * counter.c - see counter.h. libmicrohttpd, one thread per connection; keys in
 * an open-addressing table guarded by one mutex.
 */
#include "counter.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS (1u << 16)

typedef struct {
	char key[128];
	int count;
	char tp[64];
	char auth[128]; /* the Authorization header of the last request */
} entry;

struct aw_counter {
	struct MHD_Daemon *d;
	pthread_mutex_t mu;
	entry *tab;
	int64_t requests, keys, unkeyed;
	int port, delay_ms;
};

static entry *find(aw_counter *c, const char *key, int create)
{
	uint32_t h = 2166136261u;
	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	for (uint32_t i = 0; i < SLOTS; i++) {
		entry *e = &c->tab[(h + i) & (SLOTS - 1)];
		if (!e->key[0]) {
			if (!create)
				return NULL;
			snprintf(e->key, sizeof e->key, "%s", key);
			c->keys++;
			return e;
		}
		if (strcmp(e->key, key) == 0)
			return e;
	}
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **state)
{
	aw_counter *c = cls;
	if (!*state) { /* headers only so far */
		*state = c;
		return MHD_YES;
	}
	if (*size) { /* drain the body */
		*size = 0;
		return MHD_YES;
	}
	const char *key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Idempotency-Key");
	const char *tp = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent");
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	pthread_mutex_lock(&c->mu);
	c->requests++;
	entry *e = key && *key ? find(c, key, 1) : NULL;
	if (e) {
		e->count++;
		snprintf(e->tp, sizeof e->tp, "%s", tp ? tp : "");
		snprintf(e->auth, sizeof e->auth, "%s", auth ? auth : "");
	} else {
		c->unkeyed++;
	}
	pthread_mutex_unlock(&c->mu);
	if (c->delay_ms > 0) {
		struct timespec ts = {c->delay_ms / 1000, (long)(c->delay_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	static const char ok[] = "{\"ok\":true}";
	/* /status/NNN answers NNN (a refusal, an overload) */
	unsigned status = 200;
	if (url && strncmp(url, "/status/", 8) == 0 && atoi(url + 8) >= 200 && atoi(url + 8) <= 599)
		status = (unsigned)atoi(url + 8);
	struct MHD_Response *r =
		MHD_create_response_from_buffer(sizeof ok - 1, (void *)ok, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

aw_counter *aw_counter_start(int port, int delay_ms)
{
	aw_counter *c = calloc(1, sizeof *c);
	if (!c || !(c->tab = calloc(SLOTS, sizeof *c->tab))) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->delay_ms = delay_ms;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
				(uint16_t)port, NULL, NULL, on_request, c, MHD_OPTION_SOCK_ADDR,
				&sa, MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
	if (!c->d) {
		free(c->tab);
		free(c);
		return NULL;
	}
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(c->d, MHD_DAEMON_INFO_BIND_PORT);
	c->port = i ? i->port : port;
	return c;
}

int aw_counter_port(const aw_counter *c)
{
	return c->port;
}

void aw_counter_stop(aw_counter *c)
{
	if (!c)
		return;
	MHD_stop_daemon(c->d);
	pthread_mutex_destroy(&c->mu);
	free(c->tab);
	free(c);
}

int aw_counter_count(aw_counter *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	entry *e = find(c, key, 0);
	int n = e ? e->count : 0;
	pthread_mutex_unlock(&c->mu);
	return n;
}

void aw_counter_totals(aw_counter *c, int64_t *requests, int64_t *keys, int64_t *unkeyed)
{
	pthread_mutex_lock(&c->mu);
	*requests = c->requests;
	*keys = c->keys;
	*unkeyed = c->unkeyed;
	pthread_mutex_unlock(&c->mu);
}

void aw_counter_traceparent(aw_counter *c, const char *key, char *out, size_t cap)
{
	pthread_mutex_lock(&c->mu);
	entry *e = find(c, key, 0);
	snprintf(out, cap, "%s", e ? e->tp : "");
	pthread_mutex_unlock(&c->mu);
}

void aw_counter_authorization(aw_counter *c, const char *key, char *out, size_t cap)
{
	pthread_mutex_lock(&c->mu);
	entry *e = find(c, key, 0);
	snprintf(out, cap, "%s", e ? e->auth : "");
	pthread_mutex_unlock(&c->mu);
}

void aw_counter_dump(aw_counter *c, FILE *f)
{
	pthread_mutex_lock(&c->mu);
	for (uint32_t i = 0; i < SLOTS; i++)
		if (c->tab[i].key[0])
			fprintf(f, "%s %d\n", c->tab[i].key, c->tab[i].count);
	pthread_mutex_unlock(&c->mu);
}
