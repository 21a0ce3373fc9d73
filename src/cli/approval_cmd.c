/*
 * approval_cmd.c - `awooop approval mint|verify|decide`: approval tokens
 * through a running server (AWOOOP_URL, AWOOOP_KEY). The keys stay on the
 * server. A token is its minter's own decision, signed (for a link or a chat
 * button): mint with the approver's own key; verify with any key of the
 * project; decide with the token (no key needed) or with the approver's own
 * key and --action.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_approval(int argc, char **argv)
{
	aw_opt opts[] = {
		{"run", NULL, NULL, 0, "mint: the run the token decides", NULL},
		{"sub", NULL, NULL, 0,
		 "mint: the approver - the key's own principal (the default; no other)", NULL},
		{"action", NULL, "approve", 0, "mint, decide: approve or deny", NULL},
		{"ttl", NULL, "900", 0,
		 "mint: seconds the token lives (at most the policy's window)", NULL},
		{"json", NULL, NULL, 1, "print the API's JSON", NULL},
		{NULL, NULL, NULL, 0, NULL, NULL},
	};
	const char *pos[3];
	int npos = 3;
	int rc = cli_parse(
		argc, argv, opts, pos, &npos,
		"usage: awooop approval mint --run ID [--action approve|deny] [--ttl SECONDS]\n"
		"       awooop approval verify TOKEN\n"
		"       awooop approval decide RUN_ID TOKEN\n"
		"       awooop approval decide RUN_ID --action approve|deny\n\n"
		"mint: an HS256 token carrying the key's own decision on a run (for a link or\n"
		"a chat button; nobody mints another principal's); prints the token. verify:\n"
		"checks a token's signature, times, issuer and audience without using it up.\n"
		"decide: hands the token to the run waiting for approval, or decides with\n"
		"the key's own principal. Each approver counts once; a key the submitter or\n"
		"another approver minted does not decide; the policy's N of M moves the run.\n\n"
		"Examples:\n"
		"  AWOOOP_KEY=$ALICE awooop approval mint --run 0193a8e2-... --ttl 600\n"
		"  awooop approval decide 0193a8e2-... eyJhbGciOi...\n"
		"  AWOOOP_KEY=$BOB awooop approval decide 0193a8e2-... --action deny");
	if (rc)
		return rc < 0 ? 0 : rc;
	json_t *out = NULL, *body = NULL;
	char path[128];
	const char *what = npos ? pos[0] : "";
	if (!strcmp(what, "mint") && npos == 1) {
		long ttl = 0;
		if (!cli_get(opts, "run"))
			return cli_fail(AW_E_USAGE, "mint needs --run");
		if ((rc = cli_opt_long(opts, "ttl", 1, 2592000, &ttl)))
			return rc;
		body = json_pack("{s:s, s:s, s:i}", "run_id", cli_get(opts, "run"), "action",
				 cli_get(opts, "action"), "ttl_s", (int)ttl);
		if (body && cli_get(opts, "sub"))
			json_object_set_new(body, "sub", json_string(cli_get(opts, "sub")));
		rc = client_call("POST", "/v1/platform/approval-tokens", body, &out);
	} else if (!strcmp(what, "verify") && npos == 2) {
		body = json_pack("{s:s}", "token", pos[1]);
		rc = client_call("POST", "/v1/platform/approval-tokens:verify", body, &out);
	} else if (!strcmp(what, "decide") && (npos == 3 || npos == 2)) {
		body = npos == 3 ? json_pack("{s:s}", "token", pos[2])
				 : json_pack("{s:s}", "decision", cli_get(opts, "action"));
		snprintf(path, sizeof path, "/v1/platform/runs/%.40s/approve", pos[1]);
		rc = client_call("POST", path, body, &out);
	} else {
		return cli_fail(AW_E_USAGE,
				"give mint, verify TOKEN or decide RUN_ID [TOKEN | --action A]");
	}
	json_decref(body);
	if (rc) {
		json_decref(out);
		return rc;
	}
	if (cli_get(opts, "json") || strcmp(what, "mint")) {
		char *s = json_dumps(out, JSON_INDENT(2));
		printf("%s\n", s ? s : "null");
		free(s);
	} else {
		printf("%s\n", cli_str(out, "token"));
	}
	json_decref(out);
	return 0;
}
