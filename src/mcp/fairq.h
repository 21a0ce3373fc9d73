/*
 * fairq.h - the MCP gateway's work queue, fair between projects: a queue per
 * project, served round robin, cheap requests (everything but tools/call
 * and the relayed reads) before upstream calls; at most `per_project`
 * (a bound the platform sets per project) of one project's requests run at
 * once, and upstream calls leave one worker free for cheap requests. One
 * tenant's slow upstream holds its own share of the workers, never all.
 */
#ifndef AW_MCP_FAIRQ_H
#define AW_MCP_FAIRQ_H

#include "awooop/bounds.h"

typedef struct aw_fairq aw_fairq;
/* What fairq_done needs of a popped item (the caller's, opaque). */
typedef struct {
	void *p;
	int call;
} aw_fairq_ticket;

/* workers: the threads that pop; per_project: the running bound per project;
 * max_queued: requests one project may have waiting. Borrowed: per_project. */
aw_fairq *fairq_new(int workers, const aw_bounds *per_project, int max_queued);
void fairq_free(aw_fairq *q);
/* Queues item for project. -1 (nothing queued) when the project already has
 * max_queued waiting, -2 out of memory. */
int fairq_push(aw_fairq *q, const char *project, int cheap, void *item);
/* Waits for the next item a worker may run (NULL once stopped and empty;
 * after fairq_stop every queued item is handed out, bounds or not).
 * *t identifies it for fairq_done. */
void *fairq_pop(aw_fairq *q, aw_fairq_ticket *t);
/* The popped item is done: its project's running count goes down. */
void fairq_done(aw_fairq *q, const aw_fairq_ticket *t);
/* A worker's turn: fairq_done of done (NULL or an empty ticket: none), then
 * fairq_pop, under one lock. */
void *fairq_next(aw_fairq *q, const aw_fairq_ticket *done, aw_fairq_ticket *t);
void fairq_stop(aw_fairq *q);
/* Running and waiting requests of project (tests, metrics). */
void fairq_counts(aw_fairq *q, const char *project, int *running, int *waiting);

#endif
