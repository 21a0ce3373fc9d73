/*
 * contract.c - the contract registry service (see contract.h).
 *
 * Signatures: HMAC-SHA256 (keyring's current key) over the RFC 8785 form of
 * [project_id, family, contract_id, revision_id, body_hash]; body_hash is the
 * SHA-256 of the body's RFC 8785 form. Both are checked again on activation and
 * whenever the active revision is read for use.
 *
 * Approvals: the project's active approval contract "default" sets approvers,
 * threshold, window and mode; without one the platform default applies (any
 * operator-or-higher principal but the publisher, threshold 1, 24 h, enforce).
 *
 * Rollback: a new revision carrying an earlier active revision's body, created
 * and published in one call, activated like any other revision (same checks,
 * same outbox event) with the policy's rollback_threshold as its quorum. It
 * names its target (rollback_of) and the revision it replaces (rollback_from):
 * it activates only while that one is still active and its body hash still
 * equals the target's, so the faster quorum only ever restores a body that
 * was approved and active before, over the state its approvers saw.
 */
#include "awooop/alloc.h"
#include "awooop/contract.h"
#include "awooop/pattern.h"
#include "awooop/redact.h"
#include "awooop/secret.h"
#include "awooop/json.h"
#include "contract_hooks.h"
#include "awooop/store/tenancy.h"
#include "awooop/str.h"
#include "awooop/tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "awooop/audit.h"
#include "awooop/ident.h"
#include "awooop/jcs.h"
#include "awooop/log.h"
#include "awooop/schema.h"

extern const struct {
	const char *name;
	const char *text;
} aw_contract_schema_texts[];

static const char *const families[] = {"policy_routing", "channel_event", "mcp_tool",
				       "budget",	 "approval",	  "platform_resource"};
#define NFAM 6

struct aw_contracts {
	aw_schema *schema[NFAM];
	const aw_keyring *_Atomic kr; /* swapped by a reload */
};

int (*aw_contract_fault_hook)(const char *point);

static void (*_Atomic on_change)(void);

void aw_contract_on_change(void (*fn)(void))
{
	atomic_store(&on_change, fn);
}

static void changed(void)
{
	void (*fn)(void) = atomic_load(&on_change);
	if (fn)
		fn();
}

/* ---------------------------------------------------------- transitions */

static const struct {
	const char *from, *to, *via;
} transitions[] = {
	{"draft", "published", "publish"},    {"published", "active", "activate"},
	{"active", "superseded", "activate"}, {"published", "revoked", "revoke"},
	{"active", "revoked", "revoke"},
};

static int transition_ok(const char *from, const char *to)
{
	for (size_t i = 0; i < sizeof transitions / sizeof transitions[0]; i++)
		if (!strcmp(transitions[i].from, from) && !strcmp(transitions[i].to, to))
			return 1;
	return 0;
}

static aw_err illegal(aw_error *err, const char *from, const char *action)
{
	return aw_fail(err, AW_E_CONTRACT_STATE, "cannot %s a revision that is %s", action, from);
}

/* ---------------------------------------------------------- registry */

static int family_index(const char *f)
{
	for (int i = 0; i < NFAM; i++)
		if (f && strcmp(f, families[i]) == 0)
			return i;
	return -1;
}

int aw_contract_family_ok(const char *family)
{
	return family_index(family) >= 0;
}

const aw_keyring *aw_contracts_set_keyring(aw_contracts *c, const aw_keyring *kr)
{
	return atomic_exchange(&c->kr, kr);
}

aw_err aw_contracts_new(const aw_keyring *kr, aw_contracts **out, aw_error *err)
{
	aw_contracts *c = aw_calloc(1, sizeof *c);
	if (!c)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	atomic_init(&c->kr, kr);
	for (int i = 0; i < NFAM; i++) {
		const char *text = NULL;
		for (int k = 0; aw_contract_schema_texts[k].name; k++)
			if (!strcmp(aw_contract_schema_texts[k].name, families[i]))
				text = aw_contract_schema_texts[k].text;
		json_error_t je;
		json_t *doc = text ? json_loads(text, 0, &je) : NULL;
		aw_err e = doc ? aw_schema_compile(doc, &c->schema[i], err)
			       : aw_fail(err, AW_E_INTERNAL, "schema for %s missing", families[i]);
		json_decref(doc);
		if (e) {
			aw_contracts_free(c);
			return e;
		}
	}
	*out = c;
	return AW_OK;
}

void aw_contracts_free(aw_contracts *c)
{
	if (!c)
		return;
	for (int i = 0; i < NFAM; i++)
		aw_schema_free(c->schema[i]);
	free(c);
}

void aw_revision_clear(aw_revision *r)
{
	if (r) {
		free(r->body);
		r->body = NULL;
	}
}

static int contract_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > 63 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-' || s[i] == '.'))
			return 0;
	return 1;
}

aw_err aw_contract_target_ok(const aw_ctx *ctx, const char *family, const char *contract_id,
			     aw_error *err)
{
	if (!aw_contract_family_ok(family))
		return aw_fail(err, AW_E_CONTRACT_FAMILY,
			       "family must be policy_routing, channel_event, mcp_tool, budget,"
			       " approval or platform_resource");
	if (!contract_id_ok(contract_id))
		return aw_fail(err, AW_E_CONTRACT_ID,
			       "contract id must match [a-z0-9][a-z0-9_.-]{0,62}");
	int platform = strcmp(ctx->project, AW_PLATFORM_PROJECT) == 0;
	if (!strcmp(family, "platform_resource") &&
	    (!platform || (strcmp(contract_id, AW_TOPOLOGY_CONTRACT) != 0 &&
			   strcmp(contract_id, AW_UPSTREAMS_CONTRACT) != 0)))
		return aw_fail(err, AW_E_CONTRACT_ID,
			       "platform_resource exists only in __platform__, as ollama_topology "
			       "or llm_upstreams");
	return AW_OK;
}

