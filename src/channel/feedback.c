/*
 * feedback.c - the progressive feedback of runs started from a chat: one
 * progress message, edited at most every progress_interval_s with the
 * run's steps done (and where an agent step is: its turn and tool); Approve/Deny buttons when the run waits for approval;
 * a final message with its result or error - the answer itself when the
 * last step answered in text (an agent, a model), as a reply to the
 * message that started the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/run.h"
#include "awooop/store/channel.h"
#include "awooop/str.h"
#include "channel_internal.h"

static void short_id(const char *run_id, char out[9])
{
	snprintf(out, 9, "%.8s", run_id);
}

/* How far a run is: its steps, and those its journal says succeeded. */
void hub_steps_done(const aw_run *r, const aw_run_step *st, int n, int *done, int *total)
{
	json_t *wf = json_loads(r->workflow, 0, NULL);
	*total = (int)json_array_size(wf);
	json_decref(wf);
	*done = 0;
	for (int i = 0; i < n; i++)
		*done += !strcmp(st[i].state, "succeeded") || !strcmp(st[i].state, "skipped");
}

static void progress_text(const aw_run *r, int done, int total, char *out, size_t cap)
{
	char sid[9];
	short_id(r->run_id, sid);
	aw_run_state s = AW_RUN_QUEUED;
	aw_run_state_parse(r->state, &s);
	const char *icon = s == AW_RUN_SUCCEEDED			 ? "\xe2\x9c\x85"
			   : s == AW_RUN_FAILED || s == AW_RUN_CANCELLED ? "\xe2\x9d\x8c"
			   : s == AW_RUN_WAITING_APPROVAL		 ? "\xe2\x9c\x8b"
			   : s == AW_RUN_SUGGESTED			 ? "\xf0\x9f\x92\xa1"
									 : "\xe2\x8f\xb3";
	snprintf(out, cap, "%s Run %s: %s, %d of %d steps done%s%s", icon, sid, r->state, done,
		 total, r->error_code[0] ? ", error " : "", r->error_code);
}

/* The text a run's last step answered with - an agent's or a model's
 * "content" - copied into out (shown to people: a longer one is cut at a
 * whole character and ends "..."): 1, else 0. */
static int answer_text(const char *result, char *out, size_t cap)
{
	json_t *res = result ? json_loads(result, 0, NULL) : NULL;
	const char *a = json_string_value(json_object_get(res, "content"));
	int ok = a && *a;
	if (ok)
		aw_str_show(out, cap, a);
	json_decref(res);
	return ok;
}

/* A wait's number, as conversation_runs.prompted keeps the last one
 * prompted: the step's (1-based n) for an approval step - 1 for the first,
 * what a row written before waits were told apart holds - and 1000 n + the
 * call's for an agent's tool call ("call" in the parked step's result). */
static int wait_id(int n, const json_t *parked)
{
	json_t *call = json_object_get(parked, "call");
	if (json_is_integer(call) && json_integer_value(call) > 0 &&
	    json_integer_value(call) < 1000000)
		return 1000 * n + (int)json_integer_value(call);
	return n;
}

