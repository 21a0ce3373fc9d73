/*
 * inbound.c - what an update from a chat does, polled or posted: a chat and
 * a user the channel serves, a rule matched (its run started, idempotent by
 * update id), /status answered, an approval button decided; then mirrored
 * (its text redacted), answered, audited and committed in one transaction,
 * fenced by the poller's lease.
 */
#include <stdio.h>
#include <string.h>

#include "awooop/approval.h"
#include "awooop/audit.h"
#include "awooop/log.h"
#include "awooop/metrics.h"
#include "awooop/pattern.h"
#include "awooop/redact.h"
#include "awooop/run.h"
#include "awooop/store/channel.h"
#include "awooop/str.h"
#include "channel_internal.h"

static const char *principal_of(const hub_bot *b, const char *user_id)
{
	size_t i;
	json_t *u;
	json_array_foreach (json_object_get(b->channel, "users"), i, u)
		if (!strcmp(json_string_value(json_object_get(u, "user_id")) ?: "", user_id))
			return json_string_value(json_object_get(u, "principal"));
	return NULL;
}

static int chat_served(const hub_bot *b, const char *chat_id)
{
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(b->channel, "chats"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "chat_id")) ?: "", chat_id))
			return 1;
	return 0;
}

/* Rule i's pattern (checked when its revision was written, compiled in
 * hub_bot_from) against a message: bounded whatever either holds (pattern.h). */
static int matches(const hub_bot *b, size_t i, const char *text)
{
	const aw_pattern *re = b->match ? b->match[i] : NULL;
	if (!re)
		return 0;
	int ok = aw_pattern_match(re, text, strlen(text));
	if (ok < 0) {
		aw_ctx ctx;
		aw_ctx_system(&ctx, b->project);
		aw_log(AW_LOG_WARN, &ctx, "a rule's pattern hit its match limit: no match", "bot",
		       b->name, NULL);
	}
	return ok == 1;
}

/* The rule a message or command triggers, or NULL. */
static const json_t *rule_for(const hub_bot *b, const aw_tg_update *u)
{
	size_t i;
	json_t *r;
	json_array_foreach (json_object_get(b->channel, "rules"), i, r) {
		const char *ev = json_string_value(json_object_get(r, "event"));
		const char *cmd = json_string_value(json_object_get(r, "command"));
		const char *m = json_string_value(json_object_get(r, "match"));
		if (!strcmp(u->kind, "command") && ev && !strcmp(ev, "command") && cmd) {
			size_t n = strlen(cmd);
			if (!strncmp(u->text, cmd, n) &&
			    (u->text[n] == 0 || u->text[n] == ' ' || u->text[n] == '@'))
				return r;
		} else if (!strcmp(u->kind, "message") && ev && !strcmp(ev, "message") &&
			   (!m || matches(b, i, u->text))) {
			return r;
		}
	}
	return NULL;
}

/* "/status RUN": the run's state, from the run runtime. */
static void status_text(const aw_hub_opts *o, const aw_ctx *ctx, const char *arg, char *out,
			size_t cap)
{
	while (*arg == ' ')
		arg++;
	aw_run r;
	aw_run_step *st = NULL;
	int n = 0;
	aw_error err = {0};
	if (!aw_uuid_valid(arg) || aw_run_get(o->store, ctx, arg, &r, &st, &n, &err) != AW_OK) {
		snprintf(out, cap, "No run %.40s in this project. Usage: /status RUN_ID", arg);
		return;
	}
	int done, total;
	hub_steps_done(&r, st, n, &done, &total);
	snprintf(out, cap, "Run %s: %s, %d of %d steps done%s%s", r.run_id, r.state, done, total,
		 r.error_code[0] ? ", error " : "", r.error_code);
	aw_run_free(&r);
	aw_run_steps_free(st, n);
}

