/*
 * publish_keys.c - where the CLI's commands find the contract publish keys:
 * the same rule for `serve` (which signs and creates the embedded default)
 * and `watch` (which only verifies).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awooop/log.h"
#include "cli.h"

/*
 * Publish keys, in order: AWOOOP_PUBLISH_KEYS (inline), --publish-keys FILE (or
 * AWOOOP_PUBLISH_KEYS_FILE: the keys from a file, as for every secret), and
 * for the embedded SQLite shape a key file next to the database, created on
 * first start (when create is set). The cluster shape must be given keys (every api process signs
 * and verifies with the same ring); without them publishing answers
 * E-CONTRACT-010 and nothing is signed with a key that only one process has.
 */
aw_err aw_cli_publish_keys(const char *db, const char *file, int create, aw_keyring **out,
			   aw_error *err)
{
	const char *inline_keys = getenv("AWOOOP_PUBLISH_KEYS");
	*out = NULL;
	if (inline_keys && *inline_keys)
		return aw_keyring_from_env(inline_keys, out, err);
	if (file)
		return aw_keyring_from_file(file, out, err);
	if (strncmp(db, "sqlite:", 7) != 0) {
		aw_log(AW_LOG_WARN, NULL,
		       "no contract publish keys: set AWOOOP_PUBLISH_KEYS or"
		       " --publish-keys; publishing is disabled",
		       NULL);
		return AW_OK;
	}
	char path[1024];
	snprintf(path, sizeof path, "%s", db + 7);
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
		 "publish-keys.json");
	if (create && access(path, F_OK) != 0) {
		aw_err e = aw_keyring_create_file(path, err);
		if (e)
			return e;
		aw_log(AW_LOG_INFO, NULL, "created contract publish key file", "path", path, NULL);
	}
	return aw_keyring_from_file(path, out, err);
}