/* channel_event: bot names unique, token references tenant-scoped, rule
 * templates defined when the revision defines templates. */
static aw_err channel_check(const json_t *body, aw_error *err)
{
	size_t i, k;
	json_t *ch, *other, *r;
	json_t *tpls = json_object_get(body, "templates");
	json_array_foreach (json_object_get(body, "channels"), i, ch) {
		json_t *bot = json_object_get(ch, "bot");
		const char *name = json_string_value(json_object_get(bot, "name"));
		char where[96];
		snprintf(where, sizeof where, "/channels/%zu/bot/token", i);
		if (bot &&
		    aw_secret_tenant_check(json_string_value(json_object_get(bot, "token")), err))
			return aw_fail_at(err, AW_E_SECRET_REF, where,
					  "a bot token is a secret reference: env:NAME or "
					  "file:RELATIVE/PATH");
		const char *mode = json_string_value(json_object_get(ch, "mode"));
		const char *ws = json_string_value(json_object_get(ch, "webhook_secret"));
		snprintf(where, sizeof where, "/channels/%zu/webhook_secret", i);
		if (mode && !strcmp(mode, "webhook") && (!bot || !ws))
			return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, where,
					  "a webhook channel needs a bot and a webhook_secret");
		if (ws && aw_secret_tenant_check(ws, err))
			return aw_fail_at(err, AW_E_SECRET_REF, where,
					  "webhook_secret is a secret reference");
		json_array_foreach (json_object_get(body, "channels"), k, other)
			if (k < i && name &&
			    !strcmp(json_string_value(
					    json_object_get(json_object_get(other, "bot"), "name"))
					    ?: "",
				    name)) {
				snprintf(where, sizeof where, "/channels/%zu/bot/name", i);
				return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, where,
						  "two channels name the bot %s", name);
			}
		json_array_foreach (json_object_get(ch, "rules"), k, r) {
			const char *m = json_string_value(json_object_get(r, "match"));
			aw_error pe = {0};
			if (m && aw_pattern_check(m, &pe)) {
				snprintf(where, sizeof where, "/channels/%zu/rules/%zu/match", i,
					 k);
				return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, where, "%s", pe.msg);
			}
			const char *t = json_string_value(json_object_get(r, "run_template"));
			if (tpls && t && !json_object_get(tpls, t)) {
				snprintf(where, sizeof where,
					 "/channels/%zu/rules/%zu/run_template", i, k);
				return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, where,
						  "no template %s in /templates", t);
			}
		}
	}
	return AW_OK;
}

/* Named LLM upstreams (platform_resource llm_upstreams, policy_routing's
 * own): names unique and never "ollama" (the topology's), api_version
 * azure_openai's and required there, the credential a secret reference -
 * the platform's resolved in the process's environment, a tenant's
 * (tenant) in its own namespace only (secret.h). */
static aw_err upstreams_check(const json_t *ups, int tenant, aw_error *err)
{
	size_t i, k;
	json_t *u, *o;
	char where[64];
	json_array_foreach (ups, i, u) {
		const char *name = json_string_value(json_object_get(u, "name"));
		const char *api = json_string_value(json_object_get(u, "api"));
		snprintf(where, sizeof where, "/upstreams/%zu/name", i);
		if (name && !strcmp(name, "ollama"))
			return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, where,
					  "the name ollama is the platform's Ollama topology");
		json_array_foreach (ups, k, o)
			if (k < i && name &&
			    !strcmp(json_string_value(json_object_get(o, "name")) ?: "", name))
				return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, where,
						  "two upstreams are named %s", name);
		int azure = api && !strcmp(api, "azure_openai");
		snprintf(where, sizeof where, "/upstreams/%zu/api_version", i);
		if (azure != (json_object_get(u, "api_version") != NULL))
			return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, where,
					  "api_version (e.g. 2024-10-21) is azure_openai's, and it "
					  "needs one");
		const char *key = json_string_value(json_object_get(u, "api_key"));
		snprintf(where, sizeof where, "/upstreams/%zu/api_key", i);
		if (key &&
		    (tenant ? aw_secret_tenant_check(key, err) : aw_secret_ref_check(key, err)))
			return aw_fail_at(err, AW_E_SECRET_REF, where,
					  tenant ? "api_key is a secret reference: env:NAME or "
						   "file:RELATIVE/PATH (the project's own)"
						 : "api_key is a secret reference: env:NAME or "
						   "file:/path");
	}
	return AW_OK;
}

/* platform_resource: the body's kind is its contract id; each kind its own
 * members. */
static aw_err platform_check(const json_t *body, const char *contract_id, aw_error *err)
{
	const char *kind = json_string_value(json_object_get(body, "kind"));
	int ups = kind && !strcmp(kind, AW_UPSTREAMS_CONTRACT);
	if (contract_id &&
	    (!strcmp(contract_id, AW_TOPOLOGY_CONTRACT) ||
	     !strcmp(contract_id, AW_UPSTREAMS_CONTRACT)) &&
	    strcmp(kind ? kind : "", contract_id))
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, "/kind",
				  "the kind of contract %s is %s", contract_id, contract_id);
	static const char *const topo_only[] = {"primary", "secondary", "fallback",
						"emergency_cloud", NULL};
	for (int i = 0; ups && topo_only[i]; i++)
		if (json_object_get(body, topo_only[i])) {
			char where[32];
			snprintf(where, sizeof where, "/%s", topo_only[i]);
			return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, where,
					  "%s is ollama_topology's, not llm_upstreams'",
					  topo_only[i]);
		}
	if (ups && !json_object_get(body, "upstreams"))
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, "/upstreams",
				  "llm_upstreams needs upstreams (an empty list removes them all)");
	if (!ups && json_object_get(body, "upstreams"))
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, "/upstreams",
				  "upstreams are llm_upstreams', not ollama_topology's");
	if (!ups && !json_object_get(body, "primary"))
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, "/primary",
				  "an ollama_topology needs a primary host");
	return upstreams_check(json_object_get(body, "upstreams"), 0, err);
}

