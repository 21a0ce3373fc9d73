/*
 * publish_keys.c - where the CLI's commands find a key ring: the contract
 * publish keys (`serve` signs and creates the embedded default, `watch` only
 * verifies) and the approval-token keys (`serve` and `awooop approval`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awooop/log.h"
#include "awooop/str.h"
#include "cli.h"

/*
 * A ring "what" (publish, approval), in order: AWOOOP_<WHAT>_KEYS (inline),
 * the file given (--<what>-keys FILE or AWOOOP_<WHAT>_KEYS_FILE: keys from a
 * file, as for every secret), and for the embedded SQLite shape a key file
 * "<what>-keys.json" next to the database, created on first start (when
 * create is set). The cluster shape must be given keys (every process signs
 * and verifies with the same ring); without them the ring is empty (*out
 * NULL): publishing answers E-CONTRACT-010, minting E-APPROVAL-008, and
 * nothing is signed with a key that only one process has.
 */
aw_err cli_keyring(const char *what, const char *db, const char *file, int create, aw_keyring **out,
		   aw_error *err)
{
	char env[64];
	snprintf(env, sizeof env, "AWOOOP_%s_KEYS",
		 strcmp(what, "publish") ? "APPROVAL" : "PUBLISH");
	const char *inline_keys = getenv(env);
	*out = NULL;
	if (inline_keys && *inline_keys)
		return aw_keyring_from_env(inline_keys, out, err);
	if (file)
		return aw_keyring_from_file(file, out, err);
	if (strncmp(db, "sqlite:", 7) != 0) {
		aw_log(AW_LOG_WARN, NULL, "no key ring configured", "ring", what, "set", env, NULL);
		return AW_OK;
	}
	/* WHAT-keys.json beside the database file: whole, or refused */
	char path[1024];
	const char *dbfile = db + 7, *slash = strrchr(dbfile, '/');
	int dirlen = slash ? (int)(slash + 1 - dbfile) : 0;
	if ((size_t)snprintf(path, sizeof path, "%.*s%s-keys.json", dirlen, dbfile, what) >=
	    sizeof path)
		return aw_fail(err, AW_E_CONFIG, "the database path is too long for a key file");
	if (create && access(path, F_OK) != 0) {
		aw_err e = aw_keyring_create_file(path, err);
		if (e)
			return e;
		aw_log(AW_LOG_INFO, NULL, "created key file", "ring", what, "path", path, NULL);
	}
	return aw_keyring_from_file(path, out, err);
}
