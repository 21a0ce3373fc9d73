/*
 * call.h - what the agent-call doors (the LLM gateway, the MCP gateway) share:
 * the call object each door's call embeds (its references, its lock, the
 * answer as its client reads it: head, stream bytes, parking and waking,
 * the client letting go), the in-flight registry of a process, and the
 * recorder. docs/internals/call.md tells a call's life.
 *
 * Every call of a door is entered here while it runs: listed under its
 * project, counted per door (a door's per-project bound is checked at
 * entry). A door is a static table (aw_door): its name and how to cancel one
 * of its calls. A watcher thread reads, for every project with calls here,
 * whether it is suspended, and cuts its calls (each once, through its
 * door's cancel); it renews this process's budget reservations (the holder
 * id is the registry's), reaps those of dead holders and forgets a project
 * once it has had no call here for watch_idle_ms and no reservation left
 * open.
 *
 * A suspension made here (an operator's, budget line 3) cuts at once and is
 * announced on the invalidations' bus (policy.h); every other process's
 * registry hears it and reads the suspension from the store (the truth: an
 * announcement may arrive after a resume) before it cuts. The store is also
 * polled, every 500 ms, or every watch_bus_ms while a Redis bus is connected.
 */
#ifndef AWOOOP_CALL_H
#define AWOOOP_CALL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "awooop/audit.h"
#include "awooop/buf.h"
#include "awooop/ctx.h"
#include "awooop/err.h"
#include "awooop/policy.h"
#include "awooop/store.h"
#include "awooop/wake.h"

typedef struct aw_calls aw_calls;
typedef struct aw_call aw_call;

typedef struct {
	aw_store *store;	 /* suspensions and reservations; borrowed */
	aw_policy_cache *policy; /* kills ride its bus; borrowed, may be NULL */
	int lease_ms;		 /* reservations renewed every lease/4; default 660000 */
	int watch_idle_ms;	 /* a project without calls stays watched this long;
				    default 10 x lease_ms */
	int watch_bus_ms;	 /* the store's poll while a Redis bus is up; default
				    5000 */
} aw_calls_opts;

aw_err aw_calls_new(const aw_calls_opts *o, aw_calls **out, aw_error *err);
/* Stops the watcher. Every door must have left (aw_calls_door_off). */
void aw_calls_free(aw_calls *r);
/* This process's name for its budget reservations ("host-pid"). */
const char *aw_calls_holder(const aw_calls *r);

/* A door: what the registry asks of a call of it. Each door has one static
 * table (the LLM gateway's llm_door, the MCP gateway's mcp_door). */
typedef struct aw_door {
	const char *name; /* "llm", "mcp": the registry's log lines */
	/* Cuts c, whose project was suspended (c->cut is set already): the door
	 * wakes whatever runs the call, which ends it with the door's own
	 * error. Runs holding the registry's lock: it may not block, nor call
	 * the registry. */
	void (*cancel)(aw_call *c);
} aw_door;

#define AW_CALLS_DOORS 4
/* Registers a door: its slot (0..AW_CALLS_DOORS-1), or -1 when full. A
 * gateway registers its door once; two gateways of one door take two
 * slots. A slot let go is taken again only once its calls have left. */
int aw_calls_door(aw_calls *r, const aw_door *d);
/* After it returns no cancel of the slot runs, nor will. */
void aw_calls_door_off(aw_calls *r, int slot);

/* Call c of project starts in the door of slot: it is listed (a suspension
 * of project cuts it, aw_calls_each finds it) and counted. 0, or 1 (not
 * entered) when the project has bound calls of this slot in flight here
 * (bound 0: none), 2 when the slot's door left (aw_calls_door_off), -1 out
 * of memory or not a project id. *held (may be
 * NULL): the slot's calls of project now. project must live as long as the
 * call is listed (the door's own copy). */
int aw_calls_enter(aw_calls *r, int slot, aw_call *c, const char *project, long bound, long *held);
/* The call ended (entered, or nothing); *held as above. */
void aw_calls_leave(aw_calls *r, aw_call *c, long *held);
/* fn(c, ud) for each call of project listed by slot, under the registry's
 * lock (fn may not block, nor call the registry). */
void aw_calls_each(aw_calls *r, int slot, const char *project, void (*fn)(aw_call *c, void *ud),
		   void *ud);
/* Suspended here: every door's calls of project are cut now and the
 * suspension is announced to the other processes. */
void aw_calls_kill(aw_calls *r, const char *project);
/* Calls of slot in flight here (-1: of every door), over every project. */
long aw_calls_busy(aw_calls *r, int slot);

/* Tests: projects watched; one watcher pass now (reap: renew and reap too). */
int aw_calls_watched(aw_calls *r);
void aw_calls_watch_now(aw_calls *r, int reap);

/* ---- the call object: what a call of either door is to its client. A
 * door's call struct embeds it as its first member (a door gets its own
 * struct back from the base by a cast). Its reference count: the last
 * aw_call_put runs the door's destructor (which frees the door's own
 * fields), then frees the base and the whole struct. Everything a client
 * reads is under mu: the answer bytes out (read from out_off; eof once
 * whole), parked while a reader waits for wake(wake_ud). gone: the client
 * let go (aw_call_gone), read without the lock by the door's workers. */