aw_err aw_contract_validate(const aw_contracts *c, const char *project, const char *family,
			    const char *contract_id, const json_t *body, aw_error *err)
{
	(void)project;
	int fi = family_index(family);
	if (fi < 0)
		return aw_fail(err, AW_E_CONTRACT_FAMILY, "unknown family");
	aw_err ne = aw_json_check_numbers(body, err); /* what cannot read back equal */
	if (ne)
		return ne;
	aw_schema_error se[1];
	if (aw_schema_validate(c->schema[fi], body, se, 1) > 0)
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, se[0].pointer, "%s %s (%s)",
				  se[0].pointer[0] ? se[0].pointer : "the body", se[0].message,
				  se[0].keyword);
	/* every reader of the project reads the body: credentials by reference */
	aw_err ce = aw_redact_refuse_credentials(body, "", AW_E_CONTRACT_SECRET, 1, err);
	if (ce)
		return ce;
	/* what a JSON Schema cannot say */
	if (!strcmp(family, "approval") &&
	    json_integer_value(json_object_get(body, "threshold")) >
		    (json_int_t)json_array_size(json_object_get(body, "approvers")))
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, "/threshold",
				  "/threshold is larger than the number of approvers");
	if (!strcmp(family, "approval") && json_object_get(body, "rollback_threshold") &&
	    json_integer_value(json_object_get(body, "rollback_threshold")) >
		    json_integer_value(json_object_get(body, "threshold")))
		return aw_fail_at(err, AW_E_CONTRACT_SCHEMA, "/rollback_threshold",
				  "/rollback_threshold is larger than /threshold: a rollback"
				  " quorum may be faster, never slower");
	if (!strcmp(family, "mcp_tool"))
		return aw_contract_mcp_check(body, err);
	if (!strcmp(family, "channel_event"))
		return channel_check(body, err);
	if (!strcmp(family, "platform_resource"))
		return platform_check(body, contract_id, err);
	if (!strcmp(family, "policy_routing"))
		return upstreams_check(json_object_get(body, "upstreams"), 1, err);
	return AW_OK;
}

/* ---------------------------------------------------------- signing */

/* What a publish signs: the revision and its body's hash, and for a
 * rollback also what it restores and replaces (rollback_of, rollback_from:
 * they earn it the faster quorum, so a row marked a rollback afterwards
 * does not verify). legacy: the tuple without them, which rollbacks signed
 * before they were covered carry. */
static char *signed_tuple(const char *project, const aw_revision *r, const char *body_hash,
			  int legacy)
{
	json_t *t = json_pack("[s,s,s,s,s]", project, r->family, r->contract_id, r->revision_id,
			      body_hash);
	if (t && r->rollback_of[0] && !legacy) {
		json_array_append_new(t, json_string("rollback"));
		json_array_append_new(t, json_string(r->rollback_of));
		json_array_append_new(t, json_string(r->rollback_from));
	}
	char *s = t ? aw_jcs(t) : NULL;
	json_decref(t);
	return s;
}

static int tuple_verifies(const aw_contracts *c, const aw_revision *r, int legacy)
{
	char *tuple = signed_tuple(r->project_id, r, r->body_hash, legacy);
	int ok = tuple && aw_keyring_verify(atomic_load(&c->kr), r->sign_key_id, tuple,
					    strlen(tuple), r->signature);
	free(tuple);
	return ok;
}

int aw_contract_verify(const aw_contracts *c, const aw_revision *r)
{
	json_error_t je;
	json_t *body = json_loads(r->body, JSON_DECODE_ANY, &je);
	char hash[65];
	int bad = !body || aw_jcs_sha256(body, hash) || strcmp(hash, r->body_hash) != 0;
	json_decref(body);
	if (bad)
		return -1;
	if (tuple_verifies(c, r, 0))
		return 0;
	/* a rollback signed before its markers were: only once activated (its
	 * quorum was counted then); a published one must be made again */
	int activated = !strcmp(r->state, "active") || !strcmp(r->state, "superseded") ||
			!strcmp(r->state, "revoked");
	return r->rollback_of[0] && activated && tuple_verifies(c, r, 1) ? 0 : -1;
}

/* Records a detected tamper in its own transaction (the caller's rolled back). */
static void audit_tamper(aw_store *s, const aw_ctx *ctx, const aw_revision *r)
{
	aw_txn *t = NULL;
	aw_error ignore;
	json_t *p = json_pack("{s:s, s:s, s:s}", "family", r->family, "contract_id", r->contract_id,
			      "stored_body_hash", r->body_hash);
	if (aw_store_begin(s, ctx, AW_TXN_WRITE, &t, &ignore) == AW_OK) {
		if (aw_audit_record(t, ctx, "contract.tamper_detected", r->revision_id, p, &ignore))
			aw_store_rollback(t);
		else
			aw_store_commit(t, &ignore);
	}
	json_decref(p);
	aw_log(AW_LOG_ERROR, ctx, "contract revision failed verification", "revision_id",
	       r->revision_id, "family", r->family, "contract_id", r->contract_id, NULL);
}

/* ---------------------------------------------------------- helpers */

static json_t *audit_payload(const aw_revision *r)
{
	return json_pack("{s:s, s:s, s:s}", "family", r->family, "contract_id", r->contract_id,
			 "state", r->state);
}

