/*
 * store/contract.h - the contract registry: revisions, approvals, active
 * pointers and the ADR-113 outbox rows written with an activation.
 * Part of the store interface (store.h: open, migrate, transactions); only
 * the services of this domain include it. Same conventions as store.h: every
 * call runs in the caller's transaction for its project; arrays returned are
 * malloc'd and freed with the *_free function named here or free().
 */
#ifndef AWOOOP_STORE_CONTRACT_H
#define AWOOOP_STORE_CONTRACT_H

#include "awooop/store.h"

/* ---- contract registry ---- */
typedef struct {
	char revision_id[AW_UUID_STR_LEN + 1];
	char project_id[AW_PROJECT_MAX + 1];
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char state[16]; /* draft|published|active|superseded|revoked */
	char *body;	/* malloc'd JSON text */
	char body_hash[65];
	char signature[65];
	char sign_key_id[AW_PROJECT_MAX + 1];
	char created_at[AW_TS_LEN + 1], created_by[AW_PROJECT_MAX + 1];
	char published_at[AW_TS_LEN + 1], published_by[AW_PROJECT_MAX + 1];
	char updated_at[AW_TS_LEN + 1];
	/* a rollback revision: the earlier revision whose body it restores and
	 * the revision active when it was requested; "" otherwise (and
	 * rollback_from "" when nothing was active) */
	char rollback_of[AW_UUID_STR_LEN + 1];
	char rollback_from[AW_UUID_STR_LEN + 1];
} aw_revision;

typedef struct {
	char event_id[AW_UUID_STR_LEN + 1];
	int64_t seq;
	char event_type[32];
	char project_id[AW_PROJECT_MAX + 1];
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char old_revision_id[AW_UUID_STR_LEN + 1]; /* "" when none */
	char new_revision_id[AW_UUID_STR_LEN + 1];
	char created_at[AW_TS_LEN + 1];
	char delivered_at[AW_TS_LEN + 1];
	int relay_attempts;
} aw_outbox_event;

typedef struct {
	char principal[AW_PROJECT_MAX + 1];
	char approved_at[AW_TS_LEN + 1];
	char expires_at[AW_TS_LEN + 1];
} aw_approval;

void aw_revisions_free(aw_revision *r, int n);
aw_err aw_store_rev_insert(aw_txn *t, const aw_revision *r, aw_error *err);
/* AW_E_CONTRACT_NOT_FOUND unless the revision belongs to this contract. */
aw_err aw_store_rev_get(aw_txn *t, const char *family, const char *contract_id, const char *rev,
			aw_revision *out, aw_error *err);
aw_err aw_store_rev_list(aw_txn *t, const char *family, const char *contract_id, aw_revision **out,
			 int *n, aw_error *err);
/* Compare-and-set: only when the revision is still in state `from`, else
 * AW_E_CONTRACT_STATE. */
aw_err aw_store_rev_set_body(aw_txn *t, const char *rev, const char *body, const char *now,
			     aw_error *err);
aw_err aw_store_rev_transition(aw_txn *t, const char *rev, const char *from, const char *to,
			       const char *now, aw_error *err);
aw_err aw_store_rev_publish(aw_txn *t, const char *rev, const char *body_hash,
			    const char *signature, const char *key_id, const char *by,
			    const char *now, aw_error *err);
/* Serialises writers of one contract until the txn ends (PostgreSQL advisory
 * lock; SQLite's write lock already does). */
aw_err aw_store_contract_lock(aw_txn *t, const char *family, const char *contract_id,
			      aw_error *err);
/* rev_out "" when the contract has no active revision. */
aw_err aw_store_active_get(aw_txn *t, const char *family, const char *contract_id, char *rev_out,
			   aw_error *err);
aw_err aw_store_active_set(aw_txn *t, const char *family, const char *contract_id, const char *rev,
			   const char *by, const char *now, aw_error *err);
aw_err aw_store_active_clear(aw_txn *t, const char *family, const char *contract_id, aw_error *err);
aw_err aw_store_outbox_insert(aw_txn *t, const aw_outbox_event *ev, aw_error *err);
/* Events of one contract in commit (seq) order. */
aw_err aw_store_outbox_list(aw_txn *t, const char *family, const char *contract_id,
			    aw_outbox_event **out, int *n, aw_error *err);
/* The activation history (kept when the outbox rows are pruned). */
typedef struct {
	char revision_id[AW_UUID_STR_LEN + 1];
	char previous_revision_id[AW_UUID_STR_LEN + 1]; /* "" when none */
	char activated_at[AW_TS_LEN + 1];
	char activated_by[AW_PROJECT_MAX + 1];
} aw_activation_row;
aw_err aw_store_activation_add(aw_txn *t, const char *family, const char *contract_id,
			       const aw_activation_row *a, aw_error *err);
/* The last `limit` activations of a contract, newest first. Free with free(). */
aw_err aw_store_activations_recent(aw_txn *t, const char *family, const char *contract_id,
				   int limit, aw_activation_row **out, int *n, aw_error *err);
/* AW_E_CONTRACT_DUP_APPROVAL if the principal approved this revision already. */
aw_err aw_store_approval_insert(aw_txn *t, const char *rev, const aw_approval *a, aw_error *err);
aw_err aw_store_approval_list(aw_txn *t, const char *rev, aw_approval **out, int *n, aw_error *err);

/* All active pointers of the txn's project (one query). */
typedef struct {
	char family[32];
	char contract_id[AW_PROJECT_MAX + 1];
	char revision_id[AW_UUID_STR_LEN + 1];
} aw_active_pointer;
aw_err aw_store_active_list(aw_txn *t, aw_active_pointer **out, int *n, aw_error *err);

#endif
