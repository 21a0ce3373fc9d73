/*
 * bots.c - the hub's bots, as the active channel_event revisions name them:
 * a bot built from one channel of a revision (private copies, its rules'
 * patterns compiled once), every project's bots listed, a bot found by
 * name, its token resolved from the tenant's secret reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/buf.h"
#include "awooop/crypto.h"
#include "awooop/pattern.h"
#include "awooop/policy.h"
#include "awooop/secret.h"
#include "awooop/str.h"
#include "awooop/tenancy.h"
#include "channel_internal.h"

void hub_bot_free(hub_bot *b)
{
	for (size_t i = 0; b->match && i < json_array_size(json_object_get(b->channel, "rules"));
	     i++)
		aw_pattern_free(b->match[i]);
	free(b->match);
	json_decref(b->channel);
	json_decref(b->templates);
	json_decref(b->silences);
	free(b);
}

/* A bot of channel ch of a project's active revision pol (copies). */
hub_bot *hub_bot_from(const char *project, const aw_policy *pol, const json_t *ch)
{
	const char *name = json_string_value(json_object_get(json_object_get(ch, "bot"), "name"));
	json_t *interval = json_object_get(pol->body, "progress_interval_s");
	hub_bot *b = name ? aw_calloc(1, sizeof *b) : NULL;
	if (b && (AW_STR_COPY(b->project, project) < 0 || AW_STR_COPY(b->name, name) < 0)) {
		free(b); /* the schema bounds bot names: one longer is no bot */
		return NULL;
	}
	if (!b)
		return NULL;
	b->channel = json_deep_copy(ch);
	b->templates = json_deep_copy(json_object_get(pol->body, "templates"));
	b->silences = json_deep_copy(json_object_get(pol->body, "silences"));
	b->interval_s = json_is_integer(interval) ? (int)json_integer_value(interval) : 30;
	b->webhook = !strcmp(json_string_value(json_object_get(ch, "mode")) ?: "", "webhook");
	/* the rules' patterns, compiled once per revision, not per message */
	json_t *rules = json_object_get(b->channel, "rules");
	b->match = aw_calloc(json_array_size(rules) + 1, sizeof *b->match);
	size_t ri;
	json_t *r;
	json_array_foreach (rules, ri, r) {
		const char *m = json_string_value(json_object_get(r, "match"));
		aw_error perr = {0};
		if (m && b->match)
			aw_pattern_compile(m, &b->match[ri], &perr);
	}
	char *text = json_dumps(ch, JSON_COMPACT | JSON_SORT_KEYS);
	aw_buf hb = AW_BUF_INIT(1u << 20);
	aw_buf_addf(&hb, "%s|%s|%d", pol->revision_id, text ? text : "", b->interval_s);
	aw_sha256_hex(aw_buf_str(&hb), hb.len, b->hash);
	aw_buf_free(&hb);
	free(text);
	return b;
}

/* The bots of the active channel_event revisions of every project. */
hub_bot *hub_load_bots(aw_hub *h)
{
	hub_bot *list = NULL;
	aw_ctx sys;
	aw_ctx_system(&sys, NULL);
	char after[AW_PROJECT_MAX + 1] = "";
	for (;;) {
		aw_project *ps = NULL;
		int np = 0;
		aw_error err = {0};
		if (aw_project_list(h->o.store, &sys, after[0] ? after : NULL, 100, &ps, &np,
				    &err) ||
		    np == 0) {
			free(ps);
			break;
		}
		for (int i = 0; i < np; i++) {
			aw_ctx pc;
			aw_ctx_system(&pc, ps[i].project_id);
			aw_policy pol;
			if (aw_policy_effective(h->o.policy, &pc, "channel_event", h->contract,
						&pol, &err))
				continue;
			size_t k;
			json_t *ch;
			json_array_foreach (json_object_get(pol.body, "channels"), k, ch) {
				json_t *bt = json_object_get(ch, "bot");
				const char *name = json_string_value(json_object_get(bt, "name"));
				if (!name)
					continue;
				hub_bot *b = hub_bot_from(ps[i].project_id, &pol, ch);
				if (!b)
					break;
				b->hub = h;
				b->next = list;
				list = b;
			}
			aw_policy_release(&pol);
		}
		AW_COPY_ARRAY(after, ps[np - 1].project_id);
		free(ps);
		if (np < 100)
			break;
	}
	return list;
}

hub_bot *hub_bot_named(aw_hub *h, const char *project, const char *name)
{
	for (hub_bot *b = h->bots; b; b = b->next)
		if (!strcmp(b->project, project) && !strcmp(b->name, name))
			return b;
	return NULL;
}

aw_err hub_resolve_token(const aw_hub_opts *o, const hub_bot *b, aw_buf *tok, aw_error *err)
{
	const char *ref =
		json_string_value(json_object_get(json_object_get(b->channel, "bot"), "token"));
	if (!ref)
		return aw_fail(err, AW_E_CHANNEL_UNKNOWN, "the bot has no token reference");
	return aw_secret_tenant_resolve(b->project, o->secrets_dir, ref, tok, err);
}
