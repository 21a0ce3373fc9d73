/*
 * catalog.c - what the gateway knows of each project's tools: the catalog of
 * its active mcp_tool revision (tools, compiled argument schemas, rate
 * buckets, upstreams), the upstreams' definitions and their pins, the
 * federated tools/list, and pinning at publish.
 *
 * A project's catalog is built when a call first sees a revision and shared
 * by the calls on it (counted references). A new revision builds a new
 * catalog that keeps the upstreams whose configuration did not change (a
 * stdio child survives an unrelated edit); an upstream no revision names any
 * more is freed with the last catalog that held it, which stops its child. A
 * revoke heard from the policy cache drops the catalog at once.
 *
 * Upstream definitions (tools/list of each upstream) are cached for
 * defs_ttl_ms (or until a stdio upstream says its list changed) and checked
 * against the revision's pins on every list and call.
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/egress.h"
#include "awooop/jcs.h"
#include "awooop/log.h"
#include "awooop/schema.h"
#include "awooop/str.h"

#define DEFAULT_RESULT_BYTES 16384
#define DEFAULT_ARGS_BYTES 65536

static void upinst_put(upinst *u)
{
	if (u && atomic_fetch_sub(&u->refs, 1) == 1) {
		mcp_up_free(u->up);
		json_decref(u->defs);
		pthread_mutex_destroy(&u->mu);
		free(u);
	}
}

void mcp_catalog_put(catalog *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	for (int i = 0; i < c->ntools; i++)
		aw_schema_free(c->tools[i].schema);
	free(c->tools);
	for (int i = 0; i < c->nups; i++)
		upinst_put(c->ups[i]);
	json_decref(c->body);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* An upstream of the catalog being built: the old catalog's when its
 * configuration is the same. */
static upinst *upinst_for(aw_mcp *g, catalog *old, const char *project, const char *provider,
			  const json_t *conf, int allow_private, aw_error *err)
{
	json_t *k = json_pack("{s:O,s:b}", "c", conf, "p", allow_private);
	char key[72] = "";
	aw_jcs_sha256(k, key);
	json_decref(k);
	for (int i = 0; old && i < old->nups; i++)
		if (!strcmp(old->ups[i]->provider, provider) && !strcmp(old->ups[i]->key, key)) {
			atomic_fetch_add(&old->ups[i]->refs, 1);
			return old->ups[i];
		}
	upinst *u = aw_calloc(1, sizeof *u);
	if (!u)
		return NULL;
	atomic_init(&u->refs, 1);
	size_t ri;
	json_t *rv;
	json_array_foreach (json_object_get(conf, "relay"), ri, rv) {
		const char *r = json_string_value(rv);
		u->relay |= !strcmp(r, "resources")    ? RELAY_RESOURCES
			    : !strcmp(r, "prompts")    ? RELAY_PROMPTS
			    : !strcmp(r, "completion") ? RELAY_COMPLETION
						       : RELAY_LOGGING;
	}
	if (AW_STR_COPY(u->provider, provider) < 0) { /* the schema: at most 31 */
		free(u);
		aw_fail(err, AW_E_CONTRACT_SCHEMA, "a provider name is at most %zu bytes",
			sizeof u->provider - 1);
		return NULL;
	}
	memcpy(u->key, key, sizeof key);
	mcp_rate_init(&u->rate, json_object_get(conf, "relay_rate_limit"));
	snprintf(u->rate_name, sizeof u->rate_name, "@relay.%s", provider);
	/* the contract's default, never past the platform's bound */
	u->timeout_ms = mcp_int_of(conf, "timeout_ms", g->o.timeout_ms);
	if (u->timeout_ms > g->o.timeout_max_ms)
		u->timeout_ms = g->o.timeout_max_ms;
	pthread_mutex_init(&u->mu, NULL);
	mcp_up_opts uo = {.project = project,
			  .provider = provider,
			  .config = conf,
			  .secrets_dir = g->secrets_dir,
			  .allow_private = allow_private,
			  .sbx = g->sbx,
			  .pids_max = g->o.stdio_pids,
			  .timeout_ms = g->o.timeout_ms,
			  .cgroup_dir = g->o.cgroup_dir,
			  .memory_mb = g->o.memory_mb ? g->o.memory_mb : 512,
			  .event = mcp_upstream_event,
			  .event_ud = g};
	if (mcp_up_new(&uo, &u->up, err)) {
		pthread_mutex_destroy(&u->mu);
		free(u);
		return NULL;
	}
	return u;
}

