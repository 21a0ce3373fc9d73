/*
 * fairq.c - the MCP gateway's fair work queue (fairq.h). Projects with
 * waiting or running requests are kept in a ring; a worker looks from the
 * ring's cursor for the first project with a cheap request (any project),
 * then for one with an upstream call that is under its bound while fewer
 * than workers - 1 calls run, takes the oldest, and moves the cursor past
 * that project. A project entry goes once it has nothing waiting or running.
 *
 * Wake-ups pass a baton, never a broadcast: a push or a finished item wakes
 * one idle worker while items wait, and a worker that takes an item wakes
 * the next while others still wait (a finished call may free both its
 * project's bound and the calls' bound: two items may become runnable). A
 * broadcast on every finished item woke all idle workers to find nothing:
 * at 32 workers their lock and wake-ups were a quarter of the gateway's CPU.
 * A worker finishes its item and looks for the next under one lock
 * (fairq_next), and signals after unlocking.
 */
#include "fairq.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/str.h"

typedef struct node {
	void *item;
	struct node *next;
} node;

typedef struct pq {
	char project[AW_PROJECT_MAX + 1];
	node *h[2], *t[2]; /* [0] cheap, [1] upstream calls */
	int waiting, running;
	struct pq *next; /* the ring */
} pq;

struct aw_fairq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const aw_bounds *per_project;
	int workers, max_queued, calls_running, stopping;
	long waiting; /* items waiting, over every project */
	pq *ring;     /* the cursor: the next project looked at */
};

aw_fairq *fairq_new(int workers, const aw_bounds *per_project, int max_queued)
{
	aw_fairq *q = aw_calloc(1, sizeof *q);
	if (!q)
		return NULL;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	q->per_project = per_project;
	q->workers = workers;
	q->max_queued = max_queued;
	return q;
}

static pq *find(aw_fairq *q, const char *project)
{
	pq *p = q->ring;
	if (p)
		do {
			if (!strcmp(p->project, project))
				return p;
			p = p->next;
		} while (p != q->ring);
	return NULL;
}

static void unlink_pq(aw_fairq *q, pq *gone)
{
	pq *prev = q->ring;
	while (prev->next != gone)
		prev = prev->next;
	if (prev == gone) /* the only one */
		q->ring = NULL;
	else {
		prev->next = gone->next;
		if (q->ring == gone)
			q->ring = gone->next;
	}
	free(gone);
}

int fairq_push(aw_fairq *q, const char *project, int cheap, void *item)
{
	node *n = aw_malloc(sizeof *n);
	if (!n)
		return -2;
	n->item = item;
	n->next = NULL;
	pthread_mutex_lock(&q->mu);
	pq *p = find(q, project);
	if (!p) {
		if (!(p = aw_calloc(1, sizeof *p)) || AW_STR_COPY(p->project, project) < 0) {
			pthread_mutex_unlock(&q->mu); /* a ctx's project fits: as out of memory */
			free(p);
			free(n);
			return -2;
		}
		if (q->ring) { /* in behind the cursor: served after the others */
			pq *last = q->ring;
			while (last->next != q->ring)
				last = last->next;
			last->next = p;
			p->next = q->ring;
		} else {
			p->next = p;
			q->ring = p;
		}
	} else if (p->waiting >= q->max_queued) {
		pthread_mutex_unlock(&q->mu);
		free(n);
		return -1;
	}
	int k = cheap ? 0 : 1;
	if (p->t[k])
		p->t[k]->next = n;
	else
		p->h[k] = n;
	p->t[k] = n;
	p->waiting++;
	q->waiting++;
	pthread_mutex_unlock(&q->mu);
	pthread_cond_signal(&q->cv); /* after the unlock: the woken worker takes
					the lock at once */
	return 0;
}

/* The project whose oldest item of kind k may run now, from the cursor. */
static pq *next_runnable(aw_fairq *q, int k)
{
	pq *p = q->ring;
	if (!p)
		return NULL;
	do {
		long bound = aw_bounds_of(q->per_project, p->project);
		if (p->h[k] && (q->stopping || !bound || p->running < bound) &&
		    (q->stopping || !k || q->workers < 2 || q->calls_running < q->workers - 1))
			return p;
		p = p->next;
	} while (p != q->ring);
	return NULL;
}

/* An item is done (holds q->mu): its project's running count goes down. */
static void finish(aw_fairq *q, const aw_fairq_ticket *t)
{
	pq *p = t->p;
	p->running--;
	q->calls_running -= t->call;
	if (!p->running && !p->waiting)
		unlink_pq(q, p);
}

void *fairq_next(aw_fairq *q, const aw_fairq_ticket *done, aw_fairq_ticket *t)
{
	pthread_mutex_lock(&q->mu);
	if (done && done->p) /* this worker looks next: no wake-up for the bound */
		finish(q, done);
	for (;;) {
		int k = 0;
		pq *p = next_runnable(q, 0);
		if (!p && (p = next_runnable(q, 1)))
			k = 1;
		if (p) {
			node *n = p->h[k];
			if (!(p->h[k] = n->next))
				p->t[k] = NULL;
			p->waiting--;
			p->running++;
			q->calls_running += k;
			q->ring = p->next; /* round robin: the others first next time */
			*t = (aw_fairq_ticket){p, k};
			int more = --q->waiting > 0;
			pthread_mutex_unlock(&q->mu);
			if (more) /* the baton: another may be runnable */
				pthread_cond_signal(&q->cv);
			void *item = n->item;
			free(n);
			return item;
		}
		if (q->stopping) {
			pthread_mutex_unlock(&q->mu);
			*t = (aw_fairq_ticket){NULL, 0};
			return NULL;
		}
		pthread_cond_wait(&q->cv, &q->mu);
	}
}

void *fairq_pop(aw_fairq *q, aw_fairq_ticket *t)
{
	return fairq_next(q, NULL, t);
}

void fairq_done(aw_fairq *q, const aw_fairq_ticket *t)
{
	if (!t->p)
		return;
	pthread_mutex_lock(&q->mu);
	finish(q, t);
	int waiting = q->waiting > 0;
	pthread_mutex_unlock(&q->mu);
	if (waiting) /* a bound freed: a waiting item may go now */
		pthread_cond_signal(&q->cv);
}

void fairq_stop(aw_fairq *q)
{
	pthread_mutex_lock(&q->mu);
	q->stopping = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

void fairq_counts(aw_fairq *q, const char *project, int *running, int *waiting)
{
	pthread_mutex_lock(&q->mu);
	pq *p = find(q, project);
	*running = p ? p->running : 0;
	*waiting = p ? p->waiting : 0;
	pthread_mutex_unlock(&q->mu);
}

void fairq_free(aw_fairq *q)
{
	if (!q)
		return;
	while (q->ring) {
		pq *p = q->ring;
		for (int k = 0; k < 2; k++)
			for (node *n = p->h[k], *nx; n; n = nx) {
				nx = n->next;
				free(n);
			}
		unlink_pq(q, p);
	}
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}
