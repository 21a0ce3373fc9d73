/*
 * cli.h - shared pieces of the `awooop` command line: option parsing over
 * flags and AWOOOP_* environment variables, the exit-code convention and the
 * HTTP client used by commands that talk to a running server.
 *
 * Exit codes: 0 success; 1 the operation failed (the server or store said no);
 * 2 usage or configuration error; 3 the server or store could not be reached.
 */
#ifndef AW_CLI_H
#define AW_CLI_H

#include <jansson.h>

#include "awooop/err.h"
#include "awooop/keyring.h"

enum { AW_EXIT_OK = 0, AW_EXIT_FAIL = 1, AW_EXIT_USAGE = 2, AW_EXIT_UNREACHABLE = 3 };

/* One option of a command: --name VALUE (or --name=VALUE), or a switch. */
typedef struct {
	const char *name; /* without dashes */
	const char *env;  /* AWOOOP_* fallback, or NULL */
	const char *def;  /* default, or NULL */
	int is_switch;	  /* takes no value */
	const char *help;
	const char *value; /* filled by cli_parse */
} aw_opt;

/* Parses argv into opts (flags beat environment beat defaults) and collects up
 * to *npos positionals. Prints the error and returns AW_EXIT_USAGE on bad input;
 * returns -1 when --help was asked for (usage already printed). */
int cli_parse(int argc, char **argv, aw_opt *opts, const char **pos, int *npos, const char *usage);
const char *cli_get(const aw_opt *opts, const char *name);
/* Parses value (of the option or variable `what`) as a whole decimal number in
 * lo..hi. 0 on success; else prints "E-CONFIG-001: WHAT must be LO..HI" and
 * returns AW_EXIT_USAGE. An empty or partly numeric value is refused. */
int cli_long(const char *what, const char *value, long lo, long hi, long *out);
/* cli_long on the value of option --name. */
int cli_opt_long(const aw_opt *opts, const char *name, long lo, long hi, long *out);
void cli_usage(const char *usage, const aw_opt *opts);
/* Prints "awooop: E-CODE: message" to stderr and returns the exit code for e. */
int cli_fail(aw_err e, const char *msg);
/* o[k] when it is a string, else "-": what a table prints (never "(null)"). */
const char *cli_str(const json_t *o, const char *k);
/* Prints doc as indented JSON on stdout. */
void cli_print_json(const json_t *doc);

/* The project a client command acts on: the --project option's value (the
 * flag, else AWOOOP_PROJECT), else the key's own project, asked once of the
 * server (GET /v1/whoami). *project is borrowed (static or the option's).
 * 0, or the exit code (said). */
int cli_project(const aw_opt *opts, const char **project);

/* HTTP client against AWOOOP_URL with AWOOOP_KEY. body may be NULL. On a 2xx
 * answer, *out gets the decoded JSON (NULL for 204) and 0 is returned; else the
 * problem is printed and the exit code returned. */
int client_call(const char *method, const char *path, json_t *body, json_t **out);
/* A problem answer handed back instead of said (client_try). */
typedef struct {
	char code[32];	 /* stable code, e.g. E-CONTRACT-002 */
	char text[1024]; /* title and detail, each said once */
	long status;	 /* HTTP status */
} aw_cli_problem;
/* client_call_h, but a problem answer (exit 1) is not printed: it is
 * copied into *problem when problem is not NULL (else printed). Other
 * failures (unreachable, no key) are printed as always. */
int client_try(const char *method, const char *path, json_t *body, const char *const *headers,
	       json_t **out, aw_cli_problem *problem);
/* 1 when a key is configured (client_use_key, AWOOOP_KEY or
 * AWOOOP_KEY_FILE), without reading it. */
int client_has_key(void);
/* Later calls use key instead of AWOOOP_KEY (NULL: AWOOOP_KEY again); key is
 * borrowed until then. */
void client_use_key(const char *key);
/* The same with extra "Name: value" headers (NULL-terminated; a traceparent
 * given here replaces the fresh one). */
int client_call_h(const char *method, const char *path, json_t *body, const char *const *headers,
		  json_t **out);
/* POSTs body and hands the 2xx answer's bytes to on_bytes as they arrive (a
 * stream); a non-2xx answer is printed. 0 or the exit code. */
int client_stream(const char *path, json_t *body, const char *const *headers,
		  int (*on_bytes)(void *ud, const char *p, size_t n), void *ud);

/* The key ring what ("publish": contract publish keys; "approval": approval
 * tokens), in order: AWOOOP_<WHAT>_KEYS, file, and for a SQLite db the file
 * <what>-keys.json beside it (created when create is set). *out stays NULL
 * in the cluster shape without keys (a warning is logged). */
aw_err cli_keyring(const char *what, const char *db, const char *file, int create, aw_keyring **out,
		   aw_error *err);

int cmd_serve(int argc, char **argv);
int cmd_onboard(int argc, char **argv);
int cmd_llm(int argc, char **argv);
int cmd_budget(int argc, char **argv);
int cmd_approval(int argc, char **argv);
int cmd_migrate(int argc, char **argv);
int cmd_project(int argc, char **argv);
int cmd_key(int argc, char **argv);
int cmd_redact(int argc, char **argv);
int cmd_redaction(int argc, char **argv);
/* A custom pattern list from a JSON file: the list itself, or an object
 * with "patterns" (a `redaction get --json`). New reference, or NULL with
 * err set. */
json_t *cli_pattern_file(const char *path, aw_error *err);
int cmd_audit(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_contract(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_keys(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_whoami(int argc, char **argv);

#endif
