/*
 * keymig.h - the INV-1 key migration's phase engine, a service: the phase of
 * a project's key pattern and the audited step to the next phase behind its
 * gates. The keys adapter (kv.h) applies the phases to every Redis access and
 * keeps the counters the gates read; the phases live in the store.
 *
 * Gates: A->B once A has run its window (default 30 days); B->C once B has
 * run its window (14 days) with a fallback rate below 1% of reads; C->done
 * once C has run its window (7 days) with zero old-key reads. force skips a
 * gate, and the audit record says so.
 */
#ifndef AWOOOP_KEYMIG_H
#define AWOOOP_KEYMIG_H

#include "awooop/kv.h"

/* The phase of pattern in ctx->project (a platform pattern: __platform__'s)
 * with, when kv is not NULL, this process's counters of its last window;
 * without Redis (kv NULL) the phase from the store alone. */
aw_err aw_keymig_status(aw_store *s, aw_kv *kv, const aw_ctx *ctx, const char *pattern,
			aw_kv_status *st, aw_error *err);

/* Moves one step (none->A->B->C->done), audited as keys.migrate; to must be
 * the next phase (AW_E_KEYS_PHASE). AW_E_KEYS_GATE with the counters in
 * err->msg when a gate is not met and force is 0. st gets the counters that
 * decided. */
aw_err aw_keymig_step(aw_store *s, aw_kv *kv, const aw_ctx *ctx, const char *pattern,
		      const char *to, int force, aw_kv_status *st, aw_error *err);

#endif
