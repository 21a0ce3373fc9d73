/*
 * stdio_sandbox.c - the operator's allow-list for stdio MCP upstreams and the
 * box every such child runs in.
 *
 * The allow-list names whole argvs (a trailing "*" allows further arguments)
 * and, per entry, the environment variables a tenant's contract may set and
 * the paths the child may see. Loader and interpreter variables are refused
 * even when listed. A contract is checked against it at publish (before any
 * child starts) and again before each start.
 *
 * A child is three processes: the gateway's fork ("outer": drops to the
 * sandbox uid when the gateway is root, unshares user, mount, pid, IPC, UTS
 * and - without a grant - network namespaces, maps uid/gid 1000 inside to
 * itself, sets the limits, waits), its child, pid 1 of the new pid namespace
 * (builds a read-only tmpfs root of /usr, the lib links, a few /etc files,
 * /dev nodes, a fresh /proc, a private /tmp, the entry's paths and the
 * project's secret directory; pivots into it; drops every capability and
 * its dumpability; reaps), and the program (no new privileges, nice 10).
 * pid 1 dies with outer (PDEATHSIG), and the kernel kills what is left in
 * the namespace with it. Stages report failures on fd 3; the exec closes it.
 */
#include "stdio_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/buf.h"
#include "awooop/str.h"

#define MAX_ENTRIES 256
#define MAX_SHOW 64
#define INSIDE_ID 1000

typedef struct {
	char **argv; /* NULL-ended; "*" last: more allowed */
	int argc, more;
	char **env;  /* NULL-ended names */
	char **show; /* NULL-ended absolute paths */
} entry;

struct aw_sbx_policy {
	entry *e;
	int n;
	char *network; /* ",a,b," or "*" */
	uid_t uid;
	gid_t gid;
	long pids, cpu_s;
};

/* ------------------------------------------------------------ environment */

int sbx_env_denied(const char *name)
{
	static const char *const prefix[] = {
		"LD_",	   "NODE_",    "NPM_",	    "PYTHON", "PERL",	"RUBY",	    "GEM_",
		"BUNDLE_", "JAVA_",    "_JAVA_",    "JDK_",   "LUA_",	"PHP",	    "DENO_",
		"BUN_",	   "GCONV",    "MALLOC_",   "GLIBC_", "DYLD_",	"OPENSSL_", "BASH_",
		"GIT_",	   "ASAN_",    "UBSAN_",    "TSAN_",  "LSAN_",	"GODEBUG",  "GOFLAGS",
		"DOTNET_", "CORECLR_", "COMPlus_",  "R_",     "JULIA_", "ERL_",	    "ELIXIR_",
		"TCL",	   "GUILE_",   "CLASSPATH", "PERL5",  "LC_",	"GCONV_",   NULL};
	static const char *const exact[] = {
		"PATH",	       "ENV",		"SHELLOPTS",	   "PS4",
		"IFS",	       "CDPATH",	"HOSTALIASES",	   "RES_OPTIONS",
		"LOCALDOMAIN", "LOCPATH",	"NLSPATH",	   "TMPDIR",
		"TZDIR",       "SSL_CERT_FILE", "SSL_CERT_DIR",	   "CURL_CA_BUNDLE",
		"ZDOTDIR",     "HOME",		"LANGUAGE",	   "EDITOR",
		"PAGER",       "BROWSER",	"XDG_CONFIG_HOME", "XDG_DATA_HOME",
		NULL};
	for (int i = 0; prefix[i]; i++)
		if (!strncasecmp(name, prefix[i], strlen(prefix[i])))
			return 1;
	for (int i = 0; exact[i]; i++)
		if (!strcasecmp(name, exact[i]))
			return 1;
	return 0;
}

/* ------------------------------------------------------------ the allow-list */