/* Starts the template's run for an update (idempotent by update id). */
static aw_err start_run(const aw_hub_opts *o, const hub_bot *b, const aw_ctx *ctx,
			const json_t *rule, const aw_tg_update *u, char run_id[AW_UUID_STR_LEN + 1],
			aw_error *err)
{
	const char *tname = json_string_value(json_object_get(rule, "run_template"));
	json_t *tpl = json_object_get(b->templates, tname ? tname : "");
	if (!json_is_object(tpl))
		return aw_fail(err, AW_E_CHANNEL_UNKNOWN, "the channel has no run template %s",
			       tname ? tname : "");
	json_t *body = json_pack("{s:O, s:{s:s, s:s, s:s, s:I, s:s}}", "workflow",
				 json_object_get(tpl, "workflow"), "input", "text", u->text,
				 "chat_id", u->chat_id, "user_id", u->user_id, "update_id",
				 (json_int_t)u->update_id, "bot", b->name);
	json_t *attempts = json_object_get(tpl, "max_attempts");
	if (body && json_is_integer(attempts)) /* an agent's run outlives worker crashes */
		json_object_set(body, "max_attempts", attempts);
	if (body && u->message_id > 0) /* what the answer replies to */
		json_object_set_new(json_object_get(body, "input"), "message_id",
				    json_integer(u->message_id));
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_run_request req;
	aw_err e = aw_run_request_decode(text, strlen(text), &req, err);
	free(text);
	if (e)
		return e;
	char key[96];
	snprintf(key, sizeof key, "tg/%s/%lld", b->name, (long long)u->update_id);
	aw_run run;
	int replayed = 0;
	e = aw_run_submit(o->store, ctx, &req, key, &run, &replayed, err);
	aw_run_request_free(&req);
	if (!e) {
		memcpy(run_id, run.run_id, AW_UUID_STR_LEN + 1);
		aw_run_free(&run);
	}
	return e;
}

/* The update's mirror row (its text redacted), with action. */
static void mirror_of(const char *project, pending *p, const char *action)
{
	aw_tg_update *u = &p->u;
	aw_conv_event *ev = &p->ev;
	ev->update_id = u->update_id;
	AW_COPY_ARRAY(ev->kind, u->kind);
	memcpy(ev->chat_id, u->chat_id, sizeof ev->chat_id);
	memcpy(ev->user_id, u->user_id, sizeof ev->user_id);
	p->redacted = aw_redact_str_for(project, u->text);
	ev->text = p->redacted ? p->redacted : "";
	(void)!AW_STR_COPY(ev->action, action); /* one of this file's action literals */
}

/* Decides what an update does; the runs and decisions it causes happen here
 * (each idempotent: a re-fetched update finds them done), its rows in the
 * batch transaction. */
void hub_act(const aw_hub_opts *o, const hub_bot *b, pending *p)
{
	aw_tg_update *u = &p->u;
	aw_conv_event *ev = &p->ev;
	mirror_of(b->project, p, "ignored");
	if (!u->chat_id[0] || !chat_served(b, u->chat_id) || !strcmp(u->kind, "other"))
		return;
	const char *who = principal_of(b, u->user_id);
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	/* a mapped name that does not fit is no mapping: the user acts as
	 * telegram-ID (never as a cut name, another principal) */
	if (!who || AW_STR_COPY(ctx.principal, who) < 0)
		snprintf(ctx.principal, sizeof ctx.principal, "telegram-%.40s", u->user_id);
	aw_error err = {0};
	if (!strcmp(u->kind, "callback")) {
		char run[AW_UUID_STR_LEN + 1] = "";
		char d = 0;
		snprintf(ev->action, sizeof ev->action, "approval");
		if (strlen(u->text) == 3 + AW_UUID_STR_LEN + 2 && !strncmp(u->text, "ap:", 3) &&
		    u->text[3 + AW_UUID_STR_LEN] == ':') {
			memcpy(run, u->text + 3, AW_UUID_STR_LEN);
			d = u->text[3 + AW_UUID_STR_LEN + 1];
		}
		if (!aw_uuid_valid(run) || (d != 'a' && d != 'd')) {
			snprintf(p->answer, sizeof p->answer, "Unknown button.");
		} else if (!who || !o->approvals) {
			snprintf(p->answer, sizeof p->answer,
				 "Your Telegram account is not an approver here.");
		} else {
			aw_approval_decision dec = {.run_id = run,
						    .principal = who,
						    .decision = d == 'a' ? "approve" : "deny",
						    .via = "telegram"};
			json_t *out = NULL;
			aw_err e = aw_approvals_decide(o->approvals, &ctx, &dec, &out, &err);
			if (e)
				snprintf(p->answer, sizeof p->answer, "%s: %.150s", aw_err_code(e),
					 err.msg);
			else
				snprintf(p->answer, sizeof p->answer, "%s recorded (%lld of %lld).",
					 d == 'a' ? "Approval" : "Denial",
					 (long long)json_integer_value(
						 json_object_get(out, "approvals")),
					 (long long)json_integer_value(
						 json_object_get(out, "threshold")));
			json_decref(out);
			memcpy(ev->run_id, run, sizeof run);
		}
		return;
	}
	if (!strcmp(u->kind, "command") && !strncmp(u->text, "/status", 7) &&
	    (u->text[7] == ' ' || u->text[7] == 0)) {
		snprintf(ev->action, sizeof ev->action, "status");
		status_text(o, &ctx, u->text + 7, p->reply, sizeof p->reply);
		return;
	}
	const json_t *rule = rule_for(b, u);
	if (!rule)
		return;
	aw_err e = start_run(o, b, &ctx, rule, u, ev->run_id, &err);
	if (e) {
		snprintf(ev->action, sizeof ev->action, "refused");
		snprintf(p->reply, sizeof p->reply, "Could not start the run: %s %.200s",
			 aw_err_code(e), err.msg);
		return;
	}
	snprintf(ev->action, sizeof ev->action, "run");
}

