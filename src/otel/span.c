/*
 * span.c - describing finished spans and queueing them for the exporter
 * (otel.h). A span is one allocation (attributes point into its own text;
 * one that finds no room is counted in droppedAttributesCount, never cut).
 * aw_span_end takes the queue's lock for a push and nothing else: it never
 * waits for the network. The queue is bounded, and so is each project's part
 * of it (half), so one tenant's burst cannot crowd out the others' spans.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/metrics.h"
#include "awooop/str.h"
#include "otel_internal.h"

otel_queue otel_q = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define FLAG_HAS_IS_REMOTE 0x100u
#define FLAG_IS_REMOTE 0x200u

int aw_otel_on(void)
{
	return atomic_load_explicit(&otel_q.on, memory_order_acquire);
}

static int hex16(const char *s)
{
	if (!s || strlen(s) != AW_SPAN_ID_LEN)
		return 0;
	for (int i = 0; i < AW_SPAN_ID_LEN; i++)
		if (aw_hex_digit(s[i]) < 0)
			return 0;
	return strspn(s, "0") != AW_SPAN_ID_LEN;
}

aw_span *aw_span_begin(const char *name, aw_span_kind kind, const aw_trace *t, const char *parent,
		       int remote, int64_t start_mono_ns)
{
	if (!aw_otel_on() || !t || !(t->flags & 1) || !t->trace_id[0] || !t->span_id[0])
		return NULL;
	aw_span *s = aw_malloc(sizeof *s);
	if (!s)
		return NULL;
	s->next = NULL;
	s->name = name;
	s->name_off = -1;
	s->kind = kind;
	memcpy(s->trace_id, t->trace_id, sizeof s->trace_id);
	memcpy(s->span_id, t->span_id, sizeof s->span_id);
	s->parent[0] = '\0';
	s->flags = (uint32_t)t->flags | FLAG_HAS_IS_REMOTE;
	if (hex16(parent)) {
		memcpy(s->parent, parent, sizeof s->parent);
		if (remote)
			s->flags |= FLAG_IS_REMOTE;
	}
	/* the start on the wall clock: now, less what the monotonic clock
	 * measured since it (a wall-clock step meanwhile moves both ends) */
	int64_t mono = aw_clock_mono_ns(), wall = aw_clock_wall_ns();
	s->start_ns =
		wall - (start_mono_ns > 0 && start_mono_ns <= mono ? mono - start_mono_ns : 0);
	s->end_ns = 0;
	s->error = 0;
	s->msg_off = -1;
	s->project[0] = '\0';
	s->nattr = s->dropped = 0;
	s->used = 0;
	return s;
}

/* A copy of v in s's text: its offset, or -1 when it does not fit. */
static int text_put(aw_span *s, const char *v, size_t n)
{
	if (n >= (size_t)(SPAN_TEXT - s->used))
		return -1;
	int off = s->used;
	memcpy(s->text + off, v, n);
	s->text[off + (int)n] = '\0';
	s->used += (int)n + 1;
	return off;
}

void aw_span_name(aw_span *s, const char *prefix, const char *suffix)
{
	if (!s)
		return;
	char buf[256];
	const char *name = prefix;
	size_t len = strlen(prefix);
	if (suffix && suffix[0]) { /* too long for a name: the prefix alone */
		int n = snprintf(buf, sizeof buf, "%s %s", prefix, suffix);
		if (n >= 0 && (size_t)n < sizeof buf) {
			name = buf;
			len = (size_t)n;
		}
	}
	int off = text_put(s, name, len);
	if (off >= 0)
		s->name_off = off;
}

static span_attr *attr_new(aw_span *s, const char *key)
{
	if (s->nattr == SPAN_ATTRS) {
		s->dropped++;
		return NULL;
	}
	span_attr *a = &s->attr[s->nattr++];
	a->key = key;
	a->is_int = 0;
	a->i = 0;
	a->off = -1;
	return a;
}

void aw_span_str(aw_span *s, const char *key, const char *value)
{
	if (!s || !value)
		return;
	int off = text_put(s, value, strlen(value));
	if (off < 0) {
		s->dropped++;
		return;
	}
	span_attr *a = attr_new(s, key);
	if (a)
		a->off = off;
}

void aw_span_int(aw_span *s, const char *key, long long value)
{
	span_attr *a = s ? attr_new(s, key) : NULL;
	if (!a)
		return;
	a->is_int = 1;
	a->i = value;
}