static void strv_free(char **v)
{
	for (int i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void entry_clear(entry *e)
{
	strv_free(e->argv);
	strv_free(e->env);
	strv_free(e->show);
}

void sbx_policy_free(aw_sbx_policy *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++)
		entry_clear(&p->e[i]);
	free(p->e);
	free(p->network);
	free(p);
}

static int strv_add(char ***v, int *n, const char *s)
{
	char **nv = aw_realloc(*v, (size_t)(*n + 2) * sizeof *nv);
	if (!nv)
		return -1;
	*v = nv;
	if (!(nv[*n] = aw_strdup(s)))
		return -1;
	nv[++*n] = NULL;
	return 0;
}

/* Checks and completes an entry: argv[0] absolute, "*" only last, absolute
 * literal arguments and paths shown, env names well-formed and allowed. */
static aw_err entry_finish(entry *e, int at, aw_error *err)
{
	if (!e->argv || !e->argv[0] || e->argv[0][0] != '/')
		return aw_fail(err, AW_E_CONFIG,
			       "--mcp-stdio-allow entry %d: argv[0] must be an absolute program "
			       "path",
			       at + 1);
	int nshow = 0;
	for (char **s = e->show; s && *s; s++) {
		if ((*s)[0] != '/' || strstr(*s, "/../") || strstr(*s, "/./"))
			return aw_fail(err, AW_E_CONFIG,
				       "--mcp-stdio-allow entry %d: path %s is not absolute and "
				       "plain",
				       at + 1, *s);
		nshow++;
	}
	for (int i = 0; e->argv[i]; i++) {
		e->argc = i + 1;
		if (!strcmp(e->argv[i], "*")) {
			if (e->argv[i + 1])
				return aw_fail(err, AW_E_CONFIG,
					       "--mcp-stdio-allow entry %d: \"*\" may only be the "
					       "last element",
					       at + 1);
			e->more = 1;
			e->argc = i;
			free(e->argv[i]);
			e->argv[i] = NULL;
			break;
		}
		if (e->argv[i][0] == '/' && !strstr(e->argv[i], "/../") &&
		    strv_add(&e->show, &nshow, e->argv[i]))
			return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	if (nshow > MAX_SHOW - 16)
		return aw_fail(err, AW_E_CONFIG, "--mcp-stdio-allow entry %d: more than %d paths",
			       at + 1, MAX_SHOW - 16);
	for (char **s = e->env; s && *s; s++) {
		const char *c = *s;
		int ok = (*c == '_' || (*c | 32) >= 'a') && (*c | 32) <= 'z';
		for (; ok && *c; c++)
			ok = *c == '_' || (*c >= '0' && *c <= '9') ||
			     ((*c | 32) >= 'a' && (*c | 32) <= 'z');
		if (!ok)
			return aw_fail(err, AW_E_CONFIG,
				       "--mcp-stdio-allow entry %d: %s is not a variable name",
				       at + 1, *s);
		if (sbx_env_denied(*s))
			return aw_fail(err, AW_E_CONFIG,
				       "--mcp-stdio-allow entry %d: a tenant may never set %s "
				       "(a loader or interpreter variable)",
				       at + 1, *s);
	}
	return AW_OK;
}

static aw_err parse_json(aw_sbx_policy *p, json_t *j, aw_error *err)
{
	if (!json_is_array(j))
		return aw_fail(err, AW_E_CONFIG, "--mcp-stdio-allow: a JSON array of entries");
	size_t i;
	json_t *v;
	json_array_foreach (j, i, v) {
		if (p->n == MAX_ENTRIES)
			return aw_fail(err, AW_E_CONFIG, "--mcp-stdio-allow: over %d entries",
				       MAX_ENTRIES);
		entry *e = &p->e[p->n++];
		const char *keys[] = {"argv", "env", "paths"};
		char ***into[] = {&e->argv, &e->env, &e->show};
		const char *k;
		json_t *m;
		json_object_foreach (v, k, m) {
			int which = -1;
			for (int w = 0; w < 3; w++)
				if (!strcmp(k, keys[w]))
					which = w;
			if (which < 0 || !json_is_array(m))
				return aw_fail(
					err, AW_E_CONFIG,
					"--mcp-stdio-allow entry %zu: unknown member %s (argv, "
					"env, paths: arrays of strings)",
					i + 1, k);
			size_t x;
			json_t *s;
			int n = 0;
			json_array_foreach (m, x, s) {
				if (!json_is_string(s))
					return aw_fail(err, AW_E_CONFIG,
						       "--mcp-stdio-allow entry %zu: %s holds a "
						       "non-string",
						       i + 1, k);
				if (strv_add(into[which], &n, json_string_value(s)))
					return aw_fail(err, AW_E_NOMEM, "out of memory");
			}
		}
		aw_err e2 = entry_finish(e, (int)i, err);
		if (e2)
			return e2;
	}
	return AW_OK;
}

static aw_err parse_short(aw_sbx_policy *p, const char *spec, aw_error *err)
{
	char *copy = aw_strdup(spec);
	if (!copy)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	aw_err e = AW_OK;
	char *sv = NULL;
	for (char *t = strtok_r(copy, ";\n", &sv); t && !e; t = strtok_r(NULL, ";\n", &sv)) {
		char *sv2 = NULL;
		entry one = {0};
		int n = 0;
		for (char *a = strtok_r(t, " \t", &sv2); a; a = strtok_r(NULL, " \t", &sv2))
			if (strv_add(&one.argv, &n, a)) {
				e = aw_fail(err, AW_E_NOMEM, "out of memory");
				break;
			}
		if (!n) {
			entry_clear(&one);
			continue;
		}
		if (p->n == MAX_ENTRIES) {
			entry_clear(&one);
			e = aw_fail(err, AW_E_CONFIG, "--mcp-stdio-allow: over %d entries",
				    MAX_ENTRIES);
			break;
		}
		p->e[p->n++] = one;
		if (!e)
			e = entry_finish(&p->e[p->n - 1], p->n - 1, err);
	}
	free(copy);
	return e;
}

aw_err sbx_policy_parse(const aw_sbx_opts *o, aw_sbx_policy **out, aw_error *err)
{
	aw_sbx_policy *p = aw_calloc(1, sizeof *p);
	if (!p || !(p->e = aw_calloc(MAX_ENTRIES, sizeof *p->e))) {
		free(p);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	p->uid = o->uid >= 0 ? (uid_t)o->uid : 65534;
	p->gid = o->uid >= 0 ? (gid_t)o->uid : 65534;
	p->pids = o->pids > 0 ? o->pids : 128;
	p->cpu_s = o->cpu_s > 0 ? o->cpu_s : 3600;
	aw_err e = AW_OK;
	const char *spec = o->spec ? o->spec : "";
	while (*spec == ' ' || *spec == '\n' || *spec == '\t')
		spec++;
	if (spec[0] == '@' || spec[0] == '[') {
		json_error_t je;
		json_t *j = spec[0] == '@' ? json_load_file(spec + 1, JSON_REJECT_DUPLICATES, &je)
					   : json_loads(spec, JSON_REJECT_DUPLICATES, &je);
		e = j ? parse_json(p, j, err)
		      : aw_fail(err, AW_E_CONFIG, "--mcp-stdio-allow: %s (line %d)", je.text,
				je.line);
		json_decref(j);
	} else if (spec[0]) {
		e = parse_short(p, spec, err);
	}
	if (!e && o->network && o->network[0]) {
		size_t n = strlen(o->network) + 3;
		if ((p->network = aw_malloc(n)))
			snprintf(p->network, n, "%s%s%s", strcmp(o->network, "*") ? "," : "",
				 o->network, strcmp(o->network, "*") ? "," : "");
		else
			e = aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	if (e) {
		sbx_policy_free(p);
		return e;
	}
	*out = p;
	return AW_OK;
}

int sbx_network(const aw_sbx_policy *p, const char *project)
{
	if (!p || !p->network)
		return 0;
	if (!strcmp(p->network, "*"))
		return 1;
	char key[80];
	snprintf(key, sizeof key, ",%s,", project);
	return strstr(p->network, key) != NULL;
}

static int argv_match(const entry *e, const json_t *cmd)
{
	size_t n = json_array_size(cmd);
	if (n < (size_t)e->argc || (!e->more && n != (size_t)e->argc))
		return 0;
	for (int i = 0; i < e->argc; i++) {
		const char *a = json_string_value(json_array_get(cmd, (size_t)i));
		if (!a || strcmp(a, e->argv[i]))
			return 0;
	}
	return 1;
}

static int env_listed(const entry *e, const char *name)
{
	for (char **s = e->env; s && *s; s++)
		if (!strcmp(*s, name))
			return 1;
	return 0;
}

aw_err sbx_check(const aw_sbx_policy *p, const char *provider, const json_t *conf, int *entry_at,
		 aw_error *err)
{
	const json_t *cmd = json_object_get(conf, "command"), *env = json_object_get(conf, "env");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)env, k, v)
		if (sbx_env_denied(k))
			return aw_fail(err, AW_E_MCP_STDIO,
				       "stdio upstream %s: a tenant may never set %s (a loader or "
				       "interpreter variable)",
				       provider, k);
	const char *missing = NULL;
	for (int i = 0; p && i < p->n; i++) {
		if (!argv_match(&p->e[i], cmd))
			continue;
		missing = NULL;
		json_object_foreach ((json_t *)env, k, v)
			if (!missing && !env_listed(&p->e[i], k))
				missing = k;
		if (!missing) {
			*entry_at = i;
			return AW_OK;
		}
	}
	if (missing)
		return aw_fail(err, AW_E_MCP_STDIO,
			       "stdio upstream %s: the operator's --mcp-stdio-allow entry for this "
			       "command does not let a tenant set %s",
			       provider, missing);
	return aw_fail(err, AW_E_MCP_STDIO,
		       "stdio upstream %s: this gateway does not allow its command (program and "
		       "arguments must match an --mcp-stdio-allow entry)",
		       provider);
}

/* ------------------------------------------------------------ the plan */

aw_err sbx_plan_make(const aw_sbx_policy *p, int at, const char *project, const char *secret_dir,
		     long data_mb, aw_sbx_plan *plan, aw_error *err)
{
	memset(plan, 0, sizeof *plan);
	int n = 0;
	for (char **s = p->e[at].show; s && *s; s++)
		if (strv_add(&plan->show, &n, *s))
			goto oom;
	plan->optional = n; /* from here: shown when the sandbox uid reaches it */
	if (secret_dir && strv_add(&plan->show, &n, secret_dir))
		goto oom;
	if (!plan->show && !(plan->show = aw_calloc(1, sizeof *plan->show)))
		goto oom;
	plan->network = sbx_network(p, project);
	uid_t me = geteuid();
	plan->uid = me == 0 ? p->uid : me;
	plan->gid = me == 0 ? p->gid : getegid();
	plan->pids = p->pids;
	plan->cpu_s = p->cpu_s;
	plan->data_mb = data_mb;
	return AW_OK;
oom:
	sbx_plan_clear(plan);
	return aw_fail(err, AW_E_NOMEM, "out of memory");
}

void sbx_plan_clear(aw_sbx_plan *plan)
{
	strv_free(plan->show);
	plan->show = NULL;
}

/* ------------------------------------------------------------ the child */

enum {
	ST_UID = 1,
	ST_UNSHARE,
	ST_MAP,
	ST_FORK,
	ST_ROOT,
	ST_SHOW,
	ST_PIVOT,
	ST_CAPS,
	ST_EXEC,
	ST_LIMIT
};
static const char *const stage_name[] = {"?",
					 "dropping to the sandbox uid",
					 "creating namespaces",
					 "mapping ids",
					 "forking",
					 "building its root",
					 "showing a path",
					 "pivoting into its root",
					 "dropping capabilities",
					 "executing the program",
					 "setting limits"};

typedef struct {
	int stage, en;
} report;

static _Noreturn void fail(int stage)
{
	report r = {stage, errno};
	ssize_t w = write(3, &r, sizeof r);
	(void)w;
	_exit(126);
}

static size_t slen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* dst = a + b, at most cap bytes with the NUL; -1 when it does not fit. */
static int cat2(char *dst, size_t cap, const char *a, const char *b)
{
	size_t na = slen(a), nb = slen(b);
	if (na + nb + 1 > cap)
		return -1;
	memcpy(dst, a, na);
	memcpy(dst + na, b, nb + 1);
	return 0;
}

static int put_num(char *p, unsigned long v)
{
	char t[24];
	int n = 0, k = 0;
	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		p[k++] = t[--n];
	return k;
}

int mcp_write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, slen(text));
	close(fd);
	return n == (ssize_t)slen(text) ? 0 : -1;
}