static aw_err feedback_run(aw_hub *h, aw_txn *t, const aw_ctx *ctx, int interval_s,
			   const aw_conv_run *cr, aw_error *err)
{
	aw_run r;
	aw_run_step *st = NULL;
	int n = 0;
	aw_err e = aw_run_get(h->o.store, ctx, cr->run_id, &r, &st, &n, err);
	if (e == AW_E_RUN_NOT_FOUND)
		return aw_store_conv_run_set(t, cr->run_id, -2, NULL, cr->prompted, 1, err);
	if (e)
		return e;
	int done, total;
	hub_steps_done(&r, st, n, &done, &total);
	char text[512];
	progress_text(&r, done, total, text, sizeof text);
	aw_run_state s = AW_RUN_QUEUED;
	aw_run_state_parse(r.state, &s);
	int terminal = aw_run_state_terminal(s);
	aw_run_agent_status as;
	aw_error aerr = {0};
	char line[256] = "";
	if (!terminal && aw_run_agent_progress(h->o.store, ctx, cr->run_id, &as, &aerr) == AW_OK)
		aw_run_agent_progress_text(&as, line, sizeof line);
	if (line[0]) /* where an agent is: "calling get_alerts__ewoooc, turn 3 of 8" */
		snprintf(text + strlen(text), sizeof text - strlen(text), " - %s", line);
	int64_t now = hub_now_ms();
	json_t *last = json_object_get(h->edits, cr->run_id);
	int due = !last || now - json_integer_value(last) >= (int64_t)interval_s * 1000;
	int prompted = cr->prompted;
	if (cr->progress_id == 0) { /* the progress message, once */
		e = hub_queue(t, cr->bot, cr->chat_id, "send", "progress", text, NULL, NULL,
			      cr->run_id, NULL, NULL, err);
		if (!e)
			e = aw_store_conv_run_set(t, cr->run_id, -1, text, prompted, 0, err);
		json_object_set_new(h->edits, cr->run_id, json_integer(now));
	} else if (cr->progress_id > 0 && strcmp(text, cr->last_text) && (due || terminal)) {
		char target[32];
		snprintf(target, sizeof target, "%lld", (long long)cr->progress_id);
		e = hub_queue(t, cr->bot, cr->chat_id, "edit", "progress", text, NULL, target,
			      cr->run_id, NULL, NULL, err);
		if (!e)
			e = aw_store_conv_run_set(t, cr->run_id, -2, text, prompted, 0, err);
		json_object_set_new(h->edits, cr->run_id, json_integer(now));
	}
	/* which wait this is: a run may wait more than once - an agent for
	 * each call of a tool that needs an approval, a workflow at each of
	 * its approval steps - and each wait gets its own prompt */
	json_t *wres = s == AW_RUN_WAITING_APPROVAL && n > 0 && st[n - 1].result
			       ? json_loads(st[n - 1].result, 0, NULL)
			       : NULL;
	int wait = wait_id(n, wres);
	if (!e && s == AW_RUN_WAITING_APPROVAL && prompted != wait && n > 0) {
		char data_a[64], data_d[64], msg[700];
		snprintf(data_a, sizeof data_a, "ap:%s:a", r.run_id);
		snprintf(data_d, sizeof data_d, "ap:%s:d", r.run_id);
		const char *sum = json_string_value(json_object_get(wres, "summary"));
		snprintf(msg, sizeof msg, "Run %s waits for approval%s%.500s", r.run_id,
			 sum ? ": " : ".", sum ? sum : "");
		json_t *kb = json_pack("{s:[[{s:s, s:s}, {s:s, s:s}]]}", "inline_keyboard", "text",
				       "Approve", "callback_data", data_a, "text", "Deny",
				       "callback_data", data_d);
		e = hub_queue(t, cr->bot, cr->chat_id, "send", "prompt", msg, kb, NULL, cr->run_id,
			      NULL, NULL, err);
		json_decref(kb);
		prompted = wait;
		if (!e)
			e = aw_store_conv_run_set(t, cr->run_id, -2, NULL, prompted, 0, err);
	}
	json_decref(wres);
	if (!e && terminal) {
		char msg[3800], reply_to[24] = "";
		char *res = n > 0 && st[n - 1].result ? st[n - 1].result : NULL;
		json_t *in = r.input ? json_loads(r.input, 0, NULL) : NULL;
		json_t *mid = json_object_get(in, "message_id");
		if (json_is_integer(mid))
			snprintf(reply_to, sizeof reply_to, "%lld",
				 (long long)json_integer_value(mid));
		json_decref(in);
		if (s == AW_RUN_SUCCEEDED && answer_text(res, msg, sizeof msg))
			; /* the agent's (or the model's) answer is the reply itself */
		else if (s == AW_RUN_SUCCEEDED)
			snprintf(msg, sizeof msg, "Run %s succeeded.%s%.3000s", r.run_id,
				 res ? "\nResult: " : "", res ? res : "");
		else if (s == AW_RUN_SUGGESTED)
			snprintf(msg, sizeof msg,
				 "Run %s: suggest mode, nothing was executed.\n%.3000s", r.run_id,
				 res ? res : "");
		else
			snprintf(msg, sizeof msg, "Run %s %s%s%s.", r.run_id, r.state,
				 r.error_code[0] ? ": " : "", r.error_code);
		e = hub_queue(t, cr->bot, cr->chat_id, "send", "final", msg, NULL,
			      reply_to[0] ? reply_to : NULL, cr->run_id, NULL, NULL, err);
		if (!e)
			e = aw_store_conv_run_set(t, cr->run_id, -2, NULL, prompted, 1, err);
		json_object_del(h->edits, cr->run_id);
	}
	aw_run_free(&r);
	aw_run_steps_free(st, n);
	return e;
}

/* One pass over the project's runs started from a chat: their progress
 * messages, approval prompts and final messages, in one transaction. */
void hub_feedback(aw_hub *h, const char *project)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, project);
	aw_error err = {0};
	aw_txn *t = NULL;
	aw_conv_run *rs = NULL;
	int nr = 0;
	if (aw_store_begin(h->o.store, &ctx, AW_TXN_WRITE, &t, &err))
		return;
	aw_err e = aw_store_conv_runs_open(t, &rs, &nr, &err);
	for (int k = 0; !e && k < nr; k++) {
		pthread_mutex_lock(&h->mu);
		hub_bot *b = hub_bot_named(h, project, rs[k].bot);
		int iv = b ? b->interval_s : 30;
		pthread_mutex_unlock(&h->mu);
		e = feedback_run(h, t, &ctx, iv, &rs[k], &err);
	}
	free(rs);
	if (e)
		aw_store_rollback(t);
	else
		aw_store_commit(t, &err);
}
