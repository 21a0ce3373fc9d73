/*
 * h_approval.c - approval tokens and decisions:
 *   POST /v1/platform/approval-tokens         mint the key's own decision (any key)
 *   POST /v1/platform/approval-tokens:verify  verify, nothing consumed (reader)
 *   POST /v1/platform/runs/{run_id}/approve   decide with a token
 * A token is its minter's own decision, signed: minted by the approver's own
 * key (never for another principal), it can be handed to a link or a chat
 * button. The approve route is open: the token is the credential. With a
 * key, the key's project must be the token's audience and the token the
 * key's own; without one, the audience names the project and the signature
 * vouches for it.
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/approval.h"
#include "awooop/json.h"
#include "http_internal.h"

static int service_or_reply(aw_req *r)
{
	if (r->opts->approvals)
		return 0;
	aw_error err = {0};
	reply_problem(r, aw_fail(&err, AW_E_APPROVAL_KEY, "this process decides no approvals"),
		      &err);
	return -1;
}

/* The body {"token": ...} (and nothing else unless allowed); NULL replied. */
static json_t *body_or_reply(aw_req *r, const char *const *allowed)
{
	aw_error err = {0};
	json_t *b = NULL;
	aw_err e = json_body_or_reply(r) ? AW_E_REQ_MEDIA : AW_OK;
	if (e)
		return NULL;
	if ((e = aw_json_parse_object(r->body ? r->body : "", r->body_len, &b, &err)) ||
	    (e = aw_json_only(b, allowed, &err))) {
		json_decref(b);
		reply_problem(r, e, &err);
		return NULL;
	}
	return b;
}

static json_t *claims_json(const aw_approval_claims *c)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "kid", c->kid, "iss",
			 c->iss, "aud", c->aud, "sub", c->sub, "run_id", c->run_id, "action",
			 c->action, "jti", c->jti, "iat", (json_int_t)c->iat, "nbf",
			 (json_int_t)c->nbf, "exp", (json_int_t)c->exp);
}

void h_approval_mint(aw_req *r)
{
	static const char *const allowed[] = {"run_id", "sub", "action", "ttl_s", NULL};
	aw_error err = {0};
	aw_ctx scoped;
	if (service_or_reply(r) || own_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	json_t *b = body_or_reply(r, allowed);
	if (!b)
		return;
	json_t *ttl = json_object_get(b, "ttl_s");
	const char *run_id = NULL, *sub = NULL, *action = NULL;
	aw_err e = aw_json_str(b, "run_id", 1, &run_id, &err);
	if (!e)
		e = aw_json_str(b, "sub", 0, &sub, &err);
	if (!e)
		e = aw_json_str(b, "action", 1, &action, &err);
	if (!e && ttl && !json_is_integer(ttl))
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "ttl_s", "ttl_s must be an integer");
	char *tok = NULL;
	aw_approval_claims c;
	if (!e)
		e = aw_approvals_mint(r->opts->approvals, &scoped, run_id, sub, action,
				      ttl ? (int)json_integer_value(ttl) : 900, &tok, &c, &err);
	json_decref(b);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 201, json_pack("{s:s, s:o}", "token", tok, "claims", claims_json(&c)));
	memset(tok, 0, strlen(tok));
	free(tok);
}

void h_approval_verify(aw_req *r)
{
	static const char *const allowed[] = {"token", NULL};
	aw_error err = {0};
	aw_ctx scoped;
	if (service_or_reply(r) || own_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	json_t *b = body_or_reply(r, allowed);
	if (!b)
		return;
	const char *tok = NULL;
	aw_approval_claims c;
	aw_err e = aw_json_str(b, "token", 1, &tok, &err);
	if (!e)
		e = aw_approvals_verify(r->opts->approvals, &scoped, tok, &c, &err);
	json_decref(b);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 200, json_pack("{s:b, s:o}", "valid", 1, "claims", claims_json(&c)));
}

void h_run_approve(aw_req *r)
{
	static const char *const allowed[] = {"token", "decision", NULL};
	aw_error err = {0};
	aw_ctx scoped;
	if (service_or_reply(r))
		return;
	int keyed = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization") != NULL;
	if (keyed && selected_project_or_reply(r, AW_SCOPE_READER, &scoped))
		return;
	json_t *b = body_or_reply(r, allowed);
	if (!b)
		return;
	const char *tok = NULL, *decision = NULL;
	aw_err e = aw_json_str(b, "token", 0, &tok, &err);
	if (!e)
		e = aw_json_str(b, "decision", 0, &decision, &err);
	if (!e && !tok == !decision)
		e = aw_fail_at(&err, AW_E_REQ_INVALID, "", "give a token or a decision");
	else if (!e && decision && !keyed)
		e = aw_fail(&err, AW_E_AUTH_MISSING,
			    "a decision is made with the approver's own key");
	if (!e && decision) { /* the key's own decision */
		json_t *out = NULL;
		aw_approval_decision d = {.run_id = r->segs[3],
					  .principal = scoped.principal,
					  .decision = decision,
					  .via = "api"};
		e = aw_approvals_decide(r->opts->approvals, &scoped, &d, &out, &err);
		json_decref(b);
		if (e)
			return reply_problem(r, e, &err);
		return http_reply_json(r, 200, out);
	}
	if (!e && !keyed) { /* the audience names the project; the signature vouches */
		aw_jws j;
		if (!(e = aw_jws_parse(tok, strlen(tok), &j, &err))) {
			const char *aud = json_string_value(json_object_get(j.claims, "aud"));
			if (!aud || !*aud || strlen(aud) > AW_PROJECT_MAX)
				e = aw_fail_at(&err, AW_E_APPROVAL_TOKEN, "aud",
					       "the token names no project (aud)");
			else
				aw_ctx_with_project(&r->ctx, aud, &scoped);
			aw_jws_clear(&j);
		}
	}
	json_t *out = NULL;
	if (!e)
		e = aw_approvals_decide_token(r->opts->approvals, &scoped, r->segs[3], tok, &out,
					      &err);
	json_decref(b);
	if (e) {
		reply_problem(r, e, &err);
		return;
	}
	http_reply_json(r, 200, out);
}