/* Mirrors, answers and commits a batch, fenced. */
aw_err hub_commit_batch(const aw_hub_opts *o, const hub_bot *b, int64_t fence, pending *ps, int n,
			int64_t next_offset, aw_error *err)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(o->store, &ctx, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	for (int i = 0; i < n && !e; i++) {
		pending *p = &ps[i];
		int fresh = 0;
		if ((e = aw_store_conv_event_put(t, b->name, &p->ev, now, &fresh, err)) || !fresh)
			continue; /* mirrored before: its effects were committed with it */
		if (p->reply[0])
			e = hub_queue(t, b->name, p->u.chat_id, "send", "reply", p->reply, NULL,
				      NULL, NULL, NULL, NULL, err);
		if (!e && p->answer[0])
			e = hub_queue(t, b->name, p->u.chat_id, "answer", "answer", p->answer, NULL,
				      p->u.callback_id, p->ev.run_id, NULL, NULL, err);
		if (!e && !strcmp(p->ev.action, "run"))
			e = aw_store_conv_run_put(t, p->ev.run_id, b->name, p->u.chat_id, err);
		char target[96];
		snprintf(target, sizeof target, "tg/%s/%lld", b->name, (long long)p->u.update_id);
		json_t *pl = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?}", "kind", p->ev.kind,
				       "chat_id", p->ev.chat_id, "user_id", p->ev.user_id, "text",
				       p->ev.text, "action", p->ev.action, "run_id",
				       p->ev.run_id[0] ? p->ev.run_id : NULL);
		if (!e)
			e = aw_audit_record(t, &ctx, "channel.inbound", target, pl, err);
		json_decref(pl);
	}
	if (!e && fence) /* a webhook update has no offset: its mirror row dedups */
		e = aw_store_channel_commit(t, b->name, fence, next_offset, err);
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err)))
		return e;
	for (int i = 0; i < n; i++)
		aw_metrics_channel(b->project, "in", ps[i].ev.action);
	return AW_OK;
}

/* Mirrors p as poisoned: recorded (its text redacted, as any), audited with
 * the batch, never acted on. */
void hub_poison(const hub_bot *b, pending *p, aw_error *err)
{
	aw_ctx ctx;
	aw_ctx_system(&ctx, b->project);
	char id[24];
	snprintf(id, sizeof id, "%lld", (long long)p->u.update_id);
	aw_log(AW_LOG_ERROR, &ctx, "channel update poisoned: skipped after repeated failures",
	       "bot", b->name, "update_id", id, "detail",
	       err->msg[0] ? err->msg : "the batch was fetched again without a commit", NULL);
	mirror_of(b->project, p, "poisoned");
}