/* Opens a write txn, locks the contract, loads the revision. */
static aw_err begin_on(aw_store *s, const aw_ctx *ctx, const char *family, const char *contract_id,
		       const char *rev, aw_txn **t, aw_revision *r, aw_error *err)
{
	aw_err e = aw_contract_target_ok(ctx, family, contract_id, err);
	if (e)
		return e;
	if (!aw_uuid_valid(rev))
		return aw_fail(err, AW_E_REQ_ID, "revision id must be a UUID");
	if ((e = aw_store_begin(s, ctx, AW_TXN_WRITE, t, err)))
		return e;
	if ((e = aw_store_contract_lock(*t, family, contract_id, err)) ||
	    (e = aw_store_rev_get(*t, family, contract_id, rev, r, err))) {
		aw_store_rollback(*t);
		*t = NULL;
	}
	return e;
}

static aw_err finish(aw_txn *t, aw_err e, aw_error *err)
{
	if (e) {
		aw_store_rollback(t);
		return e;
	}
	return aw_store_commit(t, err);
}

/* ---------------------------------------------------------- operations */

aw_err aw_contract_create(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
			  const char *contract_id, const json_t *body, aw_revision *out,
			  aw_error *err)
{
	aw_err e = aw_contract_target_ok(ctx, family, contract_id, err);
	if (e || (e = aw_contract_validate(c, ctx->project, family, contract_id, body, err)))
		return e;
	aw_revision r = {0};
	if (AW_STR_COPY(r.family, family) < 0 || AW_STR_COPY(r.contract_id, contract_id) < 0)
		return aw_fail(err, AW_E_CONTRACT_ID, "family or contract id too long");
	aw_uuid7_str(r.revision_id);
	AW_COPY_ARRAY(r.project_id, ctx->project);
	snprintf(r.state, sizeof r.state, "draft");
	aw_clock_now(r.created_at);
	memcpy(r.updated_at, r.created_at, sizeof r.updated_at);
	AW_COPY_ARRAY(r.created_by, ctx->principal);
	r.body = aw_jcs(body);
	if (!r.body)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_txn *t = NULL;
	if ((e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err))) {
		free(r.body);
		return e;
	}
	aw_project p;
	json_t *ap = audit_payload(&r);
	if (!(e = aw_store_project_get(t, &p, err)) && !(e = aw_store_rev_insert(t, &r, err)))
		e = aw_audit_record(t, ctx, "contract.draft", r.revision_id, ap, err);
	json_decref(ap);
	if ((e = finish(t, e, err)) || !out)
		free(r.body);
	else
		*out = r;
	return e;
}

aw_err aw_contract_update(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
			  const char *contract_id, const char *rev, const json_t *body,
			  aw_revision *out, aw_error *err)
{
	aw_err e = aw_contract_target_ok(ctx, family, contract_id, err);
	if (e || (e = aw_contract_validate(c, ctx->project, family, contract_id, body, err)))
		return e;
	aw_txn *t = NULL;
	aw_revision r = {0};
	if ((e = begin_on(s, ctx, family, contract_id, rev, &t, &r, err)))
		return e;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	char *text = aw_jcs(body);
	if (!text)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	else if (strcmp(r.state, "draft") != 0)
		e = illegal(err, r.state, "edit");
	else if (!(e = aw_store_rev_set_body(t, rev, text, now, err))) {
		json_t *ap = audit_payload(&r);
		e = aw_audit_record(t, ctx, "contract.update", rev, ap, err);
		json_decref(ap);
	}
	if (!(e = finish(t, e, err)) && out) {
		free(r.body);
		r.body = text;
		text = NULL;
		memcpy(r.updated_at, now, sizeof now);
		*out = r;
		r.body = NULL;
	}
	free(text);
	aw_revision_clear(&r);
	return e;
}

aw_err aw_contract_get(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
		       const char *contract_id, const char *rev, aw_revision *out, aw_error *err)
{
	(void)c;
	aw_err e = aw_contract_target_ok(ctx, family, contract_id, err);
	if (e)
		return e;
	if (!aw_uuid_valid(rev))
		return aw_fail(err, AW_E_REQ_ID, "revision id must be a UUID");
	aw_txn *t = NULL;
	if ((e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err)))
		return e;
	e = aw_store_rev_get(t, family, contract_id, rev, out, err);
	aw_store_rollback(t);
	return e;
}

aw_err aw_contract_list(aw_store *s, const aw_ctx *ctx, const char *family, const char *contract_id,
			aw_revision **out, int *n, aw_error *err)
{
	aw_err e = aw_contract_target_ok(ctx, family, contract_id, err);
	if (e)
		return e;
	aw_txn *t = NULL;
	if ((e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err)))
		return e;
	aw_project p;
	if (!(e = aw_store_project_get(t, &p, err)))
		e = aw_store_rev_list(t, family, contract_id, out, n, err);
	aw_store_rollback(t);
	return e;
}

