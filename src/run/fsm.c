/*
 * fsm.c - the run state machine: the one transition table. Every change of a
 * run's state anywhere (API, worker, reaper) is checked here first; a pair
 * missing from the table is an illegal transition (E-RUN-002).
 */
#include <string.h>

#include "awooop/run.h"

static const char *const actions[AW_RUN_NSTATES] = {
	"run.queued",	 "run.claimed", "run.running",	 "run.waiting_approval", "run.retry_wait",
	"run.succeeded", "run.failed",	"run.cancelled", "run.suggested",
};

static const char *const names[AW_RUN_NSTATES] = {
	"queued",    "claimed", "running",   "waiting_approval", "retry_wait",
	"succeeded", "failed",	"cancelled", "suggested",
};

/* table[from][to] = the event that moves a run from -> to */
static const char *const table[AW_RUN_NSTATES][AW_RUN_NSTATES] = {
	[AW_RUN_QUEUED] =
		{
			[AW_RUN_CLAIMED] = "claim",
			[AW_RUN_CANCELLED] = "cancel",
		},
	[AW_RUN_CLAIMED] =
		{
			[AW_RUN_QUEUED] = "release",
			[AW_RUN_RUNNING] = "start",
			[AW_RUN_RETRY_WAIT] = "lease_expired",
			[AW_RUN_FAILED] = "attempts_exhausted",
			[AW_RUN_CANCELLED] = "cancel",
		},
	[AW_RUN_RUNNING] =
		{
			[AW_RUN_QUEUED] = "release",
			[AW_RUN_WAITING_APPROVAL] = "await_approval",
			[AW_RUN_RETRY_WAIT] = "retry",
			[AW_RUN_SUCCEEDED] = "complete",
			[AW_RUN_FAILED] = "fail",
			[AW_RUN_CANCELLED] = "cancel",
			[AW_RUN_SUGGESTED] = "suggest",
		},
	/* an approval re-queues the run: a worker claims it and goes on with the
	 * step after the approval (its journal says the approval succeeded) */
	[AW_RUN_WAITING_APPROVAL] =
		{
			[AW_RUN_QUEUED] = "approved",
			[AW_RUN_FAILED] = "rejected",
			[AW_RUN_CANCELLED] = "cancel",
		},
	[AW_RUN_RETRY_WAIT] =
		{
			[AW_RUN_CLAIMED] = "claim",
			[AW_RUN_CANCELLED] = "cancel",
		},
	/* succeeded, failed, cancelled, suggested: terminal */
};

const char *aw_run_state_name(aw_run_state s)
{
	return s >= 0 && s < AW_RUN_NSTATES ? names[s] : "unknown";
}

int aw_run_state_parse(const char *name, aw_run_state *out)
{
	for (int i = 0; name && i < AW_RUN_NSTATES; i++)
		if (strcmp(name, names[i]) == 0) {
			*out = (aw_run_state)i;
			return 0;
		}
	return -1;
}

const char *aw_run_fsm_event(aw_run_state from, aw_run_state to)
{
	if (from < 0 || from >= AW_RUN_NSTATES || to < 0 || to >= AW_RUN_NSTATES)
		return NULL;
	return table[from][to];
}

int aw_run_state_terminal(aw_run_state s)
{
	return s == AW_RUN_SUCCEEDED || s == AW_RUN_FAILED || s == AW_RUN_CANCELLED ||
	       s == AW_RUN_SUGGESTED;
}

const char *aw_run_action(aw_run_state s)
{
	return s >= 0 && s < AW_RUN_NSTATES ? actions[s] : "run.unknown";
}

aw_err aw_run_fsm_check(aw_run_state from, aw_run_state to, aw_error *err)
{
	return aw_run_fsm_event(from, to)
		       ? AW_OK
		       : aw_fail(err, AW_E_RUN_STATE, "a run cannot go from %s to %s",
				 aw_run_state_name(from), aw_run_state_name(to));
}

json_t *aw_run_move_json(aw_run_state from, aw_run_state to, json_t *payload)
{
	json_t *p = payload ? payload : json_object();
	if (p) {
		json_object_set_new(p, "from", json_string(aw_run_state_name(from)));
		json_object_set_new(p, "to", json_string(aw_run_state_name(to)));
		json_object_set_new(p, "event", json_string(aw_run_fsm_event(from, to)));
	}
	return p;
}
