/*
 * channel_store.c - the channel hub's rows (store/channel.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/store/channel.h"
#include "store_internal.h"

aw_err aw_store_channel_lead(aw_txn *t, const char *bot, int64_t *fence, int64_t *next_offset,
			     aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(bot)};
	aw_err e = txn_exec(t,
			    "INSERT INTO channel_offsets (project_id, bot, next_offset, fence)"
			    " VALUES ($1, $2, 0, 1) ON CONFLICT (project_id, bot) DO UPDATE SET"
			    " fence = channel_offsets.fence + 1 RETURNING fence, next_offset",
			    2, v, &r, err);
	if (e)
		return e;
	if (r->nrows != 1)
		e = aw_fail(err, AW_E_INTERNAL, "the bot's offset row did not come back");
	else {
		*fence = cell_ll(r, 0, 0);
		*next_offset = cell_ll(r, 0, 1);
	}
	rows_free(r);
	return e;
}

aw_err aw_store_channel_commit(aw_txn *t, const char *bot, int64_t fence, int64_t next_offset,
			       aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(bot), AW_INT(fence), AW_INT(next_offset)};
	aw_err e = txn_exec(t,
			    "UPDATE channel_offsets SET next_offset = $4 WHERE project_id = $1"
			    " AND bot = $2 AND fence = $3",
			    4, v, &r, err);
	if (e)
		return e;
	if (r->affected != 1)
		e = aw_fail(err, AW_E_CHANNEL_FENCED, "another hub process leads this bot now");
	rows_free(r);
	return e;
}

aw_err aw_store_channel_try(aw_txn *t, const char *bot, int64_t fence, int64_t offset, int *tries,
			    aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(bot), AW_INT(fence), AW_INT(offset)};
	aw_err e = txn_exec(t,
			    "UPDATE channel_offsets SET tries = CASE WHEN tried_offset = $4 THEN"
			    " tries + 1 ELSE 1 END, tried_offset = $4 WHERE project_id = $1 AND"
			    " bot = $2 AND fence = $3 RETURNING tries",
			    4, v, &r, err);
	if (e)
		return e;
	if (r->nrows != 1)
		e = aw_fail(err, AW_E_CHANNEL_FENCED, "another hub process leads this bot now");
	else
		*tries = (int)cell_ll(r, 0, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_conv_event_put(aw_txn *t, const char *bot, const aw_conv_event *ev, const char *at,
			       int *inserted, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project),
		      AW_TEXT(bot),
		      AW_INT(ev->update_id),
		      AW_TEXT(ev->kind),
		      AW_TEXT(ev->chat_id),
		      AW_TEXT(ev->user_id),
		      AW_TEXT(ev->text ? ev->text : ""),
		      AW_TEXT(ev->action),
		      AW_TEXT(ev->run_id[0] ? ev->run_id : NULL),
		      AW_TEXT(at)};
	aw_err e = txn_exec(t,
			    "INSERT INTO conversation_events (project_id, bot, update_id, kind,"
			    " chat_id, user_id, text, action, run_id, received_at) VALUES ($1,"
			    " $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
			    10, v, &r, err);
	if (e)
		return e;
	*inserted = r->affected == 1;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_outbound_put(aw_txn *t, const aw_outbound *m, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project),
		      AW_TEXT(m->msg_id),
		      AW_TEXT(m->bot),
		      AW_TEXT(m->chat_id),
		      AW_TEXT(m->method),
		      AW_TEXT(m->purpose),
		      AW_TEXT(m->text ? m->text : ""),
		      AW_TEXT(m->markup),
		      AW_TEXT(m->target_id[0] ? m->target_id : NULL),
		      AW_TEXT(m->run_id[0] ? m->run_id : NULL),
		      AW_TEXT(m->fingerprint[0] ? m->fingerprint : NULL),
		      AW_TEXT(m->next_at),
		      AW_TEXT(m->created_at)};
	return txn_exec(t,
			"INSERT INTO outbound_messages (project_id, msg_id, bot, chat_id, method,"
			" purpose, text, markup, target_id, run_id, fingerprint, state, attempts,"
			" next_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,"
			" $11, 'pending', 0, $12, $13)",
			13, v, NULL, err);
}

#define OUT_COLS                                                                               \
	"msg_id, bot, chat_id, method, purpose, text, markup, target_id, run_id, fingerprint," \
	" state, attempts, next_at, created_at"

aw_err aw_store_outbound_due(aw_txn *t, const char *now, int limit, aw_outbound **out, int *n,
			     aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(now), AW_INT(limit)};
	*out = NULL;
	*n = 0;
	aw_err e = txn_exec(t,
			    "SELECT " OUT_COLS " FROM outbound_messages WHERE project_id = $1"
			    " AND state = 'pending' AND next_at <= $2 ORDER BY next_at, created_at,"
			    " msg_id LIMIT $3",
			    3, v, &r, err);
	if (e)
		return e;
	aw_outbound *a = aw_calloc((size_t)r->nrows + 1, sizeof *a);
	if (!a) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++) {
		aw_outbound *m = &a[i];
		cell_copy(m->msg_id, sizeof m->msg_id, r, i, 0);
		cell_copy(m->bot, sizeof m->bot, r, i, 1);
		cell_copy(m->chat_id, sizeof m->chat_id, r, i, 2);
		cell_copy(m->method, sizeof m->method, r, i, 3);
		cell_copy(m->purpose, sizeof m->purpose, r, i, 4);
		m->text = aw_strdup(rows_get(r, i, 5) ? rows_get(r, i, 5) : "");
		m->markup = rows_get(r, i, 6) ? aw_strdup(rows_get(r, i, 6)) : NULL;
		cell_copy(m->target_id, sizeof m->target_id, r, i, 7);
		cell_copy(m->run_id, sizeof m->run_id, r, i, 8);
		cell_copy(m->fingerprint, sizeof m->fingerprint, r, i, 9);
		cell_copy(m->state, sizeof m->state, r, i, 10);
		m->attempts = (int)cell_ll(r, i, 11);
		cell_copy(m->next_at, sizeof m->next_at, r, i, 12);
		cell_copy(m->created_at, sizeof m->created_at, r, i, 13);
	}
	*out = a;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

void aw_outbound_free(aw_outbound *m, int n)
{
	for (int i = 0; m && i < n; i++) {
		free(m[i].text);
		free(m[i].markup);
	}
	free(m);
}

aw_err aw_store_outbound_mark(aw_txn *t, const char *msg_id, const char *state, int attempts,
			      const char *next_at, const char *error, int64_t tg_message_id,
			      const char *now, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project),
		      AW_TEXT(msg_id),
		      AW_TEXT(state),
		      AW_INT(attempts),
		      AW_TEXT(next_at),
		      AW_TEXT(error),
		      tg_message_id ? AW_INT(tg_message_id) : AW_TEXT(NULL),
		      AW_TEXT(strcmp(state, "pending") ? now : NULL)};
	return txn_exec(t,
			"UPDATE outbound_messages SET state = $3, attempts = $4,"
			" next_at = coalesce($5, next_at), error = $6, tg_message_id = $7,"
			" sent_at = $8 WHERE project_id = $1 AND msg_id = $2",
			8, v, NULL, err);
}

aw_err aw_store_outbound_state(aw_txn *t, const char *msg_id, char state[16], aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(msg_id)};
	state[0] = 0;
	aw_err e = txn_exec(
		t, "SELECT state FROM outbound_messages WHERE project_id = $1 AND msg_id = $2", 2,
		v, &r, err);
	if (!e && r->nrows == 1)
		cell_copy(state, 16, r, 0, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_outbound_count(aw_txn *t, const char *state, long long *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(state)};
	aw_err e = txn_exec(
		t, "SELECT count(*) FROM outbound_messages WHERE project_id = $1 AND state = $2", 2,
		v, &r, err);
	if (!e)
		*n = cell_ll(r, 0, 0);
	rows_free(r);
	return e;
}

aw_err aw_store_conv_run_put(aw_txn *t, const char *run_id, const char *bot, const char *chat_id,
			     aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id), AW_TEXT(bot), AW_TEXT(chat_id)};
	return txn_exec(t,
			"INSERT INTO conversation_runs (project_id, run_id, bot, chat_id) VALUES"
			" ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
			4, v, NULL, err);
}

aw_err aw_store_conv_runs_open(aw_txn *t, aw_conv_run **out, int *n, aw_error *err)
{
	aw_rows *r = NULL;
	aw_val v[] = {AW_TEXT(t->ctx.project)};
	*out = NULL;
	*n = 0;
	aw_err e = txn_exec(t,
			    "SELECT run_id, bot, chat_id, progress_id, last_text, prompted FROM"
			    " conversation_runs WHERE project_id = $1 AND done = 0 ORDER BY"
			    " run_id LIMIT 500",
			    1, v, &r, err);
	if (e)
		return e;
	aw_conv_run *a = aw_calloc((size_t)r->nrows + 1, sizeof *a);
	if (!a) {
		rows_free(r);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	for (int i = 0; i < r->nrows; i++) {
		cell_copy(a[i].run_id, sizeof a[i].run_id, r, i, 0);
		cell_copy(a[i].bot, sizeof a[i].bot, r, i, 1);
		cell_copy(a[i].chat_id, sizeof a[i].chat_id, r, i, 2);
		a[i].progress_id = cell_ll(r, i, 3);
		cell_copy(a[i].last_text, sizeof a[i].last_text, r, i, 4);
		a[i].prompted = (int)cell_ll(r, i, 5);
	}
	*out = a;
	*n = r->nrows;
	rows_free(r);
	return AW_OK;
}

aw_err aw_store_conv_run_set(aw_txn *t, const char *run_id, int64_t progress_id,
			     const char *last_text, int prompted, int done, aw_error *err)
{
	aw_val v[] = {AW_TEXT(t->ctx.project), AW_TEXT(run_id),	 AW_INT(progress_id),
		      AW_TEXT(last_text),      AW_INT(prompted), AW_INT(done)};
	return txn_exec(t,
			"UPDATE conversation_runs SET progress_id = CASE WHEN $3 = -2 THEN"
			" progress_id ELSE $3 END, last_text = coalesce($4, last_text),"
			" prompted = CASE WHEN $5 < 0 THEN prompted ELSE $5 END,"
			" done = CASE WHEN $6 < 0 THEN done ELSE $6 END"
			" WHERE project_id = $1 AND run_id = $2",
			6, v, NULL, err);
}