static catalog *catalog_build(aw_mcp *g, catalog *old, const char *project, const aw_policy *pol,
			      aw_error *err)
{
	catalog *c = aw_calloc(1, sizeof *c);
	if (c && AW_STR_COPY(c->project, project) < 0) { /* a ctx's project fits */
		free(c);
		aw_fail(err, AW_E_INTERNAL, "project id too long");
		return NULL;
	}
	if (!c)
		return NULL;
	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->mu, NULL);
	memcpy(c->revision_id, pol->revision_id, sizeof c->revision_id);
	memcpy(c->body_hash, pol->body_hash, sizeof c->body_hash);
	c->body = json_deep_copy(pol->body);
	json_t *b = c->body, *tools = json_object_get(b, "tools");
	c->read_only = json_is_string(json_object_get(b, "mode")) &&
		       !strcmp(json_string_value(json_object_get(b, "mode")), "read_only");
	int suffix = !json_is_false(json_object_get(b, "suffix"));
	int priv = aw_egress_private_granted(project); /* the operator's, never the contract's */
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(b, "upstreams"), k, v) {
		if (c->nups == 32 ||
		    !(c->ups[c->nups] = upinst_for(g, old, project, k, v, priv, err)))
			goto fail;
		c->nups++;
	}
	c->tools = aw_calloc(json_array_size(tools) + 1, sizeof *c->tools);
	if (!c->tools)
		goto fail;
	for (size_t i = 0; i < json_array_size(tools); i++) {
		json_t *t = json_array_get(tools, i);
		mtool *tl = &c->tools[c->ntools++];
		tl->name = json_string_value(json_object_get(t, "name"));
		const char *prov = json_string_value(json_object_get(t, "provider"));
		aw_mcp_tool_name(tl->name, prov, suffix, tl->full, sizeof tl->full);
		for (int j = 0; j < c->nups; j++)
			if (!strcmp(c->ups[j]->provider, prov))
				tl->u = c->ups[j];
		tl->write = !strcmp(json_string_value(json_object_get(t, "mode")), "write");
		tl->enabled = !json_is_false(json_object_get(t, "enabled"));
		tl->approval = json_is_true(json_object_get(t, "requires_approval"));
		tl->timeout_ms = mcp_int_of(t, "timeout_ms", 0);
		tl->max_args = mcp_int_of(t, "max_args_bytes", DEFAULT_ARGS_BYTES);
		tl->max_result = mcp_int_of(t, "max_result_bytes", DEFAULT_RESULT_BYTES);
		tl->pin = json_string_value(json_object_get(t, "pin"));
		json_t *as = json_object_get(t, "args_schema");
		if (as && aw_schema_compile(as, &tl->schema, err))
			goto fail;
		mcp_rate_init(&tl->rate, json_object_get(t, "rate_limit"));
	}
	return c;
fail:
	mcp_catalog_put(c);
	return NULL;
}

/* The catalog of ctx->project's active revision (a reference), or NULL with
 * *e: AW_E_CONTRACT_NOT_FOUND when there is none. */
