/*
 * store/keymig.h - phases of the INV-1 Redis key migration.
 * Part of the store interface (store.h: open, migrate, transactions); only
 * the services of this domain include it. Same conventions as store.h: every
 * call runs in the caller's transaction for its project; arrays returned are
 * malloc'd and freed with the *_free function named here or free().
 */
#ifndef AWOOOP_STORE_KEYMIG_H
#define AWOOOP_STORE_KEYMIG_H

#include "awooop/store.h"

/* ---- Redis key migration phases (INV-1) ---- */
/* phase "none" and since "" when the pattern was never migrated. */
aw_err aw_store_keymig_get(aw_txn *t, const char *pattern, char *phase, size_t cap, char *since,
			   aw_error *err);
aw_err aw_store_keymig_set(aw_txn *t, const char *pattern, const char *phase, const char *since,
			   const char *by, aw_error *err);

#endif
