/*
 * opts.c - option parsing for every subcommand (see cli.h). Deliberately
 * small: long options only, values from flags, then AWOOOP_* environment (or
 * the file AWOOOP_*_FILE names: every setting may be a secret), then defaults.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/secret.h"
#include "cli.h"

void cli_usage(const char *usage, const aw_opt *opts)
{
	printf("%s\n\nOptions:\n", usage);
	if (opts && opts[0].name) {
		for (const aw_opt *o = opts; o->name; o++) {
			char left[64];
			snprintf(left, sizeof left, "--%s%s", o->name,
				 o->is_switch ? "" : " VALUE");
			printf("  %-24s %s", left, o->help);
			if (o->env)
				printf(" [env %s]", o->env);
			if (o->def)
				printf(" [default %s]", o->def);
			printf("\n");
		}
	}
	printf("  %-24s %s\n", "--help", "show this help");
	printf("\nExit codes: 0 ok, 1 failed, 2 usage or configuration error, 3 unreachable.\n");
}

int cli_parse(int argc, char **argv, aw_opt *opts, const char **pos, int *npos, const char *usage)
{
	int maxpos = *npos;
	*npos = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cli_usage(usage, opts);
			return -1;
		}
		if (strncmp(a, "--", 2) != 0) {
			if (*npos >= maxpos) {
				fprintf(stderr, "awooop: E-CLI-001: unexpected argument '%s'\n", a);
				return AW_EXIT_USAGE;
			}
			pos[(*npos)++] = a;
			continue;
		}
		const char *name = a + 2;
		const char *eq = strchr(name, '=');
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
		aw_opt *o = opts;
		for (; o->name; o++)
			if (strlen(o->name) == nlen && strncmp(o->name, name, nlen) == 0)
				break;
		if (!o->name) {
			fprintf(stderr, "awooop: E-CLI-001: unknown option --%.*s (see --help)\n",
				(int)nlen, name);
			return AW_EXIT_USAGE;
		}
		if (o->is_switch) {
			if (eq) {
				fprintf(stderr, "awooop: E-CLI-001: --%s takes no value\n",
					o->name);
				return AW_EXIT_USAGE;
			}
			o->value = "1";
		} else if (eq) {
			o->value = eq + 1;
		} else if (i + 1 < argc) {
			o->value = argv[++i];
		} else {
			fprintf(stderr, "awooop: E-CLI-001: --%s needs a value\n", o->name);
			return AW_EXIT_USAGE;
		}
	}
	for (aw_opt *o = opts; o->name; o++) {
		aw_error err = {0};
		if (!o->value && o->env && aw_secret_env(o->env, &o->value, &err)) {
			fprintf(stderr, "awooop: %s: %s\n", aw_err_code(err.err), err.msg);
			return AW_EXIT_USAGE;
		}
		if (!o->value)
			o->value = o->def;
	}
	return 0;
}

const char *cli_get(const aw_opt *opts, const char *name)
{
	for (const aw_opt *o = opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o->value;
	return NULL;
}

int cli_long(const char *what, const char *value, long lo, long hi, long *out)
{
	char *end = NULL;
	errno = 0;
	long v = value && *value ? strtol(value, &end, 10) : 0;
	if (!value || !*value || *end || errno || v < lo || v > hi) {
		char msg[160];
		snprintf(msg, sizeof msg, "%s must be a whole number in %ld..%ld", what, lo, hi);
		return cli_fail(AW_E_CONFIG, msg);
	}
	*out = v;
	return 0;
}

int cli_opt_long(const aw_opt *opts, const char *name, long lo, long hi, long *out)
{
	char what[80];
	snprintf(what, sizeof what, "--%s", name);
	return cli_long(what, cli_get(opts, name), lo, hi, out);
}

int cli_fail(aw_err e, const char *msg)
{
	fprintf(stderr, "awooop: %s: %s\n", aw_err_code(e), msg && *msg ? msg : aw_err_title(e));
	switch (e) {
	case AW_E_CONFIG:
	case AW_E_USAGE: return AW_EXIT_USAGE;
	case AW_E_STORE_UNAVAILABLE:
	case AW_E_BUS_UNAVAILABLE:
	case AW_E_CLIENT: return AW_EXIT_UNREACHABLE;
	default: return AW_EXIT_FAIL;
	}
}

const char *cli_str(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "-";
}

void cli_print_json(const json_t *doc)
{
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_ENCODE_ANY);
	puts(s ? s : "null");
	free(s);
}