catalog *mcp_catalog_get(aw_mcp *g, const aw_ctx *ctx, aw_err *e, aw_error *err)
{
	aw_policy pol = {0};
	*e = aw_policy_effective(g->o.policy, ctx, "mcp_tool", g->contract_id, &pol, err);
	catalog *c = NULL, **pp;
	pthread_mutex_lock(&g->mu);
	for (pp = &g->catalogs; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->project, ctx->project))
			break;
	catalog *old = *pp, *put = NULL;
	if (*e) {
		if (*e == AW_E_CONTRACT_NOT_FOUND && old) { /* revoked: drop it */
			*pp = old->next;
			put = old;
		}
	} else if (old && !strcmp(old->revision_id, pol.revision_id)) {
		c = old;
	} else if ((c = catalog_build(g, old, ctx->project, &pol, err))) {
		if (old) {
			c->next = old->next;
			*pp = c;
			put = old;
		} else {
			c->next = g->catalogs;
			g->catalogs = c;
		}
	} else {
		*e = err->err ? err->err : AW_E_NOMEM;
	}
	if (c)
		atomic_fetch_add(&c->refs, 1);
	pthread_mutex_unlock(&g->mu);
	/* outside the lock: the last reference stops upstreams, which waits for
	 * their threads, and those take g->mu to deliver events */
	mcp_catalog_put(put);
	aw_policy_release(&pol);
	return c;
}

/* Revision "" of a project's mcp_tool contract: its catalog goes at once (its
 * stdio children stop when the last call on it ends). */
void mcp_on_change(void *ud, const char *project, const char *family, const char *contract_id,
		   const char *revision_id, const char *source)
{
	aw_mcp *g = ud;
	(void)source;
	if (strcmp(family, "mcp_tool") || strcmp(contract_id, g->contract_id))
		return;
	/* another revision (or none): the project's tools changed */
	mcp_to_sessions(g, project, "notifications/tools/list_changed", NULL);
	if (revision_id[0])
		return;
	catalog *drop = NULL;
	pthread_mutex_lock(&g->mu);
	for (catalog **pp = &g->catalogs; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->project, project)) {
			drop = *pp;
			*pp = drop->next;
			break;
		}
	pthread_mutex_unlock(&g->mu);
	if (!drop)
		return;
	/* the cache is locked here: stopping children waits, so the recorder
	 * thread drops it */
	pthread_mutex_lock(&g->dmu);
	drop->next = g->dropped;
	g->dropped = drop;
	pthread_mutex_unlock(&g->dmu);
	aw_recorder_wake(g->rec);
}

static aw_err fetch_defs(aw_mcp *g, upinst *u, json_t **out, aw_error *err)
{
	json_t *defs = json_object(), *cursor = NULL;
	aw_err e = AW_OK;
	for (int page = 0; page < 20 && !e; page++) {
		json_t *params = cursor ? json_pack("{s:O}", "cursor", cursor) : NULL, *res = NULL;
		json_decref(cursor);
		cursor = NULL;
		e = mcp_up_request(u->up, "tools/list", params, u->timeout_ms, NULL, &res, NULL,
				   err);
		json_decref(params);
		size_t i;
		json_t *t;
		json_array_foreach (json_object_get(res, "tools"), i, t) {
			const char *name = json_string_value(json_object_get(t, "name"));
			char pin[AW_MCP_PIN_MAX], pin1[AW_MCP_PIN_MAX];
			if (name && mcp_def_pin(t, pin) == 0 && /* hashed once per fetch */
			    mcp_def_pin_v1(t, pin1) == 0)
				json_object_set_new(defs, name,
						    json_pack("{s:O,s:s,s:s}", "def", t, "pin", pin,
							      "pin1", pin1));
		}
		json_t *next = json_object_get(res, "nextCursor");
		if (json_is_string(next))
			cursor = json_incref(next);
		json_decref(res);
		if (!cursor)
			break;
	}
	json_decref(cursor);
	if (e) {
		json_decref(defs);
		return e;
	}
	*out = defs;
	return AW_OK;
}

/* The member of a definitions entry holding its pin in the format of pin (a
 * revision's: "sha256:" is the older format, see mcp_internal.h). */
static const char *pin_member(const char *pin)
{
	return pin && !strncmp(pin, AW_MCP_PIN_V1, strlen(AW_MCP_PIN_V1)) ? "pin1" : "pin";
}