/* mkdir -p of path (absolute), each directory 0755. */
static int mkdirs(const char *path)
{
	char b[4096];
	size_t n = slen(path);
	if (n >= sizeof b)
		return -1;
	memcpy(b, path, n + 1);
	for (size_t i = 1; i <= n; i++)
		if (b[i] == '/' || b[i] == 0) {
			char c = b[i];
			b[i] = 0;
			if (mkdir(b, 0755) && errno != EEXIST)
				return -1;
			b[i] = c;
		}
	return 0;
}

#define NEWROOT "/tmp"

/* Binds what fd holds at NEWROOT + at; read-only (and nodev) unless dev. */
static int show_fd(int fd, const char *at, int dev)
{
	char dst[4200], src[64] = "/proc/self/fd/";
	struct stat st;
	if (fstat(fd, &st) || cat2(dst, sizeof dst, NEWROOT, at))
		return -1;
	src[14 + put_num(src + 14, (unsigned long)fd)] = 0;
	struct stat there;
	if (lstat(dst, &there) == 0)
		return 0; /* visible already, beneath a path shown before (/usr) */
	if (S_ISDIR(st.st_mode)) {
		if (mkdirs(dst))
			return -1;
	} else {
		char parent[4200];
		memcpy(parent, dst, slen(dst) + 1);
		char *slash = strrchr(parent, '/');
		if (slash)
			*slash = 0;
		if (mkdirs(parent))
			return -1;
		int f = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (f < 0)
			return -1;
		close(f);
	}
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL))
		return -1;
	if (dev)
		return 0;
	struct statvfs sv;
	if (statvfs(dst, &sv))
		return -1;
	unsigned long keep = sv.f_flag & (ST_NOEXEC | ST_NOATIME | ST_NODIRATIME | ST_RELATIME);
	return mount(NULL, dst, NULL,
		     MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | keep, NULL);
}