aw_err aw_contract_publish(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			   const char *family, const char *contract_id, const char *rev,
			   aw_revision *out, aw_error *err)
{
	aw_txn *t = NULL;
	aw_revision r = {0};
	aw_err e = begin_on(s, ctx, family, contract_id, rev, &t, &r, err);
	if (e)
		return e;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	json_error_t je;
	json_t *body = json_loads(r.body, JSON_DECODE_ANY, &je);
	char *tuple = NULL;
	if (!transition_ok(r.state, "published")) {
		e = illegal(err, r.state, "publish");
	} else if (!body) {
		e = aw_fail(err, AW_E_INTERNAL, "the stored draft does not parse: %s", je.text);
	} else if (aw_jcs_sha256(body, r.body_hash) ||
		   !(tuple = signed_tuple(ctx->project, &r, r.body_hash, 0))) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	} else if (!(e = aw_keyring_sign(atomic_load(&c->kr), tuple, strlen(tuple), r.sign_key_id,
					 sizeof r.sign_key_id, r.signature, err)) &&
		   !(e = aw_store_rev_publish(t, rev, r.body_hash, r.signature, r.sign_key_id,
					      ctx->principal, now, err))) {
		snprintf(r.state, sizeof r.state, "published");
		json_t *ap = audit_payload(&r);
		json_object_set_new(ap, "body_hash", json_string(r.body_hash));
		json_object_set_new(ap, "key_id", json_string(r.sign_key_id));
		e = aw_audit_record(t, ctx, "contract.publish", rev, ap, err);
		json_decref(ap);
	}
	free(tuple);
	json_decref(body);
	if (!(e = finish(t, e, err)) && out) {
		memcpy(r.published_at, now, sizeof now);
		memcpy(r.updated_at, now, sizeof now);
		AW_COPY_ARRAY(r.published_by, ctx->principal);
		*out = r;
		return e;
	}
	aw_revision_clear(&r);
	return e;
}

aw_err aw_contract_approval_policy(const aw_contracts *c, aw_txn *t, aw_approval_policy *p,
				   aw_error *err)
{
	*p = (aw_approval_policy){NULL, 1, 86400, 0, 0};
	char rev[AW_UUID_STR_LEN + 1];
	aw_err e = aw_store_active_get(t, "approval", AW_APPROVAL_CONTRACT, rev, err);
	if (e || !rev[0])
		return e;
	aw_revision r = {0};
	if ((e = aw_store_rev_get(t, "approval", AW_APPROVAL_CONTRACT, rev, &r, err)))
		return e;
	if (aw_contract_verify(c, &r)) {
		aw_revision_clear(&r);
		return aw_fail(err, AW_E_CONTRACT_SIG,
			       "the active approval policy fails verification");
	}
	json_t *b = json_loads(r.body, 0, NULL);
	aw_revision_clear(&r);
	if (!b)
		return aw_fail(err, AW_E_INTERNAL, "the stored approval policy does not parse");
	p->approvers = json_incref(json_object_get(b, "approvers"));
	p->threshold = (int)json_integer_value(json_object_get(b, "threshold"));
	p->window_s = (int)json_integer_value(json_object_get(b, "window_s"));
	p->suggest = !strcmp(json_string_value(json_object_get(b, "mode")), "suggest");
	p->rollback_threshold = (int)json_integer_value(json_object_get(b, "rollback_threshold"));
	json_decref(b);
	return AW_OK;
}

int aw_contract_quorum(const aw_approval_policy *p, const aw_revision *r)
{
	/* restoring an older approval policy is a change of who approves: it
	 * always needs the full threshold of the signers it replaces */
	if (r->rollback_of[0] && strcmp(r->family, "approval") != 0 && p->rollback_threshold > 0)
		return p->rollback_threshold;
	return p->threshold;
}

/* Valid approvals of r in t at `now`: unexpired, by an approver of the
 * policy, neither the publisher nor a key the publisher minted. */
static aw_err count_approvals(aw_txn *t, const aw_approval_policy *p, const aw_revision *r,
			      const char *now, int *n, aw_error *err)
{
	aw_approval *ap = NULL;
	aw_apikey *keys = NULL;
	int nap = 0, nkeys = 0;
	aw_err e = aw_store_approval_list(t, r->revision_id, &ap, &nap, err);
	if (!e)
		e = aw_store_key_list(t, &keys, &nkeys, err);
	*n = 0;
	for (int i = 0; !e && i < nap; i++) /* approvals are unique per principal */
		*n += strcmp(ap[i].expires_at, now) > 0 &&
		      aw_contract_approver(p->approvers, ap[i].principal) &&
		      strcmp(ap[i].principal, r->published_by) != 0 &&
		      !aw_key_minted_by(keys, nkeys, ap[i].principal, r->published_by);
	free(ap);
	free(keys);
	return e;
}

int aw_contract_approver(const json_t *approvers, const char *principal)
{
	size_t i;
	json_t *v;
	if (!json_is_array(approvers)) /* no list: any principal */
		return 1;
	json_array_foreach (approvers, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), principal))
			return 1;
	return 0;
}

aw_err aw_contract_approve(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			   const char *family, const char *contract_id, const char *rev,
			   aw_approval *out, aw_error *err)
{
	return aw_contract_approve_ex(c, s, ctx, family, contract_id, rev, out, NULL, err);
}