/* The upstream's definitions ({name: {"def", "pin", "pin1"}}), fetched again
 * when older than the TTL, when the upstream said its list changed, or when
 * fresh is set. What a caller needs is taken under the lock - the pin of name
 * in the format of want ("" when the upstream lacks it) and/or a deep copy -
 * so no thread shares the cached document (jansson's counts are not fences). */
aw_err mcp_defs_get(aw_mcp *g, upinst *u, int fresh, const char *name, const char *want,
		    char pin[AW_MCP_PIN_MAX], json_t **copy, aw_error *err)
{
	pthread_mutex_lock(&u->mu);
	int64_t now = aw_clock_mono_ns();
	int changed = mcp_up_list_changed(u->up);
	aw_err e = AW_OK;
	if (fresh || changed || !u->defs ||
	    now - u->fetched_ns > (int64_t)g->o.defs_ttl_ms * 1000000LL) {
		json_t *d = NULL;
		if (!(e = fetch_defs(g, u, &d, err))) {
			json_decref(u->defs);
			u->defs = d;
			u->fetched_ns = now;
		}
	}
	if (!e && name &&
	    aw_str_copy(pin, AW_MCP_PIN_MAX,
			json_string_value(json_object_get(json_object_get(u->defs, name),
							  pin_member(want)))) < 0)
		e = aw_fail(err, AW_E_MCP_PIN, "the tool's definition pin is too long");
	if (!e && copy)
		*copy = json_deep_copy(u->defs);
	pthread_mutex_unlock(&u->mu);
	return e;
}

/* The federated tools/list of a catalog. */
json_t *mcp_list_tools(aw_mcp *g, catalog *c)
{
	json_t *out = json_array();
	json_t *defs[32] = {0};
	int fetched[32] = {0};
	for (int i = 0; c && i < c->ntools; i++) {
		mtool *t = &c->tools[i];
		if (!t->enabled || (t->write && c->read_only) || !t->pin)
			continue;
		int ui = 0;
		while (c->ups[ui] != t->u)
			ui++;
		if (!fetched[ui]) {
			aw_error err = {0};
			fetched[ui] = 1;
			if (mcp_defs_get(g, t->u, 1, NULL, NULL, NULL, &defs[ui], &err)) {
				aw_ctx lc;
				aw_ctx_system(&lc, c->project);
				aw_log(AW_LOG_WARN, &lc, "mcp upstream unavailable for tools/list",
				       "provider", t->u->provider, "detail", err.msg, NULL);
			}
		}
		json_t *entry = json_object_get(defs[ui], t->name);
		json_t *def = json_object_get(entry, "def");
		const char *pm = pin_member(t->pin);
		const char *pin = json_string_value(json_object_get(entry, pm));
		if (!def || !pin || strcmp(pin, t->pin))
			continue; /* missing or changed since approval: hidden */
		/* exactly what the pin covers: the whole definition, or an older
		 * pin's four members (a title or annotations it never saw stay
		 * behind) */
		json_t *d = strcmp(pm, "pin1") ? json_deep_copy(def) : mcp_def_v1(def);
		if (!d)
			continue;
		json_object_set_new(d, "name", json_string(t->full));
		json_array_append_new(out, d);
	}
	for (int i = 0; i < 32; i++)
		json_decref(defs[i]);
	/* deterministic order (2026-07-28 asks it: prompt caches) */
	size_t n = json_array_size(out);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			json_t *a = json_array_get(out, j - 1), *b = json_array_get(out, j);
			if (strcmp(json_string_value(json_object_get(a, "name")),
				   json_string_value(json_object_get(b, "name"))) <= 0)
				break;
			json_incref(a);
			json_array_set(out, j - 1, b);
			json_array_set_new(out, j, a);
		}
	return out;
}

