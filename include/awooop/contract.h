/*
 * contract.h - the contract registry: six families of versioned policy
 * documents, strictly validated, signed on publish, activated only with enough
 * approvals, and switched atomically with an ADR-113 outbox event.
 *
 * Lifecycle (the one transition table is in contract.c):
 *   draft -> published -> active -> superseded (another revision activates)
 *                \-> revoked   \-> revoked (the pointer is removed: workers fail
 *                                           closed until a revision activates)
 * Every change is audited in the transaction that makes it.
 *
 * Ownership: aw_revision bodies from these calls are freed with
 * aw_revision_clear(); patches and JSON are new references.
 */
#ifndef AWOOOP_CONTRACT_H
#define AWOOOP_CONTRACT_H

#include <jansson.h>

#include "awooop/keyring.h"
#include "awooop/store/contract.h"

typedef struct aw_contracts aw_contracts;

#define AW_APPROVAL_CONTRACT "default" /* contract id of a project's approval policy */
#define AW_TOPOLOGY_CONTRACT "ollama_topology"
/* platform_resource: the named LLM upstreams (docs/guide/llm-gateway.md) */
#define AW_UPSTREAMS_CONTRACT "llm_upstreams"

/* Compiles the family schemas. The keyring is borrowed (may be NULL: publish
 * then answers AW_E_CONTRACT_NO_KEY). */
aw_err aw_contracts_new(const aw_keyring *kr, aw_contracts **out, aw_error *err);
/* Replaces the keyring (a reload); returns the one before, which a sign or
 * verify in flight may still use: free it only when nothing runs. */
const aw_keyring *aw_contracts_set_keyring(aw_contracts *c, const aw_keyring *kr);
void aw_contracts_free(aw_contracts *c);
int aw_contract_family_ok(const char *family);
/* The checks every call naming a contract makes first: E-CONTRACT-004 an
 * unknown family, E-CONTRACT-009 a malformed id or a platform-only family. */
aw_err aw_contract_target_ok(const aw_ctx *ctx, const char *family, const char *contract_id,
			     aw_error *err);
void aw_revision_clear(aw_revision *r);

/* Schema and semantic checks; err->where is the JSON pointer of the problem. */
aw_err aw_contract_validate(const aw_contracts *c, const char *project, const char *family,
			    const char *contract_id, const json_t *body, aw_error *err);

aw_err aw_contract_create(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
			  const char *contract_id, const json_t *body, aw_revision *out,
			  aw_error *err);
aw_err aw_contract_update(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
			  const char *contract_id, const char *rev, const json_t *body,
			  aw_revision *out, aw_error *err);
aw_err aw_contract_get(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
		       const char *contract_id, const char *rev, aw_revision *out, aw_error *err);
aw_err aw_contract_list(aw_store *s, const aw_ctx *ctx, const char *family, const char *contract_id,
			aw_revision **out, int *n, aw_error *err);
aw_err aw_contract_publish(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			   const char *family, const char *contract_id, const char *rev,
			   aw_revision *out, aw_error *err);

typedef struct {
	int activated; /* 1: the pointer now names the revision */
	int suggested; /* 1: suggest mode, below threshold: recorded, nothing changed */
	int approvals; /* valid approvals counted */
	int threshold;
	char old_revision_id[AW_UUID_STR_LEN + 1];
	char event_id[AW_UUID_STR_LEN + 1];
} aw_activation;

aw_err aw_contract_activate(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			    const char *family, const char *contract_id, const char *rev,
			    aw_activation *out, aw_error *err);

/* fn is called, on the committing thread, after a transaction that changed an
 * active pointer (an activation, a revocation of the active revision) and so
 * wrote an outbox row: the relay above registers its wake-up here
 * (aw_outbox_kick) to deliver at once instead of at its next poll. One per
 * process; NULL: none. */
void aw_contract_on_change(void (*fn)(void));

/* Records the caller's approval of a published revision. When the revision is
 * a rollback and this approval completes its quorum, the revision is activated
 * at once, in a transaction of its own with every check of
 * aw_contract_activate (the approval stands whatever that answers). */
aw_err aw_contract_approve(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			   const char *family, const char *contract_id, const char *rev,
			   aw_approval *out, aw_error *err);