aw_err aw_contract_approve_ex(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			      const char *family, const char *contract_id, const char *rev,
			      aw_approval *out, aw_approve_result *res, aw_error *err)
{
	aw_approve_result rr = {0};
	aw_txn *t = NULL;
	aw_revision r = {0};
	aw_err e = begin_on(s, ctx, family, contract_id, rev, &t, &r, err);
	if (e)
		return e;
	aw_approval_policy p = {0};
	aw_approval a = {0};
	aw_apikey *keys = NULL;
	int nkeys = 0;
	if (strcmp(r.state, "published") != 0)
		e = illegal(err, r.state, "approve");
	else if (!strcmp(r.published_by, ctx->principal))
		e = aw_fail(err, AW_E_CONTRACT_SELF_APPROVAL, "the publisher cannot approve");
	else if (!(e = aw_store_key_list(t, &keys, &nkeys, err)) &&
		 aw_key_minted_by(keys, nkeys, ctx->principal, r.published_by))
		e = aw_fail(err, AW_E_CONTRACT_SELF_APPROVAL,
			    "a key the publisher minted cannot approve its revision");
	else if (!e && !(e = aw_contract_approval_policy(c, t, &p, err)) &&
		 !aw_contract_approver(p.approvers, ctx->principal))
		e = aw_fail(err, AW_E_CONTRACT_APPROVER, "not an approver in the approval policy");
	free(keys);
	if (!e) {
		AW_COPY_ARRAY(a.principal, ctx->principal);
		int64_t now = aw_clock_wall_ms();
		aw_clock_format(now, a.approved_at);
		aw_clock_format(now + (int64_t)p.window_s * 1000, a.expires_at);
		if (!(e = aw_store_approval_insert(t, rev, &a, err))) {
			json_t *ap = audit_payload(&r);
			json_object_set_new(ap, "expires_at", json_string(a.expires_at));
			e = aw_audit_record(t, ctx, "contract.approve", rev, ap, err);
			json_decref(ap);
		}
		if (!e && (rr.rollback = r.rollback_of[0] != '\0')) {
			char ts[AW_TS_LEN + 1];
			aw_clock_now(ts);
			rr.needed = aw_contract_quorum(&p, &r);
			e = count_approvals(t, &p, &r, ts, &rr.approvals, err);
		}
	}
	json_decref(p.approvers);
	aw_revision_clear(&r);
	if (!(e = finish(t, e, err)) && out)
		*out = a;
	/* the approval that completes a rollback's quorum activates it: every
	 * check again, in a transaction of its own */
	if (!e && rr.rollback && rr.approvals >= rr.needed)
		rr.act_err.err = aw_contract_activate(c, s, ctx, family, contract_id, rev, &rr.act,
						      &rr.act_err);
	if (res)
		*res = rr;
	return e;
}

aw_err aw_contract_activate(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			    const char *family, const char *contract_id, const char *rev,
			    aw_activation *out, aw_error *err)
{
	aw_activation act = {0};
	aw_txn *t = NULL;
	aw_revision r = {0};
	aw_err e = begin_on(s, ctx, family, contract_id, rev, &t, &r, err);
	if (e)
		return e;
	aw_approval_policy p = {0};
	aw_revision target = {0};
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	if (!transition_ok(r.state, "active")) {
		e = illegal(err, r.state, "activate");
		goto done;
	}
	if (aw_contract_verify(c, &r)) {
		aw_store_rollback(t);
		t = NULL;
		audit_tamper(s, ctx, &r);
		e = aw_fail(err, AW_E_CONTRACT_SIG, "stored body or signature does not verify");
		goto done;
	}
	if ((e = aw_contract_approval_policy(c, t, &p, err)) ||
	    (e = count_approvals(t, &p, &r, now, &act.approvals, err)) ||
	    (e = aw_store_active_get(t, family, contract_id, act.old_revision_id, err)))
		goto done;
	act.threshold = aw_contract_quorum(&p, &r);
	if (r.rollback_of[0]) { /* approved as "from this one back to that one" */
		if (strcmp(act.old_revision_id, r.rollback_from) != 0) {
			e = aw_fail(err, AW_E_CONTRACT_RB_STALE,
				    "the active revision is no longer the one this rollback"
				    " replaces (%s); request a new rollback",
				    r.rollback_from[0] ? r.rollback_from : "none");
			goto done;
		}
		if ((e = aw_store_rev_get(t, family, contract_id, r.rollback_of, &target, err)))
			goto done;
		if (strcmp(target.body_hash, r.body_hash) != 0) {
			e = aw_fail(err, AW_E_CONTRACT_SIG,
				    "the rollback's body is not its target's body");
			goto done;
		}
	}
	if (act.approvals < act.threshold) {
		if (p.suggest) { /* record what would have happened, change nothing */
			act.suggested = 1;
			json_t *pl = audit_payload(&r);
			json_object_set_new(pl, "approvals", json_integer(act.approvals));
			json_object_set_new(pl, "threshold", json_integer(act.threshold));
			e = aw_audit_record(t, ctx, "contract.activate_suggested", rev, pl, err);
			json_decref(pl);
		} else {
			e = aw_fail(err, AW_E_CONTRACT_APPROVALS,
				    "%d valid approval(s), the policy needs %d", act.approvals,
				    act.threshold);
		}
		goto done;
	}
	if (act.old_revision_id[0] &&
	    (e = aw_store_rev_transition(t, act.old_revision_id, "active", "superseded", now, err)))
		goto done;
	if ((e = aw_store_rev_transition(t, rev, "published", "active", now, err)) ||
	    (e = aw_store_active_set(t, family, contract_id, rev, ctx->principal, now, err)))
		goto done;
	if (aw_contract_fault_hook && aw_contract_fault_hook("after_pointer")) {
		e = aw_fail(err, AW_E_INTERNAL, "fault injected after the pointer update");
		goto done;
	}
	aw_outbox_event ev = {0};
	aw_uuid7_str(ev.event_id);
	snprintf(ev.event_type, sizeof ev.event_type, "revision_activated");
	AW_COPY_ARRAY(ev.family, r.family); /* r: the revision family/contract_id/rev */
	AW_COPY_ARRAY(ev.contract_id, r.contract_id);
	memcpy(ev.old_revision_id, act.old_revision_id, sizeof ev.old_revision_id);
	AW_COPY_ARRAY(ev.new_revision_id, r.revision_id);
	aw_clock_now(ev.created_at); /* as late as possible: the commit follows */
	aw_activation_row hist = {0};
	memcpy(hist.revision_id, ev.new_revision_id, sizeof hist.revision_id);
	memcpy(hist.previous_revision_id, ev.old_revision_id, sizeof hist.previous_revision_id);
	memcpy(hist.activated_at, ev.created_at, sizeof hist.activated_at);
	AW_COPY_ARRAY(hist.activated_by, ctx->principal);
	if ((e = aw_store_outbox_insert(t, &ev, err)) ||
	    (e = aw_store_activation_add(t, family, contract_id, &hist, err)))
		goto done;
	memcpy(act.event_id, ev.event_id, sizeof act.event_id);
	json_t *pl = audit_payload(&r);
	json_object_set_new(pl, "old_revision_id",
			    act.old_revision_id[0] ? json_string(act.old_revision_id)
						   : json_null());
	json_object_set_new(pl, "approvals", json_integer(act.approvals));
	json_object_set_new(pl, "event_id", json_string(ev.event_id));
	if (r.rollback_of[0])
		json_object_set_new(pl, "rollback_of", json_string(r.rollback_of));
	e = aw_audit_record(t, ctx, "contract.activate", rev, pl, err);
	json_decref(pl);
	act.activated = !e;
done:
	json_decref(p.approvers);
	aw_revision_clear(&r);
	aw_revision_clear(&target);
	if (t)
		e = finish(t, e, err);
	if (e)
		act.activated = act.suggested = 0;
	if (act.activated)
		changed(); /* the relay of this process delivers at once */
	if (out)
		*out = act;
	return e;
}