aw_err aw_mcp_pin(aw_mcp *g, const aw_ctx *ctx, const json_t *body, json_t **pinned, aw_error *err)
{
	json_t *b = json_deep_copy(body), *ups = json_object_get(b, "upstreams");
	json_t *tools = json_object_get(b, "tools");
	int priv = aw_egress_private_granted(ctx->project); /* the operator's grant */
	aw_err e = AW_OK;
	const char *k;
	json_t *v;
	/* nothing starts unless the operator allows every stdio upstream */
	json_object_foreach (ups, k, v) {
		int at;
		const char *tr = json_string_value(json_object_get(v, "transport"));
		if (tr && !strcmp(tr, "stdio") && (e = sbx_check(g->sbx, k, v, &at, err))) {
			json_decref(b);
			return e;
		}
	}
	json_object_foreach (ups, k, v) {
		int used = 0;
		for (size_t i = 0; i < json_array_size(tools); i++)
			used |= !strcmp(json_string_value(json_object_get(json_array_get(tools, i),
									  "provider")),
					k);
		if (!used)
			continue;
		upinst *u = upinst_for(g, NULL, ctx->project, k, v, priv, err);
		json_t *defs = NULL;
		if (!u) {
			e = err->err ? err->err : AW_E_NOMEM;
			break;
		}
		e = fetch_defs(g, u, &defs, err);
		upinst_put(u);
		if (e == AW_E_MCP_STDIO || e == AW_E_MCP_SANDBOX)
			break;
		if (e) {
			char msg[sizeof err->msg];
			memcpy(msg, err->msg, sizeof msg);
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s: %.200s", k, msg);
			break;
		}
		for (size_t i = 0; i < json_array_size(tools) && !e; i++) {
			json_t *t = json_array_get(tools, i);
			if (strcmp(json_string_value(json_object_get(t, "provider")), k))
				continue;
			const char *name = json_string_value(json_object_get(t, "name"));
			const char *pin = json_string_value(
				json_object_get(json_object_get(defs, name), "pin"));
			char ptr[64];
			snprintf(ptr, sizeof ptr, "/tools/%zu/pin", i);
			const char *given = json_string_value(json_object_get(t, "pin"));
			const char *given_as = json_string_value(
				json_object_get(json_object_get(defs, name), pin_member(given)));
			if (!pin)
				e = aw_fail_at(err, AW_E_MCP_PROTOCOL, ptr,
					       "upstream %s offers no tool %s", k, name);
			else if (given && (!given_as || strcmp(given, given_as)))
				e = aw_fail_at(err, AW_E_MCP_PROTOCOL, ptr,
					       "%s: upstream %s's definition of %s is %s now", ptr,
					       k, name, pin);
			else /* always the current format (an older given pin that
				still holds is replaced by the whole definition's) */
				json_object_set_new(t, "pin", json_string(pin));
		}
		json_decref(defs);
		if (e)
			break;
	}
	if (e) {
		json_decref(b);
		return e;
	}
	*pinned = b;
	return AW_OK;
}

int mcp_def_pin(const json_t *def, char out[AW_MCP_PIN_MAX])
{
	char hex[65];
	int rc = aw_jcs_sha256(def, hex);
	if (rc == 0)
		snprintf(out, AW_MCP_PIN_MAX, "%s%s", AW_MCP_PIN_V2, hex);
	return rc;
}

int mcp_def_pin_v1(const json_t *def, char out[AW_MCP_PIN_MAX])
{
	json_t *d = mcp_def_v1(def);
	if (!d)
		return -1;
	char hex[65];
	int rc = aw_jcs_sha256(d, hex);
	json_decref(d);
	if (rc == 0)
		snprintf(out, AW_MCP_PIN_MAX, "%s%s", AW_MCP_PIN_V1, hex);
	return rc;
}

json_t *mcp_def_v1(const json_t *def)
{
	json_t *d = json_object();
	const char *keep[] = {"name", "description", "inputSchema", "outputSchema"};
	for (int i = 0; d && i < 4; i++) {
		json_t *v = json_object_get(def, keep[i]);
		if (v && json_object_set(d, keep[i], v)) {
			json_decref(d);
			return NULL;
		}
	}
	return d;
}
