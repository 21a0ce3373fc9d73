/*
 * approval.h - approval tokens and the decisions that move waiting runs.
 *
 * A token is a JWS compact HS256 JWT (RFC 7519) with the protected header
 * {"alg": "HS256", "typ": "JWT", "kid": <key id>} and the claims iss, aud (the
 * project), sub (the approver, a principal of the project's approval policy),
 * run_id, action ("approve" | "deny"), iat, nbf, exp and jti. The algorithm is
 * pinned: a header naming anything but HS256 (none, HS384, RS256, ...) or
 * carrying "crit" is refused before any key is touched; the signature is
 * compared in constant time under the key its kid names in the approval key
 * ring (keyring.h: ids, rotation, 32+ byte keys); the claims are read only
 * after the signature holds. Times allow AW_APPROVAL_LEEWAY_S of clock skew.
 *
 * A run whose next step is {"kind": "approval"} parks in waiting_approval
 * with the rule of its approval policy (approvers, threshold N of M, window)
 * in its journal; decisions (a verified token, or a channel's button pressed
 * by a mapped user) are rows unique per approver and per jti; the decision
 * that reaches the threshold re-queues the run, a deny fails it - each under
 * the run's row lock, so one decision moves the run whatever races. A jti is
 * accepted once: SET NX in Redis (cluster shape, {project}:approval:{run}:...)
 * and a unique row in the store (both shapes).
 */
#ifndef AWOOOP_APPROVAL_H
#define AWOOOP_APPROVAL_H

#include <jansson.h>
#include <stdint.h>

#include "awooop/ctx.h"
#include "awooop/keyring.h"
#include "awooop/run.h"
#include "awooop/executor.h"
#include "awooop/store.h"

#define AW_APPROVAL_LEEWAY_S 30
#define AW_APPROVAL_TOKEN_MAX 4096
#define AW_APPROVAL_ISSUER "awooop"

typedef struct {
	char kid[64];
	char iss[128];
	char aud[AW_PROJECT_MAX + 1];
	char sub[AW_PROJECT_MAX + 1];
	char run_id[AW_UUID_STR_LEN + 1];
	char action[8]; /* approve | deny */
	char jti[129];	/* [A-Za-z0-9_-]{16,128} */
	int64_t iat, nbf, exp;
} aw_approval_claims;

/* The JWS layer, pure (fuzzed): splits a compact token, decodes its header
 * and claims (JSON objects, no duplicate names) and pins the algorithm.
 * AW_E_APPROVAL_TOKEN (shape), AW_E_APPROVAL_ALG (alg/crit). */
typedef struct {
	json_t *header, *claims;
	size_t signed_len; /* bytes of "<header>.<claims>" */
	uint8_t sig[32];
} aw_jws;
aw_err aw_jws_parse(const char *tok, size_t len, aw_jws *out, aw_error *err);
void aw_jws_clear(aw_jws *j);
/* 1 when j's signature is the HMAC-SHA256 of its signing input under key. */
int aw_jws_check(const aw_jws *j, const char *tok, const void *key, size_t keylen);

/* Verifies tok for project at now_s (seconds since the epoch): JWS, key,
 * signature, then the claims (every one required; iss must be issuer, aud
 * project). Codes: E-APPROVAL-001..006. */
aw_err aw_approval_verify(const aw_keyring *k, const char *tok, const char *issuer,
			  const char *project, int64_t now_s, aw_approval_claims *out,
			  aw_error *err);
/* Signs c (kid: the ring's current key; jti: a fresh random one when empty)
 * into *tok (malloc'd). AW_E_APPROVAL_KEY without a key. */
aw_err aw_approval_mint(const aw_keyring *k, aw_approval_claims *c, char **tok, aw_error *err);

/* ---- the service ---- */
struct aw_kv;
struct aw_contracts;
typedef struct aw_approvals aw_approvals;
typedef struct {
	aw_store *store;
	const struct aw_contracts *contracts; /* verifies the approval policy */
	struct aw_kv *kv;		      /* cluster shape: jti SET NX; NULL embedded */
	const char *issuer;		      /* default AW_APPROVAL_ISSUER */
} aw_approvals_opts;

/* keys may be NULL (minting and token decisions answer E-APPROVAL-008). */
aw_err aw_approvals_new(const aw_approvals_opts *o, const aw_keyring *keys, aw_approvals **out,
			aw_error *err);
void aw_approvals_free(aw_approvals *a);
/* Swaps the key ring (SIGHUP) and returns the previous one, which the
 * caller frees at exit (a verification in flight may still hold it). */
const aw_keyring *aw_approvals_set_keyring(aw_approvals *a, const aw_keyring *k);

/* Mints a token for ctx's project: sub decides `action` on run_id, valid for
 * ttl_s (1 .. the approval policy's window_s). *tok malloc'd; out may be NULL. */
aw_err aw_approvals_mint(aw_approvals *a, const aw_ctx *ctx, const char *run_id, const char *sub,
			 const char *action, int ttl_s, char **tok, aw_approval_claims *out,
			 aw_error *err);
/* Verifies a token for ctx's project (nothing is consumed). */
aw_err aw_approvals_verify(aw_approvals *a, const aw_ctx *ctx, const char *tok,
			   aw_approval_claims *out, aw_error *err);

/* One decision on the run's waiting step. */
typedef struct {
	const char *run_id;
	const char *principal; /* the approver */
	const char *decision;  /* approve | deny */
	const char *jti;       /* a token's (accepted once), or NULL */
	int64_t lifetime_s;    /* a token's exp - iat (at most the policy window) */
	int64_t exp_s;	       /* a token's exp: how long its jti is remembered */
	const char *via;       /* "api", "telegram" */
} aw_approval_decision;

/* Records d under the run's row lock; the decision that reaches the
 * threshold re-queues the run, a deny fails it (E-RUN-009). *out = {"run_id",
 * "state", "approvals", "threshold", "moved": bool}. */
aw_err aw_approvals_decide(aw_approvals *a, const aw_ctx *ctx, const aw_approval_decision *d,
			   json_t **out, aw_error *err);
/* Verifies tok for ctx's project and run_id, then decides as its sub. */
aw_err aw_approvals_decide_token(aw_approvals *a, const aw_ctx *ctx, const char *run_id,
				 const char *tok, json_t **out, aw_error *err);

/* A step that needs approval (the approval step; a tool step whose tool
 * requires it) parks: *result is the policy's rule (or, in suggest mode, the
 * suggestion with what would run - from this step when self) and
 * *c->outcome is set. */
aw_err aw_approvals_park(aw_approvals *a, const aw_step_call *c, const char *summary, int self,
			 json_t **result, aw_error *err);

/* Registers the "approval" step kind {"summary"?: text}: parks the run with
 * the project's approval policy (suggest mode: ends it `suggested` with what
 * would have run). At start-up. */
int aw_approvals_register_executor(aw_approvals *a);

#endif
