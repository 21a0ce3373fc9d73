/*
 * stdio_sandbox.h - what an operator lets tenants' stdio MCP upstreams run
 * (the allow-list of --mcp-stdio-allow: whole argvs, the environment
 * variables a tenant may set, the paths the child may see) and the box each
 * child runs in (user, mount, pid, IPC, UTS and - unless the project is
 * granted the network - network namespaces; limits; no new privileges).
 */
#ifndef AW_STDIO_SANDBOX_H
#define AW_STDIO_SANDBOX_H

#include <jansson.h>
#include <sys/types.h>

#include "awooop/err.h"

typedef struct aw_sbx_policy aw_sbx_policy;

/* o->spec: NULL or "" (nothing allowed); "@FILE" or text starting with '[' (a
 * JSON array of {"argv": [...], "env": [names], "paths": [absolute paths]});
 * or the short form: entries separated by ';' or newlines, each an argv
 * separated by spaces. In both, "*" as an argv's last element allows any
 * further arguments (none or more); argv[0] is an absolute path; every
 * absolute path among an entry's literal arguments, and every one of its
 * "paths", is shown to the child read-only. An env name that is a loader or
 * interpreter variable (sbx_env_denied) is refused here, even listed.
 * o->network: projects (','-separated, or "*") whose children share the
 * host's network; NULL: none. *out: freed with sbx_policy_free. */
typedef struct {
	const char *spec, *network;
	long uid;	  /* the children's uid and gid outside their user namespaces
			      when the gateway runs as root; < 0: 65534 (nobody) */
	long pids, cpu_s; /* RLIMIT_NPROC in a child's namespace (default 128),
			      RLIMIT_CPU (default 3600 s) */
} aw_sbx_opts;
aw_err sbx_policy_parse(const aw_sbx_opts *o, aw_sbx_policy **out, aw_error *err);
void sbx_policy_free(aw_sbx_policy *p);
/* 1 when a tenant may never set the variable name (LD_*, NODE_*, PYTHON*,
 * PERL*, RUBY*, PATH, ...), whatever the operator lists. */
int sbx_env_denied(const char *name);
/* AW_OK when the stdio upstream conf's command matches an entry of p and
 * every name of its env is one that entry lists (*entry: its index); else
 * AW_E_MCP_STDIO saying what is not allowed. */
aw_err sbx_check(const aw_sbx_policy *p, const char *provider, const json_t *conf, int *entry,
		 aw_error *err);
int sbx_network(const aw_sbx_policy *p, const char *project);

/* What one child gets, made in the parent before fork (sbx_plan_make;
 * sbx_plan_clear frees it). */
typedef struct {
	char **show;  /* NULL-ended absolute paths shown read-only (owned) */
	int optional; /* show[optional..]: the project's secret directory, shown
			 only when the sandbox uid can walk to it */
	int network;
	uid_t uid; /* the child's uid and gid outside its user namespace */
	gid_t gid;
	long pids, cpu_s, data_mb; /* RLIMIT_NPROC (inside its namespace),
				      RLIMIT_CPU, RLIMIT_DATA (0: none) */
} aw_sbx_plan;

/* secret_dir: the project's secret directory (shown read-only when it
 * exists; may be NULL); data_mb: RLIMIT_DATA (0: none). */
aw_err sbx_plan_make(const aw_sbx_policy *p, int entry, const char *project, const char *secret_dir,
		     long data_mb, aw_sbx_plan *plan, aw_error *err);
void sbx_plan_clear(aw_sbx_plan *plan);

/* In the forked child, with stdin/stdout/stderr in place and fd 3 the write
 * end of the report pipe (every other fd closed): builds the box and execs
 * argv with envp in it. Never returns; a stage that fails writes
 * {stage, errno} to fd 3 and exits 126. Async-signal-safe calls only. */
_Noreturn void sbx_exec(const aw_sbx_plan *plan, char *const *argv, char *const *envp);
/* In the parent: reads the report pipe (its read end) until the program
 * was executed (EOF: AW_OK) or a stage failed (AW_E_MCP_SANDBOX naming the
 * stage and the error), at most timeout_ms. */
aw_err sbx_ready(int fd, int timeout_ms, const char *provider, aw_error *err);
/* Writes text to the file at path (a kernel's control file: uid_map, a
 * cgroup's memory.max, ...): 0, or -1 with errno. Async-signal-safe. */
int mcp_write_text(const char *path, const char *text);
/* 1 when this kernel lets this process build the box (a child tries it);
 * else 0 with why. */
int sbx_probe(char *why, size_t n);

#endif
