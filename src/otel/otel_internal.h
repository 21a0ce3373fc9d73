/*
 * otel_internal.h - what the files of src/otel/ share: a finished span (one
 * allocation: its attributes point into its own text), and the queue between
 * the threads that end spans and the exporter's thread.
 */
#ifndef AW_OTEL_INTERNAL_H
#define AW_OTEL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "awooop/ctx.h"
#include "awooop/otel.h"

#define SPAN_ATTRS 24
#define SPAN_TEXT 1024

typedef struct {
	const char *key; /* a literal */
	int is_int;
	long long i;
	int off; /* a string's: text + off */
} span_attr;

struct aw_span {
	struct aw_span *next; /* the queue, then the exporter's batch */
	const char *name;     /* a literal, unless name_off >= 0 */
	int name_off;
	aw_span_kind kind;
	char trace_id[AW_TRACE_ID_LEN + 1], span_id[AW_SPAN_ID_LEN + 1], parent[AW_SPAN_ID_LEN + 1];
	uint32_t flags;		  /* OTLP's: the trace flags, HAS_IS_REMOTE, IS_REMOTE */
	int64_t start_ns, end_ns; /* Unix epoch nanoseconds */
	int error;
	int msg_off; /* the error's message (-1: none) */
	char project[AW_PROJECT_MAX + 1];
	int nattr, dropped; /* dropped: attributes that found no room */
	span_attr attr[SPAN_ATTRS];
	int used;
	char text[SPAN_TEXT];
};

/* One project's spans in the queue (q.mu). */
typedef struct share {
	struct share *next;
	char project[AW_PROJECT_MAX + 1];
	int n;
} share;

#define SHARE_BUCKETS 64

/* The queue and the exporter's settings (span.c owns it; export.c runs the
 * thread). Fields below mu are guarded by it. */
typedef struct {
	atomic_bool on;
	int max, batch, share_max; /* set before on, never after */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* wakes the exporter: a batch is full, or stop */
	aw_span *head, *tail;
	int n;
	int stop;
	share *shares[SHARE_BUCKETS];
	atomic_llong queued, exported, dropped, lost;
} otel_queue;

extern otel_queue otel_q;

/* span.c: up to max spans off the queue (holds otel_q.mu), oldest first, as
 * a list; their projects' shares released. */
aw_span *otel_take(int max, int *n);
/* Frees a list of spans. */
void otel_free_list(aw_span *s);
/* list.c: s without its leading and trailing blanks (in place). */
char *otel_trim(char *s);
/* A string of s (NULL for off < 0). */
static inline const char *otel_text(const aw_span *s, int off)
{
	return off < 0 ? NULL : s->text + off;
}

#endif
