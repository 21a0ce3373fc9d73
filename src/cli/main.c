/*
 * main.c - the `awooop` binary: dispatches to a subcommand. Each subcommand
 * parses its own options and answers --help.
 */
#include <curl/curl.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef AWOOOP_VERSION
#define AWOOOP_VERSION "0.1.0"
#endif

static void usage(void)
{
	printf("awooop %s - multi-tenant control plane for AI agent operations\n\n"
	       "usage: awooop COMMAND [options]\n\n"
	       "Commands:\n"
	       "  serve      run the control plane (embedded SQLite by default)\n"
	       "  migrate    apply schema migrations (PostgreSQL: as the owner)\n"
	       "  onboard    create a tenant in one step from a file (project, keys, contracts)\n"
	       "  project    create or list projects (tenants)\n"
	       "  key        create, list, revoke or generate API keys\n"
	       "  whoami     the key's project, scope and principal\n"
	       "  contract   apply, draft, publish, approve, activate, roll back, diff contracts\n"
	       "  run        submit, get, list, cancel and diff runs; queues\n"
	       "  schedule   start runs on a cron schedule: create, list, get, delete, preview\n"
	       "  llm        one model call through the LLM gateway (--stream)\n"
	       "  budget     a project's token budget: status, history, suspend, resume\n"
	       "  approval   approval tokens: mint, verify, decide a waiting run\n"
	       "  keys       Redis key registry, inventory and the legacy key migration\n"
	       "  watch      follow a contract's active revision like a worker (ADR-113)\n"
	       "  audit      verify or export a project's audit trail (the API or the store)\n"
	       "  redact     redact PII and secrets from stdin (--json for documents)\n"
	       "  redaction  a project's custom redaction patterns: get, set, clear\n"
	       "  schema     validate a JSON document against a JSON Schema\n"
	       "  version    print the version\n\n"
	       "Run `awooop COMMAND --help` for a command's options and examples.\n"
	       "Client commands use AWOOOP_URL (default http://127.0.0.1:8080) and AWOOOP_KEY\n"
	       "(or AWOOOP_KEY_FILE); --project defaults to AWOOOP_PROJECT, else the key's own.\n\n"
	       "Example:\n"
	       "  AWOOOP_KEY=awk_... awooop contract apply --family policy_routing --file p.json\n\n"
	       "Exit codes: 0 ok, 1 failed, 2 usage or configuration error, 3 unreachable.\n",
	       AWOOOP_VERSION);
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage();
		return argc < 2 ? AW_EXIT_USAGE : 0;
	}
	const char *cmd = argv[1];
	int rc;
	/* No fastbins (the per-thread caches still serve small blocks): a
	 * worker's round frees thousands of small JSON nodes, then asks for a
	 * round record's tens of kB, and glibc consolidated the fastbins at each
	 * such request - 15 % of a worker's CPU (burn-down, 39-40 -> 33-34 us of
	 * worker CPU a run, side by side). */
	mallopt(M_MXFAST, 0);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (strcmp(cmd, "serve") == 0)
		rc = cmd_serve(argc - 2, argv + 2);
	else if (strcmp(cmd, "migrate") == 0)
		rc = cmd_migrate(argc - 2, argv + 2);
	else if (strcmp(cmd, "onboard") == 0)
		rc = cmd_onboard(argc - 2, argv + 2);
	else if (strcmp(cmd, "project") == 0)
		rc = cmd_project(argc - 2, argv + 2);
	else if (strcmp(cmd, "key") == 0)
		rc = cmd_key(argc - 2, argv + 2);
	else if (strcmp(cmd, "whoami") == 0)
		rc = cmd_whoami(argc - 2, argv + 2);
	else if (strcmp(cmd, "audit") == 0)
		rc = cmd_audit(argc - 2, argv + 2);
	else if (strcmp(cmd, "run") == 0)
		rc = cmd_run(argc - 2, argv + 2);
	else if (strcmp(cmd, "schedule") == 0)
		rc = cmd_schedule(argc - 2, argv + 2);
	else if (strcmp(cmd, "keys") == 0)
		rc = cmd_keys(argc - 2, argv + 2);
	else if (strcmp(cmd, "watch") == 0)
		rc = cmd_watch(argc - 2, argv + 2);
	else if (strcmp(cmd, "contract") == 0)
		rc = cmd_contract(argc - 2, argv + 2);
	else if (strcmp(cmd, "schema") == 0)
		rc = cmd_schema(argc - 2, argv + 2);
	else if (strcmp(cmd, "budget") == 0)
		rc = cmd_budget(argc - 2, argv + 2);
	else if (strcmp(cmd, "approval") == 0)
		rc = cmd_approval(argc - 2, argv + 2);
	else if (strcmp(cmd, "llm") == 0)
		rc = cmd_llm(argc - 2, argv + 2);
	else if (strcmp(cmd, "redact") == 0)
		rc = cmd_redact(argc - 2, argv + 2);
	else if (strcmp(cmd, "redaction") == 0)
		rc = cmd_redaction(argc - 2, argv + 2);
	else if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("awooop %s\n", AWOOOP_VERSION);
		rc = 0;
	} else {
		fprintf(stderr, "awooop: E-CLI-001: unknown command '%s' (see awooop --help)\n",
			cmd);
		rc = AW_EXIT_USAGE;
	}
	curl_global_cleanup();
	return rc;
}