typedef void (*aw_call_fn)(void *ud);
struct aw_call {
	atomic_int refs;
	pthread_mutex_t mu;
	aw_buf out; /* what the client reads (mu) */
	size_t out_off;
	int eof, parked;
	atomic_int gone;
	aw_call_fn wake; /* wakes a parked reader; NULL: the reader polls */
	void *wake_ud;
	void (*destroy)(aw_call *c);
	/* in the registry, from aw_calls_enter to aw_calls_leave (its lock) */
	const aw_door *door; /* NULL: not entered */
	int slot;
	const char *project;
	int64_t t0_ns;		/* when it entered */
	atomic_int cut;		/* its project was suspended after it entered */
	aw_call *rnext, *rprev; /* its project's calls */
};

/* One reference (the caller's); out holds at most out_max bytes. */
void aw_call_init(aw_call *c, size_t out_max, aw_call_fn wake, void *ud,
		  void (*destroy)(aw_call *));
void aw_call_hold(aw_call *c);
/* NULL: nothing. */
void aw_call_put(aw_call *c);
/* Holding c->mu: appends pre, n bytes of data and post for the client,
 * whole or not at all (past out's ceiling nothing is added: a client that
 * does not read loses what does not fit), and wakes a parked reader. */
void aw_call_add(aw_call *c, const char *pre, const char *data, size_t n, const char *post);
/* Holding c->mu: wakes a parked reader. */
void aw_call_wake(aw_call *c);
/* What the client reads first, under c->mu: head(c, arg), the door's own
 * decision (it hands out what it decided); when that is 0 (nothing decided
 * yet) the reader is parked and park(pud) called (park may be NULL). */
int aw_call_head(aw_call *c, int (*head)(aw_call *c, void *arg), void *arg, aw_call_fn park,
		 void *pud);
/* The answer bytes: n copied, 0 when there are none yet (parked, park(pud)
 * called: the door wakes the reader when it adds some), -1 once eof and
 * all read. */
ssize_t aw_call_read(aw_call *c, char *buf, size_t max, aw_call_fn park, void *pud);
/* The client lets go: it is not woken any more, gone is set. 1 when the
 * answer was already whole (eof). The caller's reference is its own. */
int aw_call_gone(aw_call *c);

/* An in-process caller's wait for its call (a run step's model or tool
 * call, woken through w by the call's wake): returns AW_OK once woken, or
 * the step's end - AW_E_RUN_CANCELLED once *stop is set, AW_E_RUN_TIMEOUT
 * once deadline_ns (aw_clock_mono_ns; 0: none) has passed - seen within
 * 100 ms. what names the call in the error ("model call", "tool call").
 * Both doors' waited-for forms loop: head, then this, until decided. */
aw_err aw_call_await(aw_wake *w, const atomic_bool *stop, int64_t deadline_ns, const char *what,
		     aw_error *err);

/* ---- the recorder: a door's background writer of what its calls leave
 * (audit records, budget settlements). Records are queued by the thread
 * that ended the call and written on the recorder's thread, one project's
 * in queue order per transaction, at most AW_RECORD_BATCH at once; a batch
 * lingers linger_ms for the records of the calls ending with it (fewer,
 * larger writes). Idle, the thread ticks its loop metric every tick_ms. */
typedef struct aw_call_rec {
	struct aw_call_rec *next;
	const char *project; /* the record's project (in the door's record) */
} aw_call_rec;

#define AW_RECORD_BATCH 64

typedef struct aw_recorder aw_recorder;
typedef struct {
	const char *thread; /* the thread's name, e.g. "aw-llm-audit" */
	const char *loop;   /* its loop metric, e.g. "llm_recorder" */
	int linger_ms;	    /* default 0: none */
	int tick_ms;	    /* default 1000 */
	/* writes n records of one project, in queue order, and lets go of them */
	void (*write)(void *ud, aw_call_rec **recs, int n);
	/* the door's other background work, each turn (NULL: none) */
	void (*chores)(void *ud);
	void *ud;
} aw_recorder_opts;

aw_err aw_recorder_start(const aw_recorder_opts *o, aw_recorder **out, aw_error *err);
void aw_recorder_put(aw_recorder *r, aw_call_rec *rec);
/* The door has chores waiting: the thread runs them at once. */
void aw_recorder_wake(aw_recorder *r);
/* A record is coming (+1), or was put or will not come (-1): a flush waits
 * for the records coming too. */
void aw_recorder_expect(aw_recorder *r, int delta);
/* A door's write hook's transaction: n audit items of one project (the
 * project of c0, whose context is used uncharged: background work) written
 * in one transaction, after before(t, ud) (NULL: nothing; the LLM door
 * settles its budget holds there); the items' payloads are redacted in
 * place (aw_audit_record_many_spent). On failure nothing is written and
 * `lost` is logged with the reason. */
void aw_recorder_commit(aw_store *store, const aw_ctx *c0, const aw_audit_item *items, int n,
			aw_err (*before)(aw_txn *t, void *ud, aw_error *err), void *ud,
			const char *lost);
/* Returns once everything queued (and coming) is written. */
void aw_recorder_flush(aw_recorder *r);
/* Writes what is queued, runs the chores a last time, stops the thread and
 * frees r (NULL: nothing). */
void aw_recorder_stop(aw_recorder *r);

#endif