void aw_span_project(aw_span *s, const char *project)
{
	/* a project id too long to be one is no project: "" (never a cut id) */
	if (!s || !project || AW_STR_COPY(s->project, project) < 0)
		return;
	if (project[0])
		aw_span_str(s, "awooop.project", project);
}

void aw_span_error(aw_span *s, const char *type, const char *message)
{
	if (!s)
		return;
	s->error = 1;
	if (message && message[0])
		s->msg_off = text_put(s, message, strnlen(message, 200));
	aw_span_str(s, "error.type", type && type[0] ? type : "_OTHER");
}

/* ------------------------------------------------------------- the queue */

static unsigned bucket(const char *project)
{
	unsigned h = 2166136261u;
	for (const char *p = project; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h % SHARE_BUCKETS;
}

/* The share of project, made when absent (holds mu); NULL out of memory. */
static share *share_of(const char *project, int make)
{
	share **b = &otel_q.shares[bucket(project)];
	for (share *x = *b; x; x = x->next)
		if (!strcmp(x->project, project))
			return x;
	if (!make)
		return NULL;
	share *x = aw_calloc(1, sizeof *x);
	if (x && AW_STR_COPY(x->project, project) < 0) { /* a span's project fits */
		free(x);
		return NULL;
	}
	if (!x)
		return NULL;
	x->next = *b;
	*b = x;
	return x;
}

static void share_release(const char *project)
{
	share **p = &otel_q.shares[bucket(project)];
	for (share *x = *p; x; p = &x->next, x = x->next)
		if (!strcmp(x->project, project)) {
			if (--x->n <= 0) {
				*p = x->next;
				free(x);
			}
			return;
		}
}

void aw_span_end(aw_span *s)
{
	if (!s)
		return;
	s->end_ns = aw_clock_wall_ns();
	if (s->end_ns < s->start_ns)
		s->end_ns = s->start_ns;
	const char *why = NULL;
	pthread_mutex_lock(&otel_q.mu);
	share *x = NULL;
	if (!aw_otel_on() || otel_q.stop)
		why = "shutdown";
	else if (otel_q.n >= otel_q.max)
		why = "queue_full";
	else if (!(x = share_of(s->project, 1)))
		why = "queue_full";
	else if (x->n >= otel_q.share_max)
		why = "project_share";
	if (!why) {
		x->n++;
		if (otel_q.tail)
			otel_q.tail->next = s;
		else
			otel_q.head = s;
		otel_q.tail = s;
		if (++otel_q.n == otel_q.batch) /* under the lock: stop destroys cv */
			pthread_cond_signal(&otel_q.cv);
	}
	pthread_mutex_unlock(&otel_q.mu);
	if (why) {
		atomic_fetch_add(&otel_q.dropped, 1);
		aw_metrics_otel_spans(why, 1);
		free(s);
		return;
	}
	atomic_fetch_add(&otel_q.queued, 1);
}

aw_span *otel_take(int max, int *n)
{
	aw_span *first = otel_q.head, *last = NULL;
	int k = 0;
	for (aw_span *s = first; s && k < max; s = s->next) {
		share_release(s->project);
		last = s;
		k++;
	}
	if (!last) {
		*n = 0;
		return NULL;
	}
	otel_q.head = last->next;
	if (!otel_q.head)
		otel_q.tail = NULL;
	last->next = NULL;
	otel_q.n -= k;
	*n = k;
	return first;
}

void otel_free_list(aw_span *s)
{
	while (s) {
		aw_span *next = s->next;
		free(s);
		s = next;
	}
}

void aw_otel_run_span_id(const char *run_id, char *out)
{
	uint8_t h[AW_SHA256_LEN];
	char in[AW_UUID_STR_LEN + 16];
	int n = snprintf(in, sizeof in, "awooop.run:%s", run_id ? run_id : "");
	aw_sha256(in, (size_t)n, h);
	if (!memcmp(h, (uint8_t[8]){0}, 8)) /* an all-zero id is invalid */
		h[7] = 1;
	aw_hex(h, AW_SPAN_ID_LEN / 2, out);
}

void aw_otel_stats_get(aw_otel_stats *out)
{
	out->queued = atomic_load(&otel_q.queued);
	out->exported = atomic_load(&otel_q.exported);
	out->dropped = atomic_load(&otel_q.dropped);
	out->lost = atomic_load(&otel_q.lost);
}