static const char *const sys_links[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
static const char *const sys_show[] = {"/usr",
				       "/etc/ld.so.cache",
				       "/etc/ld.so.conf",
				       "/etc/ld.so.conf.d",
				       "/etc/alternatives",
				       "/etc/ssl",
				       "/etc/ca-certificates",
				       "/etc/localtime",
				       "/etc/nsswitch.conf",
				       "/etc/hosts",
				       "/etc/resolv.conf",
				       "/etc/mime.types"};
static const char *const dev_show[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
				       "/dev/urandom"};
#define NSYS (sizeof sys_show / sizeof *sys_show)
#define NDEV (sizeof dev_show / sizeof *dev_show)

typedef struct {
	int fds[MAX_SHOW + NSYS + NDEV];
	const char *where[MAX_SHOW + NSYS + NDEV];
	int isdev[MAX_SHOW + NSYS + NDEV];
	int n;
} sources;

/* Every path to show, opened (O_PATH) in the child's mount namespace (a
 * bind's source must be of it) before NEWROOT is covered (a source may be
 * beneath it). Opened as the sandbox uid: a path it cannot walk to (a 0700
 * home on the way) fails the start. */
static void open_sources(const aw_sbx_plan *plan, sources *src)
{
	int *fds = src->fds, *isdev = src->isdev, n = 0;
	const char **where = src->where;
	for (size_t i = 0; i < NSYS; i++)
		if ((fds[n] = open(sys_show[i], O_PATH | O_CLOEXEC)) >= 0)
			where[n] = sys_show[i], isdev[n++] = 0;
	for (size_t i = 0; i < NDEV; i++)
		if ((fds[n] = open(dev_show[i], O_PATH | O_CLOEXEC)) >= 0)
			where[n] = dev_show[i], isdev[n++] = 1;
	for (int i = 0; plan->show[i] && i < MAX_SHOW; i++) {
		if ((fds[n] = open(plan->show[i], O_PATH | O_CLOEXEC)) >= 0)
			where[n] = plan->show[i], isdev[n++] = 0;
		else if (errno != ENOENT && i < plan->optional)
			fail(ST_SHOW);
	}
	src->n = n;
}

/* pid 1's work: the root, then the program as its child, reaped. */
static _Noreturn void init_main(const aw_sbx_plan *plan, char *const *argv, char *const *envp)
{
	static sources src;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		fail(ST_ROOT);
	open_sources(plan, &src);
	int *fds = src.fds, *isdev = src.isdev, n = src.n;
	const char **where = src.where;
	if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"))
		fail(ST_ROOT);
	if (mkdir(NEWROOT "/tmp", 01777) ||
	    mount("tmpfs", NEWROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") ||
	    mkdir(NEWROOT "/proc", 0555) || mkdir(NEWROOT "/dev", 0755) ||
	    mkdir(NEWROOT "/etc", 0755))
		fail(ST_ROOT);
	/* a fresh /proc of the new pid namespace, while the old one is still
	 * visible (the kernel asks that); where the kernel refuses, none */
	if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		rmdir(NEWROOT "/proc");
	for (size_t i = 0; i < sizeof sys_links / sizeof *sys_links; i++) {
		char target[256], dst[300];
		ssize_t tl = readlink(sys_links[i], target, sizeof target - 1);
		if (tl <= 0)
			continue; /* a real directory or none: /usr covers merged systems */
		target[tl] = 0;
		if (cat2(dst, sizeof dst, NEWROOT, sys_links[i]) || symlink(target, dst))
			fail(ST_ROOT);
	}
	int bad = -1;
	for (int i = 0; i < n && bad < 0; i++)
		if (show_fd(fds[i], where[i], isdev[i]))
			bad = i;
	if (bad >= 0)
		fail(ST_SHOW);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	const char *const links[][2] = {{"/proc/self/fd", NEWROOT "/dev/fd"},
					{"/proc/self/fd/0", NEWROOT "/dev/stdin"},
					{"/proc/self/fd/1", NEWROOT "/dev/stdout"},
					{"/proc/self/fd/2", NEWROOT "/dev/stderr"}};
	for (size_t i = 0; i < 4; i++)
		if (symlink(links[i][0], links[i][1]))
			fail(ST_ROOT);
	int f = open(NEWROOT "/etc/passwd", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (f >= 0) {
		const char pw[] = "mcp:x:1000:1000:stdio MCP upstream:/tmp:/usr/sbin/nologin\n";
		ssize_t w = write(f, pw, sizeof pw - 1);
		(void)w;
		close(f);
	}
	if ((f = open(NEWROOT "/etc/group", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) >= 0) {
		const char gr[] = "mcp:x:1000:\n";
		ssize_t w = write(f, gr, sizeof gr - 1);
		(void)w;
		close(f);
	}
	if (mount(NULL, NEWROOT, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL))
		fail(ST_ROOT);
	if (chdir(NEWROOT) || syscall(SYS_pivot_root, ".", ".") || umount2(".", MNT_DETACH) ||
	    chdir("/"))
		fail(ST_PIVOT);
	sethostname("mcp", 3);
	/* nothing of the namespace's capabilities is left to take over */
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	for (int c = 0; c <= 63; c++)
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_capset, &h, d))
		fail(ST_CAPS);
	prctl(PR_SET_DUMPABLE, 0);
	pid_t prog = fork();
	if (prog < 0)
		fail(ST_FORK);
	if (prog == 0) {
		prctl(PR_SET_DUMPABLE, 1); /* its own /proc/self is its own */
		if (setpriority(PRIO_PROCESS, 0, 10)) {
			/* best effort */
		}
		execve(argv[0], argv, envp);
		fail(ST_EXEC);
	}
	close(3);
	for (;;) {
		int st;
		pid_t w = wait(&st);
		if (w == prog)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		if (w < 0 && errno == ECHILD)
			_exit(125);
	}
}

_Noreturn void sbx_exec(const aw_sbx_plan *plan, char *const *argv, char *const *envp)
{
	if (fcntl(3, F_SETFD, FD_CLOEXEC))
		_exit(126);
	if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(plan->gid, plan->gid, plan->gid) ||
			       setresuid(plan->uid, plan->uid, plan->uid)))
		fail(ST_UID);
	int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
		    (plan->network ? 0 : CLONE_NEWNET);
	if (unshare(flags))
		fail(ST_UNSHARE);
	/* /proc/self is its own only while dumpable (the uid changed, and the
	 * gateway is not): for the three writes, then never again */
	prctl(PR_SET_DUMPABLE, 1);
	char map[64];
	int k = put_num(map, INSIDE_ID);
	map[k++] = ' ';
	k += put_num(map + k, plan->uid);
	memcpy(map + k, " 1\n", 4);
	if (mcp_write_text("/proc/self/uid_map", map) ||
	    mcp_write_text("/proc/self/setgroups", "deny") != 0)
		fail(ST_MAP);
	k = put_num(map, INSIDE_ID);
	map[k++] = ' ';
	k += put_num(map + k, plan->gid);
	memcpy(map + k, " 1\n", 4);
	if (mcp_write_text("/proc/self/gid_map", map))
		fail(ST_MAP);
	prctl(PR_SET_DUMPABLE, 0);
	/* counted in this user namespace: one child's fork bomb stops at its
	 * own bound, whatever its siblings do */
	struct rlimit nproc = {(rlim_t)plan->pids, (rlim_t)plan->pids};
	struct rlimit cpu = {(rlim_t)plan->cpu_s, (rlim_t)plan->cpu_s + 5};
	struct rlimit data = {(rlim_t)plan->data_mb << 20, (rlim_t)plan->data_mb << 20};
	if (setrlimit(RLIMIT_NPROC, &nproc) || setrlimit(RLIMIT_CPU, &cpu) ||
	    (plan->data_mb > 0 && setrlimit(RLIMIT_DATA, &data)))
		fail(ST_LIMIT);
	pid_t one = fork();
	if (one < 0)
		fail(ST_FORK);
	if (one == 0)
		init_main(plan, argv, envp);
	close(3);
	prctl(PR_SET_DUMPABLE, 0);
	for (;;) {
		int st;
		pid_t w = waitpid(one, &st, 0);
		if (w == one)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		if (w < 0 && errno != EINTR)
			_exit(125);
	}
}