/* The rollback's target: `to`, or the revision active before the current
 * activation; it must have been active and be superseded now. */
static aw_err rollback_target(aw_txn *t, const char *family, const char *contract_id,
			      const char *to, aw_revision *target, aw_error *err)
{
	char want[AW_UUID_STR_LEN + 1] = "";
	if (to && *to) {
		if (AW_STR_COPY(want, to) < 0) /* the caller checked it is a UUID */
			return aw_fail_at(err, AW_E_REQ_ID, "to",
					  "the target revision id must be a UUID");
	} else {
		aw_activation_row *h = NULL;
		int n = 0;
		aw_err e = aw_store_activations_recent(t, family, contract_id, 1, &h, &n, err);
		if (!e && n)
			memcpy(want, h[0].previous_revision_id, sizeof want);
		free(h);
		if (e)
			return e;
		if (!want[0])
			return aw_fail(err, AW_E_CONTRACT_RB_TARGET,
				       "no revision was active before the current activation: name"
				       " the target (to)");
	}
	aw_err e = aw_store_rev_get(t, family, contract_id, want, target, err);
	if (!e && strcmp(target->state, "superseded") != 0) {
		e = aw_fail(err, AW_E_CONTRACT_RB_TARGET,
			    "revision %s is %s: only an earlier active revision, now superseded,"
			    " can be rolled back to",
			    want, target->state);
		aw_revision_clear(target);
	}
	return e;
}

aw_err aw_contract_rollback(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			    const char *family, const char *contract_id, const char *to,
			    aw_rollback *out, aw_error *err)
{
	aw_err e = aw_contract_target_ok(ctx, family, contract_id, err);
	if (e)
		return e;
	if (to && *to && !aw_uuid_valid(to))
		return aw_fail_at(err, AW_E_REQ_ID, "to", "the target revision id must be a UUID");
	aw_txn *t = NULL;
	aw_revision target = {0}, r = {0};
	aw_approval_policy p = {0};
	json_t *body = NULL, *ap = NULL;
	char *tuple = NULL;
	if ((e = aw_store_begin(s, ctx, AW_TXN_WRITE, &t, err)))
		return e;
	if ((e = aw_store_contract_lock(t, family, contract_id, err)) ||
	    (e = aw_store_active_get(t, family, contract_id, r.rollback_from, err)) ||
	    (e = rollback_target(t, family, contract_id, to, &target, err)))
		goto done;
	if (aw_contract_verify(c, &target)) { /* restore only what verifies */
		aw_store_rollback(t);
		t = NULL;
		audit_tamper(s, ctx, &target);
		e = aw_fail(err, AW_E_CONTRACT_SIG,
			    "the target's body or signature does not verify");
		goto done;
	}
	aw_error ve = {0};
	if (!(body = json_loads(target.body, 0, NULL))) {
		e = aw_fail(err, AW_E_INTERNAL, "the target's stored body does not parse");
		goto done;
	}
	if (aw_contract_validate(c, ctx->project, family, contract_id, body, &ve)) {
		e = aw_fail_at(err, AW_E_CONTRACT_RB_INVALID, ve.where,
			       "revision %s fails today's validation (%s): %s", target.revision_id,
			       aw_err_code(ve.err), ve.msg);
		goto done;
	}
	aw_uuid7_str(r.revision_id);
	AW_COPY_ARRAY(r.project_id, ctx->project);
	AW_COPY_ARRAY(r.family, target.family); /* target: read by family, contract_id */
	AW_COPY_ARRAY(r.contract_id, target.contract_id);
	snprintf(r.state, sizeof r.state, "draft");
	memcpy(r.rollback_of, target.revision_id, sizeof r.rollback_of);
	aw_clock_now(r.created_at);
	memcpy(r.updated_at, r.created_at, sizeof r.updated_at);
	AW_COPY_ARRAY(r.created_by, ctx->principal);
	if (!(r.body = aw_jcs(body)) || aw_jcs_sha256(body, r.body_hash) ||
	    !(tuple = signed_tuple(ctx->project, &r, r.body_hash, 0))) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
		goto done;
	}
	if (strcmp(r.body_hash, target.body_hash) != 0) {
		e = aw_fail(err, AW_E_INTERNAL, "the restored body does not hash as its target's");
		goto done;
	}
	ap = audit_payload(&r);
	json_object_set_new(ap, "rollback_of", json_string(r.rollback_of));
	if ((e = aw_store_rev_insert(t, &r, err)) ||
	    (e = aw_audit_record(t, ctx, "contract.draft", r.revision_id, ap, err)) ||
	    (e = aw_keyring_sign(atomic_load(&c->kr), tuple, strlen(tuple), r.sign_key_id,
				 sizeof r.sign_key_id, r.signature, err)) ||
	    (e = aw_store_rev_publish(t, r.revision_id, r.body_hash, r.signature, r.sign_key_id,
				      ctx->principal, r.created_at, err)))
		goto done;
	snprintf(r.state, sizeof r.state, "published");
	memcpy(r.published_at, r.created_at, sizeof r.published_at);
	AW_COPY_ARRAY(r.published_by, ctx->principal);
	json_object_set_new(ap, "state", json_string(r.state));
	json_object_set_new(ap, "body_hash", json_string(r.body_hash));
	json_object_set_new(ap, "key_id", json_string(r.sign_key_id));
	if ((e = aw_audit_record(t, ctx, "contract.publish", r.revision_id, ap, err)) ||
	    (e = aw_contract_approval_policy(c, t, &p, err)))
		goto done;
	json_decref(ap);
	ap = json_pack("{s:s, s:s, s:s, s:o, s:s, s:i}", "family", family, "contract_id",
		       contract_id, "to_revision_id", r.rollback_of, "from_revision_id",
		       r.rollback_from[0] ? json_string(r.rollback_from) : json_null(), "body_hash",
		       r.body_hash, "approvals_needed", aw_contract_quorum(&p, &r));
	e = ap ? aw_audit_record(t, ctx, "contract.rollback", r.revision_id, ap, err)
	       : aw_fail(err, AW_E_NOMEM, "out of memory");
