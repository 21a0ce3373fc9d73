/*
 * keymig.c - the INV-1 phase engine (see keymig.h): reads a pattern's phase,
 * decides a step's gate from the adapter's counters, writes the new phase and
 * its audit record in one transaction.
 */
#include "awooop/keymig.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/clock.h"
#include "awooop/store/keymig.h"
#include "awooop/store/tenancy.h"
#include "awooop/str.h"

enum { PH_NONE, PH_A, PH_B, PH_C, PH_DONE };

aw_err aw_keymig_status(aw_store *s, aw_kv *kv, const aw_ctx *ctx, const char *pattern,
			aw_kv_status *st, aw_error *err)
{
	if (kv)
		return aw_kv_status_get(kv, ctx, pattern, st, err);
	memset(st, 0, sizeof *st);
	const aw_key_pattern *p = aw_keys_find(pattern);
	if (!p)
		return aw_fail(err, AW_E_KEYS_PATTERN, "unknown key pattern");
	aw_ctx c;
	aw_ctx_with_project(ctx, aw_kv_owner(p, ctx), &c);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, &c, AW_TXN_READ, &t, err);
	if (e)
		return e;
	e = aw_store_keymig_get(t, p->name, st->phase, sizeof st->phase, st->since, err);
	aw_store_rollback(t);
	return e;
}

/* Why the step from have to want may not be taken yet (msg), or NULL. */
static const char *gate(aw_kv *kv, int want, int64_t age_s, const aw_kv_status *st, char *msg,
			size_t cap)
{
	int w = aw_kv_window_s(kv, want - 1);
	if (want == PH_B && age_s < w)
		snprintf(msg, cap, "phase A has run %llds of its %ds window", (long long)age_s, w);
	else if (want == PH_C && (age_s < w || st->reads == 0 || st->fallbacks * 100 >= st->reads))
		snprintf(msg, cap,
			 "phase B: %llds of %ds, %lld fallbacks in %lld reads (needs < 1%%)",
			 (long long)age_s, w, st->fallbacks, st->reads);
	else if (want == PH_DONE && (age_s < w || st->old_reads > 0))
		snprintf(msg, cap, "phase C: %llds of %ds, %lld old-key reads (needs 0)",
			 (long long)age_s, w, st->old_reads);
	else
		return NULL;
	return msg;
}

aw_err aw_keymig_step(aw_store *s, aw_kv *kv, const aw_ctx *ctx, const char *pattern,
		      const char *to, int force, aw_kv_status *st, aw_error *err)
{
	memset(st, 0, sizeof *st);
	const aw_key_pattern *p = aw_keys_find(pattern);
	int want = aw_kv_phase_of(to);
	if (!p)
		return aw_fail(err, AW_E_KEYS_PATTERN, "unknown key pattern");
	if (want < 0)
		return aw_fail(err, AW_E_KEYS_PHASE, "--to must be A, B, C or done");
	const char *project = aw_kv_owner(p, ctx);
	aw_ctx c;
	aw_ctx_with_project(ctx, project, &c);
	aw_txn *t = NULL;
	aw_err e = aw_store_begin(s, &c, AW_TXN_WRITE, &t, err);
	if (e)
		return e;
	char name[8];
	aw_project proj;
	if ((e = aw_store_project_get(t, &proj, err))) {
		if (e == AW_E_TENANT_NOT_FOUND)
			aw_fail(err, e, "project %s does not exist", project);
		goto out;
	}
	if ((e = aw_store_keymig_get(t, p->name, name, sizeof name, st->since, err)))
		goto out;
	int have = aw_kv_phase_of(name);
	AW_COPY_ARRAY(st->phase, name);
	aw_kv_counters(kv, project, p->name, have, st);
	if (want != have + 1) {
		e = aw_fail(err, AW_E_KEYS_PHASE, "phase is %s; the next step is %s", name,
			    have < PH_DONE ? aw_kv_phase_name(have + 1) : "none (done)");
		goto out;
	}
	int64_t since_ms = 0, age_s = 0;
	if (st->since[0] && aw_clock_parse(st->since, &since_ms) == 0)
		age_s = (aw_clock_wall_ms() - since_ms) / 1000;
	char msg[200];
	const char *why = gate(kv, want, age_s, st, msg, sizeof msg);
	if (why && !force) {
		e = aw_fail(err, AW_E_KEYS_GATE, "%s", why);
		goto out;
	}
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	json_t *pl =
		json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I}", "pattern", p->name, "from",
			  name, "to", aw_kv_phase_name(want), "forced", force && why, "reads",
			  (json_int_t)st->reads, "new_hits", (json_int_t)st->new_hits, "fallbacks",
			  (json_int_t)st->fallbacks, "old_reads", (json_int_t)st->old_reads);
	if (pl && why)
		json_object_set_new(pl, "gate_not_met", json_string(why));
	if (!(e = aw_store_keymig_set(t, p->name, aw_kv_phase_name(want), now, ctx->principal,
				      err)))
		e = aw_audit_record(t, &c, "keys.migrate", p->name, pl, err);
	json_decref(pl);
out:
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	if ((e = aw_store_commit(t, err)))
		return e;
	/* counters are per phase, so the new phase starts from zero; forget
	 * cached phases so this process applies the new one at once */
	aw_kv_phases_forget(kv);
	(void)!AW_STR_COPY(st->phase, aw_kv_phase_name(want)); /* "none".."done" */
	return AW_OK;
}