/* ------------------------------------------------------------ the parent */

aw_err sbx_ready(int fd, int timeout_ms, const char *provider, aw_error *err)
{
	report r;
	size_t got = 0;
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	while (got < sizeof r) {
		int pr = poll(&pf, 1, timeout_ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return aw_fail(err, AW_E_MCP_SANDBOX,
				       "the sandbox of stdio upstream %s was not ready in %d ms",
				       provider, timeout_ms);
		ssize_t n = read(fd, (char *)&r + got, sizeof r - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got == 0)
		return AW_OK; /* the exec closed it */
	if (got < sizeof r || r.stage <= 0 ||
	    r.stage >= (int)(sizeof stage_name / sizeof *stage_name))
		return aw_fail(err, AW_E_MCP_SANDBOX,
			       "the sandbox of stdio upstream %s failed to start", provider);
	if (r.stage == ST_EXEC)
		return aw_fail(err, AW_E_MCP_UPSTREAM,
			       "cannot execute the program of stdio upstream %s in its sandbox: %s",
			       provider, strerror(r.en));
	return aw_fail(err, AW_E_MCP_SANDBOX,
		       "cannot set up the sandbox of stdio upstream %s: %s: %s (it does not run "
		       "unsandboxed)",
		       provider, stage_name[r.stage], strerror(r.en));
}

int sbx_probe(char *why, size_t n)
{
	int rp[2];
	if (pipe2(rp, O_CLOEXEC))
		return snprintf(why, n, "pipe: %s", strerror(errno)), 0;
	aw_sbx_plan plan = {0};
	char *none[1] = {NULL};
	plan.show = none;
	plan.uid = geteuid() == 0 ? 65534 : geteuid();
	plan.gid = geteuid() == 0 ? 65534 : getegid();
	plan.pids = 16;
	plan.cpu_s = 10;
	char *argv[] = {"/bin/true", NULL}, *envp[] = {NULL};
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
		}
		dup2(rp[1], 3);
		syscall(SYS_close_range, 4, ~0U, 0);
		sbx_exec(&plan, argv, envp);
	}
	close(rp[1]);
	aw_error err = {0};
	aw_err e = pid < 0 ? aw_fail(&err, AW_E_MCP_SANDBOX, "fork: %s", strerror(errno))
			   : sbx_ready(rp[0], 5000, "probe", &err);
	close(rp[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (e)
		aw_str_show(why, n, err.msg); /* words for people */
	return e == AW_OK;
}