done:
	json_decref(ap);
	json_decref(body);
	free(tuple);
	aw_revision_clear(&target);
	if (t)
		e = finish(t, e, err);
	if (!e && out) {
		out->needed = aw_contract_quorum(&p, &r);
		out->revision = r;
		r.body = NULL;
	}
	json_decref(p.approvers);
	aw_revision_clear(&r);
	return e;
}

aw_err aw_contract_revoke(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
			  const char *contract_id, const char *rev, aw_error *err)
{
	(void)c;
	aw_txn *t = NULL;
	aw_revision r = {0};
	aw_err e = begin_on(s, ctx, family, contract_id, rev, &t, &r, err);
	if (e)
		return e;
	char now[AW_TS_LEN + 1];
	aw_clock_now(now);
	int was_active = !strcmp(r.state, "active");
	if (!transition_ok(r.state, "revoked"))
		e = illegal(err, r.state, "revoke");
	else if (was_active && !strcmp(family, "approval"))
		/* revoking it would fall back to the weaker platform default: the
		 * approval policy is only ever replaced, with its signers' approval */
		e = aw_fail(err, AW_E_CONTRACT_STATE,
			    "the active approval policy cannot be revoked; activate a new"
			    " revision approved by its current signers");
	else
		e = aw_store_rev_transition(t, rev, r.state, "revoked", now, err);
	if (!e && was_active) {
		/* emergency stop: no active revision until another one activates */
		aw_outbox_event ev = {0};
		aw_uuid7_str(ev.event_id);
		snprintf(ev.event_type, sizeof ev.event_type, "revision_revoked");
		AW_COPY_ARRAY(ev.family, r.family); /* r: the revision family/contract_id/rev */
		AW_COPY_ARRAY(ev.contract_id, r.contract_id);
		AW_COPY_ARRAY(ev.old_revision_id, r.revision_id);
		AW_COPY_ARRAY(ev.new_revision_id, r.revision_id);
		memcpy(ev.created_at, now, sizeof now);
		if (!(e = aw_store_active_clear(t, family, contract_id, err)))
			e = aw_store_outbox_insert(t, &ev, err);
	}
	if (!e) {
		json_t *ap = audit_payload(&r);
		json_object_set_new(ap, "was_active", json_boolean(was_active));
		e = aw_audit_record(t, ctx, "contract.revoke", rev, ap, err);
		json_decref(ap);
	}
	aw_revision_clear(&r);
	e = finish(t, e, err);
	if (!e && was_active)
		changed();
	return e;
}

aw_err aw_contract_active(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
			  const char *contract_id, aw_revision *out, aw_error *err)
{
	aw_err e = aw_contract_target_ok(ctx, family, contract_id, err);
	if (e)
		return e;
	aw_txn *t = NULL;
	char rev[AW_UUID_STR_LEN + 1];
	if ((e = aw_store_begin(s, ctx, AW_TXN_READ, &t, err)))
		return e;
	if (!(e = aw_store_active_get(t, family, contract_id, rev, err))) {
		if (!rev[0])
			e = aw_fail(err, AW_E_CONTRACT_NOT_FOUND,
				    "the contract has no active revision");
		else
			e = aw_store_rev_get(t, family, contract_id, rev, out, err);
	}
	aw_store_rollback(t);
	if (e)
		return e;
	if (aw_contract_verify(c, out)) {
		audit_tamper(s, ctx, out);
		aw_revision_clear(out);
		return aw_fail(err, AW_E_CONTRACT_SIG, "the active revision fails verification");
	}
	return AW_OK;
}

aw_err aw_contract_diff(aw_store *s, const aw_ctx *ctx, const char *family, const char *contract_id,
			const char *a, const char *b, json_t **patch, aw_error *err)
{
	aw_revision ra = {0}, rb = {0};
	aw_err e = aw_contract_get(NULL, s, ctx, family, contract_id, a, &ra, err);
	if (!e)
		e = aw_contract_get(NULL, s, ctx, family, contract_id, b, &rb, err);
	if (!e) {
		json_t *ja = json_loads(ra.body, JSON_DECODE_ANY, NULL);
		json_t *jb = json_loads(rb.body, JSON_DECODE_ANY, NULL);
		if (!ja || !jb)
			e = aw_fail(err, AW_E_INTERNAL, "a stored revision body does not parse");
		else
			e = aw_json_patch_diff(ja, jb, patch, err);
		json_decref(ja);
		json_decref(jb);
	}
	aw_revision_clear(&ra);
	aw_revision_clear(&rb);
	return e;
}