typedef struct {
	int rollback;	       /* 1: the revision is a rollback */
	int approvals, needed; /* rollback: valid approvals now, and what it needs */
	aw_activation act;     /* act.activated: this approval activated it */
	aw_error act_err;      /* act_err.err != AW_OK: the activation ran and refused */
} aw_approve_result;
/* aw_contract_approve, saying what the approval set off (res may be NULL). */
aw_err aw_contract_approve_ex(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			      const char *family, const char *contract_id, const char *rev,
			      aw_approval *out, aw_approve_result *res, aw_error *err);

/* Rollback in one step: a new revision of the contract whose body is the
 * body of `to` (NULL or "": the revision active before the current
 * activation), created and published by the caller in one transaction and
 * audited as contract.draft, contract.publish and contract.rollback. It is
 * activated like any revision - by aw_contract_activate, or by the approval
 * that completes its quorum - with the approval policy's rollback_threshold in
 * place of threshold (not for family approval), only while the active
 * revision is still the one it rolls back from (E-CONTRACT-014) and only
 * while its body hash equals the target's. `to` must be a superseded revision
 * of this contract (E-CONTRACT-002 another contract's or tenant's,
 * E-CONTRACT-012 any other state, or no earlier revision) whose body passes
 * today's validation (E-CONTRACT-013, err->where the member) and verifies
 * (E-CONTRACT-SIG). out->revision's body is freed with aw_revision_clear. */
typedef struct {
	aw_revision revision; /* the rollback revision, published */
	int needed;	      /* valid approvals its activation needs today */
} aw_rollback;
aw_err aw_contract_rollback(const aw_contracts *c, aw_store *s, const aw_ctx *ctx,
			    const char *family, const char *contract_id, const char *to,
			    aw_rollback *out, aw_error *err);
aw_err aw_contract_revoke(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
			  const char *contract_id, const char *rev, aw_error *err);
/* The active revision, its body hash and signature verified (AW_E_CONTRACT_SIG
 * and an audit record when they do not match). AW_E_CONTRACT_NOT_FOUND when
 * the contract has no active revision. */
aw_err aw_contract_active(const aw_contracts *c, aw_store *s, const aw_ctx *ctx, const char *family,
			  const char *contract_id, aw_revision *out, aw_error *err);
/* 0 when r's stored body hashes to its body_hash and its signature verifies. */
int aw_contract_verify(const aw_contracts *c, const aw_revision *r);
/* The project's active approval policy (contract "default" of family
 * approval), verified, or the platform default: any principal, 1 of them,
 * 86400 s, enforce. p->approvers (NULL: any) is the caller's to decref. */
typedef struct {
	json_t *approvers;
	int threshold, window_s, suggest;
	int rollback_threshold; /* 0: not stated (a rollback needs threshold) */
} aw_approval_policy;
/* The valid approvals revision r needs under policy p: rollback_threshold for
 * a rollback revision of any family but approval, else threshold. */
int aw_contract_quorum(const aw_approval_policy *p, const aw_revision *r);
aw_err aw_contract_approval_policy(const aw_contracts *c, aw_txn *t, aw_approval_policy *p,
				   aw_error *err);
/* 1 when principal is in approvers (a policy's list; anything but an array:
 * any principal may approve). */
int aw_contract_approver(const json_t *approvers, const char *principal);
/* RFC 6902 JSON Patch turning revision a's body into b's. */
aw_err aw_contract_diff(aw_store *s, const aw_ctx *ctx, const char *family, const char *contract_id,
			const char *a, const char *b, json_t **patch, aw_error *err);
aw_err aw_json_patch_diff(const json_t *from, const json_t *to, json_t **out, aw_error *err);

/* mcp_tool: a tool's federated name (tool__provider, or tool when suffix is
 * 0); -1 when it is longer than AW_MCP_NAME_MAX (what OpenAI function calling
 * accepts) or cap. */
#define AW_MCP_NAME_MAX 64
int aw_mcp_tool_name(const char *tool, const char *provider, int suffix, char *out, size_t cap);
/* The semantic checks of an mcp_tool body that passed its schema. */
aw_err aw_contract_mcp_check(const json_t *body, aw_error *err);

#endif
