/*
 * executor.h - the run runtime's step kinds: what a step executor is given
 * (aw_step_call), what it implements (aw_executor), and the registry the
 * workers and the submission check look kinds up in. Services register
 * their kinds at start-up (llm: provider, tool: mcp, approval: approval).
 */
#ifndef AWOOOP_EXECUTOR_H
#define AWOOOP_EXECUTOR_H

#include <jansson.h>
#include <stdatomic.h>

#include "awooop/store/run.h"

typedef enum {
	AW_STEP_NEXT = 0, /* the step is done: the run goes on (or ends) */
	AW_STEP_PARK,	  /* the run waits for approval (waiting_approval) */
	AW_STEP_SUGGEST,  /* suggest mode: the run ends `suggested`, nothing more runs */
} aw_step_outcome;

typedef struct {
	const char *run_id;
	const char *project;
	int step_no;
	const char *idem_key;	  /* pass to the outside world */
	const char *traceparent;  /* the run's trace, a new span for this step */
	const json_t *args;	  /* validated */
	const json_t *input;	  /* the run's input, may be NULL */
	const json_t *workflow;	  /* the run's steps */
	int64_t deadline_ns;	  /* aw_clock_mono_ns() deadline of the attempt */
	const atomic_bool *stop;  /* true: cancelled or shutting down; return */
	aw_store *store;	  /* the worker's store */
	const char *holder;	  /* the worker holding the run's lease, and */
	int attempt;		  /* the claim's attempt: what fences the step's
				     own writes (the agent's journal) */
	aw_step_outcome *outcome; /* parking executors set it (AW_STEP_NEXT preset) */
	int approved;		  /* the step parked before and was approved */
} aw_step_call;

typedef struct aw_executor {
	const char *kind;
	int side_effect; /* shadow mode records intent() instead of calling run() */
	int instant;	 /* returns at once without I/O (noop, fail): a run whose first
			    step is instant is started in the same transaction that
			    journals that step */
	/* Checks args at submission; AW_E_RUN_WORKFLOW (err->where relative). */
	aw_err (*validate)(const json_t *args, aw_error *err);
	/* Executes; *result (new reference) describes what happened. Failure:
	 * AW_E_RUN_STEP / AW_E_RUN_TIMEOUT / AW_E_RUN_CANCELLED. */
	aw_err (*run)(const aw_step_call *c, json_t **result, aw_error *err);
	/* The intended effect (e.g. method, url, body hash); new reference. */
	json_t *(*intent)(const json_t *args);
	int parks; /* may set AW_STEP_PARK: a run holding such a step reads its
		      journal at every claim (an approval resumes it) */
} aw_executor;

/* The root of tenants' file: secret references: an http step's header
 * {"secret_ref": REF} resolves in its run's project's namespace only
 * (aw_secret_tenant_resolve: env:NAME is AWOOOP_T_<PROJECT>__NAME, file:PATH
 * is DIR/<project>/PATH). NULL or "": file: references do not resolve. Call
 * before workers start. */
aw_err aw_run_secrets_dir(const char *dir, aw_error *err); /* AW_E_CONFIG: too long */

/* Built-ins: noop, sleep {"ms"}, fail {"message"?}, http {"method", "url",
 * "body"?}; llm (llm.h), tool (mcp.h), agent (agent.h) and approval
 * (approval.h) are registered by their services. */
const aw_executor *aw_executor_find(const char *kind);
/* Registers an executor (not thread-safe: at start-up). -1 when full/taken. */
int aw_executor_register(const aw_executor *x);
/* The step kinds this process runs, built-ins first then in registration
 * order: the first cap names (static strings) into kinds; returns how many
 * there are. */
size_t aw_executor_kinds(const char **kinds, size_t cap);

#endif
