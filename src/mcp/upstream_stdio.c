/*
 * upstream_stdio.c - an upstream as a child process in a sandbox of its own
 * (stdio_sandbox.c): its argv and env names must match an entry of the
 * operator's allow-list; its environment holds only the contract's env
 * (secrets resolved at start) and PATH; JSON-RPC lines on stdin/stdout, many
 * requests in flight matched by id by a reader thread; a child that exits
 * fails what it held and is restarted at the next request, with backoff. Its
 * own process group, stopped with SIGTERM then SIGKILL; with --mcp-cgroup,
 * a memory cgroup of its own. Its stderr goes to the log, scrubbed and
 * rate-limited.
 */
#include "upstream_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/json.h"
#include "awooop/log.h"
#include "awooop/mcp_wire.h"
#include "awooop/metrics.h"
#include "awooop/secret.h"

static void fail_waiting(mcp_up *u) /* holds mu */
{
	for (pending *p = u->waiting; p; p = p->next) {
		p->done = 1;
		pthread_cond_signal(&p->cv);
	}
}

/* n bytes to fd, across short writes; -1 when it cannot take them. */
static int write_all(int fd, const char *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, p + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Writes one message to the child as a line (holds mu; the child alive). */
static void write_msg(mcp_up *u, const json_t *m)
{
	char *line = aw_json_dumps(m, JSON_COMPACT);
	if (line) {
		size_t n = strlen(line);
		line[n] = '\n'; /* over the NUL: written with its length */
		write_all(u->in_fd, line, n + 1);
	}
	free(line);
}

/* Which request in flight a message of the child's (a request or a
 * notification) is for (holds mu): progress by its token; anything else
 * only when one request with a peer is in flight - a stdio upstream says
 * nothing else to tell them apart. NULL: none. */
static pending *route(mcp_up *u, const json_t *m)
{
	const char *method = json_string_value(json_object_get(m, "method"));
	if (!strcmp(method, "notifications/progress")) {
		const char *t = json_string_value(
			json_object_get(json_object_get(m, "params"), "progressToken"));
		for (pending *p = u->waiting; t && p; p = p->next)
			if (p->token && !strcmp(p->token, t) && !p->done)
				return p;
		return NULL;
	}
	pending *one = NULL;
	int n = 0;
	for (pending *p = u->waiting; p; p = p->next)
		if (p->peer && !p->done && (p->peer->request || p->peer->notify))
			n++, one = p;
	return n == 1 ? one : NULL;
}

typedef struct {
	mcp_up *u;
	int fd, err_fd, gen;
} reader_arg;

/* A child's stderr, line by line, into the log: at most STDERR_LINE bytes a
 * line (the rest cut), its own resolved secrets scrubbed and then the
 * redaction engine (aw_log), bytes outside printable ASCII shown as '?', and
 * at most STDERR_PER_S lines a second (the lines dropped are counted in the
 * next one logged). */
#define STDERR_LINE 1024
#define STDERR_PER_S 20
typedef struct {
	char line[STDERR_LINE + 1];
	size_t len;
	int cut, tokens;
	int64_t refill_ns;
	long dropped;
} stderr_log;

static void stderr_emit(mcp_up *u, stderr_log *el)
{
	int64_t now = aw_clock_mono_ns();
	if (now - el->refill_ns >= 1000000000LL) {
		el->tokens = STDERR_PER_S;
		el->refill_ns = now;
	}
	if (el->tokens == 0) {
		el->dropped++;
		el->len = 0;
		el->cut = 0;
		return;
	}
	el->tokens--;
	aw_buf b = AW_BUF_INIT(STDERR_LINE + 1);
	for (size_t i = 0; i < el->len; i++) {
		unsigned char c = (unsigned char)el->line[i];
		aw_buf_add(&b, c >= 0x20 && c < 0x7f ? (const char *)&el->line[i] : "?", 1);
	}
	pthread_mutex_lock(&u->mu);
	mcp_scrub(&b, u->secrets, u->nsecrets);
	pthread_mutex_unlock(&u->mu);
	char dropped[24] = "";
	if (el->dropped)
		snprintf(dropped, sizeof dropped, "%ld", el->dropped);
	aw_log(AW_LOG_INFO, NULL, "mcp stdio upstream stderr", "project", u->project, "provider",
	       u->provider, "line", aw_buf_str(&b), "cut", el->cut ? "true" : NULL,
	       "dropped_before", el->dropped ? dropped : NULL, NULL);
	aw_secret_wipe(&b);
	el->dropped = 0;
	el->len = 0;
	el->cut = 0;
}

static void stderr_take(mcp_up *u, stderr_log *el, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			stderr_emit(u, el);
		} else if (el->len < STDERR_LINE) {
			el->line[el->len++] = p[i];
		} else {
			el->cut = 1;
		}
	}
}

static void *reader_main(void *arg)
{
	reader_arg ra = *(reader_arg *)arg;
	free(arg);
	mcp_up *u = ra.u;
	pthread_setname_np(pthread_self(), "aw-mcp-stdio");
	aw_buf line = AW_BUF_INIT(AW_MCP_MAX_RESPONSE);
	char buf[65536];
	int over = 0;
	stderr_log el = {.tokens = STDERR_PER_S, .refill_ns = aw_clock_mono_ns()};
	struct pollfd pf[2] = {{.fd = ra.fd, .events = POLLIN},
			       {.fd = ra.err_fd, .events = POLLIN}};
	int nfds = ra.err_fd >= 0 ? 2 : 1;
	for (;;) {
		if (poll(pf, (nfds_t)nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (nfds == 2 && pf[1].revents) {
			ssize_t en = read(ra.err_fd, buf, sizeof buf);
			if (en > 0)
				stderr_take(u, &el, buf, (size_t)en);
			else if (en == 0 || errno != EINTR)
				nfds = 1; /* its stderr closed: stdout alone from here */
		}
		if (!pf[0].revents)
			continue;
		ssize_t n = read(ra.fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			char *nl = memchr(buf + i, '\n', (size_t)(n - i));
			size_t take = nl ? (size_t)(nl - (buf + i)) : (size_t)(n - i);
			if (!over && aw_buf_add(&line, buf + i, take))
				over = 1;
			i += (ssize_t)take;
			if (!nl)
				break;
			if (over) { /* a line over the limit: the protocol is broken */
				aw_log(AW_LOG_WARN, NULL,
				       "mcp stdio upstream sent an oversized line", "project",
				       u->project, "provider", u->provider, NULL);
				goto out;
			}
			pthread_mutex_lock(&u->mu);
			mcp_scrub(&line, u->secrets, u->nsecrets);
			json_t *m = aw_json_loadb(aw_buf_str(&line), line.len, 0, NULL);
			mcp_scrub_json(m, u->secrets, u->nsecrets); /* escaped forms too */
			pthread_mutex_unlock(&u->mu);
			aw_buf_truncate(&line, 0);
			const char *method = json_string_value(json_object_get(m, "method"));
			json_t *id = json_object_get(m, "id");
			if (method && !strcmp(method, "notifications/tools/list_changed"))
				atomic_store(&u->list_changed, 1); /* and an event, below */
			if (mcp_is_event(method) && !id) {
				if (u->event)
					u->event(u->event_ud, u->project, m);
			} else if (method) {
				pthread_mutex_lock(&u->mu);
				pending *to = u->gen == ra.gen ? route(u, m) : NULL;
				if (to) { /* its waiter handles it */
					if (!to->inbox)
						to->inbox = json_array();
					json_array_append_new(to->inbox, m); /* handed over */
					m = NULL;
					pthread_cond_signal(&to->cv);
				} else if (id && u->alive && u->gen == ra.gen) {
					json_t *r = aw_rpc_error_json(
						id, AW_RPC_METHOD,
						"the gateway cannot tell which of its clients this "
						"request is for",
						NULL);
					write_msg(u, r);
					json_decref(r);
				}
				pthread_mutex_unlock(&u->mu);
			} else if (json_is_integer(id)) {
				pthread_mutex_lock(&u->mu);
				for (pending *p = u->waiting; p; p = p->next)
					if (p->id == json_integer_value(id) && !p->done) {
						p->msg = m; /* handed over, not shared */
						m = NULL;
						p->done = 1;
						pthread_cond_signal(&p->cv);
						break;
					}
				pthread_mutex_unlock(&u->mu);
			}
			json_decref(m);
		}
	}
out:
	aw_buf_free(&line);
	if (el.len)
		stderr_emit(u, &el);
	if (ra.err_fd >= 0)
		close(ra.err_fd);
	pthread_mutex_lock(&u->mu);
	if (u->gen == ra.gen) { /* else a stop already moved on */
		u->alive = 0;
		fail_waiting(u);
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

/* ------------------------------------------------------------ memory cgroup */

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return mcp_write_text(path, text);
}

/* A cgroup of its own for the next child (holds mu): u->cgroup, limited to
 * memory_mb - memory.max (cgroup v2) or memory.limit_in_bytes (v1) - with
 * swap kept out where the hierarchy allows. */
static aw_err cgroup_make(mcp_up *u, aw_error *err)
{
	static atomic_long seq;
	snprintf(u->cgroup, sizeof u->cgroup, "%s/awooop-mcp-%d-%ld", u->cgroup_dir, (int)getpid(),
		 atomic_fetch_add(&seq, 1));
	char limit[32];
	snprintf(limit, sizeof limit, "%lld", (long long)u->memory_mb << 20);
	if (mkdir(u->cgroup, 0700) == 0 &&
	    (write_file(u->cgroup, "memory.max", u->memory_mb < 0 ? "max" : limit) == 0 ||
	     write_file(u->cgroup, "memory.limit_in_bytes", u->memory_mb < 0 ? "-1" : limit) ==
		     0)) {
		/* cgroup v2 with the pids controller: its processes too */
		char pids[24];
		snprintf(pids, sizeof pids, "%ld", u->pids_max);
		write_file(u->cgroup, "pids.max", pids);
		if (write_file(u->cgroup, "memory.swap.max", "0")) /* v1: memsw >= limit */
			write_file(u->cgroup, "memory.memsw.limit_in_bytes", limit);
		return AW_OK;
	}
	int en = errno;
	rmdir(u->cgroup);
	u->cgroup[0] = 0;
	return aw_fail(err, AW_E_MCP_UPSTREAM,
		       "cannot give upstream %s its memory limit under %s: %s "
		       "(--mcp-cgroup must be a writable memory cgroup)",
		       u->provider, u->cgroup_dir, strerror(en));
}

/* How many times the kernel killed the child of cgroup over its limit. */
static long cgroup_ooms(const char *cgroup)
{
	char path[4200], line[128];
	long n = 0;
	const char *files[] = {"memory.events", "memory.oom_control"}; /* v2, v1 */
	for (int i = 0; i < 2 && !n; i++) {
		snprintf(path, sizeof path, "%s/%s", cgroup, files[i]);
		FILE *f = fopen(path, "re");
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "oom_kill ", 9))
				n = strtol(line + 9, NULL, 10);
		if (f)
			fclose(f);
	}
	return n;
}

/* Removes a reaped child's cgroup (its path, taken from the upstream when
 * the child was stopped: a new child may have its own by then). */
static void cgroup_drop(const mcp_up *u, const char *cgroup)
{
	if (!cgroup[0])
		return;
	if (cgroup_ooms(cgroup) > 0)
		aw_log(AW_LOG_WARN, NULL,
		       "mcp stdio upstream killed by the kernel: over its memory limit", "project",
		       u->project, "provider", u->provider, NULL);
	/* the child is reaped: empty, so it can go (v1 may take a moment) */
	for (int i = 0; i < 50 && rmdir(cgroup) != 0 && errno == EBUSY; i++) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
}

/* Stops the child (holds mu; releases it while waiting: the upstream is
 * free for a new child at once, the old one is reaped meanwhile). */
void mcp_stdio_stop(mcp_up *u)
{
	if (!u->pid)
		return;
	pid_t pid = u->pid;
	int out_fd = u->out_fd, reader_live = u->reader_live;
	pthread_t reader = u->reader;
	char cgroup[sizeof u->cgroup];
	memcpy(cgroup, u->cgroup, sizeof cgroup);
	u->cgroup[0] = 0;
	u->pid = 0;
	u->alive = 0;
	u->reader_live = 0;
	u->gen++;
	close(u->in_fd);
	for (int i = 0; i < u->nsecrets; i++)
		mcp_wipe_str(u->secrets[i]);
	u->nsecrets = 0;
	fail_waiting(u);
	kill(-pid, SIGTERM);
	pthread_mutex_unlock(&u->mu);
	int status;
	int64_t until = aw_clock_mono_ns() + 1000000000LL;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (aw_clock_mono_ns() > until) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	if (reader_live)
		pthread_join(reader, NULL);
	close(out_fd);
	cgroup_drop(u, cgroup);
	pthread_mutex_lock(&u->mu);
}

/* Starts the child (holds mu). */
static aw_err stdio_start(mcp_up *u, aw_error *err)
{
	json_t *cmd = json_object_get(u->config, "command");
	int entry = -1;
	aw_err ce = sbx_check(u->sbx, u->provider, u->config, &entry, err);
	if (ce)
		return ce;
	char secret_dir[4200] = "";
	if (u->secrets_dir)
		snprintf(secret_dir, sizeof secret_dir, "%s/%s", u->secrets_dir, u->project);
	aw_sbx_plan plan;
	ce = sbx_plan_make(u->sbx, entry, u->project, u->secrets_dir ? secret_dir : NULL,
			   u->cgroup_dir || u->memory_mb < 0 ? 0 : u->memory_mb, &plan, err);
	if (ce)
		return ce;
	size_t argc = json_array_size(cmd);
	char **argv = aw_calloc(argc + 1, sizeof *argv);
	char **envp =
		aw_calloc(json_object_size(json_object_get(u->config, "env")) + 3, sizeof *envp);
	aw_err e = AW_OK;
	int nenv = 0;
	for (size_t i = 0; argv && i < argc; i++)
		argv[i] = (char *)json_string_value(json_array_get(cmd, i));
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(u->config, "env"), k, v) {
		if (!envp)
			break;
		aw_buf b = AW_BUF_INIT(70000);
		aw_buf_addf(&b, "%s=", k);
		size_t at = b.len;
		if (json_is_string(v)) {
			aw_buf_adds(&b, json_string_value(v));
		} else {
			/* the prefix, then the secret (the secret alone is
			 * scrubbed from what the child answers) */
			aw_buf_adds(&b, json_string_value(json_object_get(v, "prefix")) ?: "");
			at = b.len;
			if ((e = aw_secret_tenant_resolve(
				     u->project, u->secrets_dir,
				     json_string_value(json_object_get(v, "secret")), &b, err))) {
				aw_secret_wipe(&b);
				e = mcp_rewrap(err, AW_E_MCP_UPSTREAM);
				break;
			}
			if (u->nsecrets < MAX_SECRETS)
				u->secrets[u->nsecrets++] = aw_strndup(b.p + at, b.len - at);
		}
		envp[nenv++] = aw_strndup(b.p, b.len);
		aw_secret_wipe(&b);
	}
	if (!e && envp) /* sbx_check refused a tenant's PATH */
		envp[nenv++] = aw_strdup("PATH=/usr/local/bin:/usr/bin:/bin");
	int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, go[2] = {-1, -1},
	    rep[2] = {-1, -1};
	if (!e && (!argv || !envp))
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	if (!e && (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
		   pipe2(go, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)))
		e = aw_fail(err, AW_E_MCP_UPSTREAM, "cannot start upstream %s: %s", u->provider,
			    strerror(errno));
	if (!e && u->cgroup_dir)
		e = cgroup_make(u, err);
	pid_t pid = -1;
	if (!e) {
		pid = fork();
		if (pid == 0) { /* the child: async-signal-safe calls only */
			char ok;
			close(go[1]); /* wait until the parent has put it in its cgroup */
			if (read(go[0], &ok, 1) != 1)
				_exit(125);
			setpgid(0, 0);
			dup2(in[0], 0);
			dup2(out[1], 1);
			dup2(errp[1], 2);
			dup2(rep[1], 3); /* the sandbox's report */
			syscall(SYS_close_range, 4, ~0U, 0);
			/* no core dump (its environment holds its credentials), a
			 * bound on open files and on the size of a file it writes */
			struct rlimit none = {0, 0}, lim;
			setrlimit(RLIMIT_CORE, &none);
			const struct {
				int res;
				rlim_t max;
			} caps[] = {{RLIMIT_NOFILE, 1024}, {RLIMIT_FSIZE, (rlim_t)1 << 30}};
			for (int i = 0; i < 2; i++) /* the hard limit lowered, never raised */
				if (getrlimit(caps[i].res, &lim) == 0) {
					if (lim.rlim_max > caps[i].max)
						lim.rlim_max = caps[i].max;
					lim.rlim_cur = lim.rlim_max;
					setrlimit(caps[i].res, &lim);
				}
			sbx_exec(&plan, argv, envp);
		}
		if (pid < 0)
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "cannot start upstream %s: %s",
				    u->provider, strerror(errno));
		char pidtext[24];
		snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
		if (!e && u->cgroup[0] && write_file(u->cgroup, "cgroup.procs", pidtext)) {
			e = aw_fail(err, AW_E_MCP_UPSTREAM,
				    "cannot put upstream %s in its memory cgroup: %s", u->provider,
				    strerror(errno));
			kill(pid, SIGKILL); /* it never ran: it waits for the go */
			waitpid(pid, NULL, 0);
		}
		if (!e && write(go[1], "g", 1) != 1)
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "cannot start upstream %s",
				    u->provider);
		if (rep[1] >= 0)
			close(rep[1]);
		rep[1] = -1;
		/* the box is built (or failed) before the program runs */
		if (!e && (e = sbx_ready(rep[0], 10000, u->provider, err))) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	sbx_plan_clear(&plan);
	for (int i = 0; i < 2; i++)
		if (rep[i] >= 0)
			close(rep[i]);
	for (int i = 0; i < 2; i++)
		if (go[i] >= 0)
			close(go[i]);
	for (int i = 0; envp && i < nenv; i++)
		mcp_wipe_str(envp[i]);
	free(envp);
	free(argv);
	if (in[0] >= 0)
		close(in[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (errp[1] >= 0)
		close(errp[1]);
	if (e) {
		if (u->cgroup[0])
			rmdir(u->cgroup);
		u->cgroup[0] = 0;
		if (in[1] >= 0)
			close(in[1]);
		if (out[0] >= 0)
			close(out[0]);
		if (errp[0] >= 0)
			close(errp[0]);
		for (int i = 0; i < u->nsecrets; i++)
			mcp_wipe_str(u->secrets[i]);
		u->nsecrets = 0;
		return e;
	}
	setpgid(pid, pid);
	u->pid = pid;
	u->in_fd = in[1];
	u->out_fd = out[0];
	u->alive = 1;
	u->initialized = 0;
	u->started_ns = aw_clock_mono_ns();
	reader_arg *ra = aw_malloc(sizeof *ra);
	if (ra)
		*ra = (reader_arg){u, u->out_fd, errp[0], u->gen};
	if (!ra || pthread_create(&u->reader, NULL, reader_main, ra) != 0) {
		free(ra);
		close(errp[0]);
		u->reader_live = 0;
		mcp_stdio_stop(u);
		return aw_fail(err, AW_E_INTERNAL, "cannot start an upstream reader thread");
	}
	u->reader_live = 1;
	aw_log(AW_LOG_INFO, NULL, "mcp stdio upstream started", "project", u->project, "provider",
	       u->provider, NULL);
	return AW_OK;
}

/* The messages of the child's for p, one at a time with mu released (a
 * peer may wait for its client): requests answered to the child, while it
 * is the same child, notifications passed on (holds mu). */
static void stdio_inbox(mcp_up *u, pending *p)
{
	int gen = u->gen;
	while (json_array_size(p->inbox)) {
		json_t *m = json_incref(json_array_get(p->inbox, 0));
		json_array_remove(p->inbox, 0);
		json_t *id = json_object_get(m, "id"), *resp = NULL;
		pthread_mutex_unlock(&u->mu);
		if (id)
			resp = mcp_peer_answer(p->peer, m);
		else if (p->peer->notify)
			p->peer->notify(p->peer->ud, m);
		pthread_mutex_lock(&u->mu);
		if (resp && u->alive && u->gen == gen)
			write_msg(u, resp);
		json_decref(resp);
		json_decref(m);
	}
}

/* Sends one line and, for a request (id >= 0), waits for its answer (holds
 * mu); what the child asks or tells peer meanwhile is handled here. */
static aw_err stdio_exchange(mcp_up *u, json_int_t id, const char *line, int timeout_ms,
			     const mcp_peer *peer, const char *token, json_t **msg, aw_error *err)
{
	pending p = {.id = id, .peer = peer, .token = token};
	const atomic_int *cancel = peer ? peer->cancel : NULL;
	if (id >= 0) {
		aw_clock_cond_init(&p.cv);
		p.next = u->waiting;
		u->waiting = &p;
	}
	size_t n = strlen(line);
	char *l = aw_malloc(n + 1);
	aw_err e = AW_OK;
	if (!l) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	} else {
		memcpy(l, line, n);
		l[n] = '\n'; /* the pipe is the child's only input: writes are whole lines */
		if (write_all(u->in_fd, l, n + 1))
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s closed its input",
				    u->provider);
		free(l);
	}
	if (id < 0)
		return e;
	/* in slices of 50 ms when the client may cancel: it is looked at between */
	int64_t until = aw_clock_mono_ns() + (int64_t)timeout_ms * 1000000LL;
	int cancelled = 0;
	while (!e && !p.done) {
		if (json_array_size(p.inbox)) {
			stdio_inbox(u, &p);
			continue;
		}
		int64_t left_ms = (until - aw_clock_mono_ns()) / 1000000LL;
		if (left_ms <= 0)
			break;
		if (cancel && (cancelled = atomic_load(cancel)))
			break;
		struct timespec ts = aw_clock_after(CLOCK_MONOTONIC,
						    (int)(cancel && left_ms > 50 ? 50 : left_ms));
		pthread_cond_timedwait(&p.cv, &u->mu, &ts);
	}
	for (pending **pp = &u->waiting; *pp; pp = &(*pp)->next)
		if (*pp == &p) {
			*pp = p.next;
			break;
		}
	if (p.done && p.msg) /* what the child said before its answer */
		stdio_inbox(u, &p);
	json_decref(p.inbox);
	if (!e && !p.done && cancelled) {
		e = aw_fail(err, AW_E_MCP_CANCELLED, "the client cancelled the request");
		char *note = mcp_cancel_line(id);
		aw_error ignore = {0}; /* best effort: the client's answer is the same */
		if (note && u->alive)
			stdio_exchange(u, -1, note, timeout_ms, NULL, NULL, NULL, &ignore);
		free(note);
	} else if (!e && !p.done) {
		e = aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream did not answer within %d ms",
			    timeout_ms);
	} else if (!e && !p.msg)
		e = aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s exited", u->provider);
	pthread_cond_destroy(&p.cv);
	if (!e)
		*msg = p.msg;
	else
		json_decref(p.msg);
	return e;
}

aw_err mcp_stdio_request(mcp_up *u, const char *method, const json_t *params, int timeout_ms,
			 const mcp_peer *peer, json_t **result, json_t **rpc_error, aw_error *err)
{
	aw_err e = AW_OK;
	pthread_mutex_lock(&u->mu);
	if (u->stopping) {
		pthread_mutex_unlock(&u->mu);
		return aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s is stopping", u->provider);
	}
	if (u->pid && !u->alive) { /* it exited: collect it, back off, restart */
		int64_t lived = aw_clock_mono_ns() - u->started_ns;
		u->backoff_ms = lived > 60000000000LL ? 200
				: u->backoff_ms
					? (u->backoff_ms * 2 > 30000 ? 30000 : u->backoff_ms * 2)
					: 200;
		/* before the stop, which lets go of mu: a request meanwhile
		 * finds the backoff, not a free slot for a child */
		u->retry_at_ns = aw_clock_mono_ns() + u->backoff_ms * 1000000LL;
		mcp_stdio_stop(u);
		aw_log(AW_LOG_WARN, NULL, "mcp stdio upstream exited; restarting with backoff",
		       "project", u->project, "provider", u->provider, NULL);
		aw_metrics_mcp_stdio_restart(u->project);
	}
	if (!u->pid) {
		if (aw_clock_mono_ns() < u->retry_at_ns)
			e = aw_fail(err, AW_E_MCP_UPSTREAM, "upstream %s is restarting (backoff)",
				    u->provider);
		else
			e = stdio_start(u, err);
	}
	if (!e && !u->initialized) {
		json_t *p = mcp_init_params(), *msg = NULL, *res = NULL;
		json_int_t id = atomic_fetch_add(&u->next_id, 1);
		char *line = mcp_request_line(id, "initialize", p);
		json_decref(p);
		e = line ? stdio_exchange(u, id, line, timeout_ms, NULL, NULL, &msg, err)
			 : AW_E_NOMEM;
		free(line);
		if (!e && !(e = mcp_answer_of(msg, &res, NULL, err))) {
			char *note = mcp_request_line(-1, "notifications/initialized", NULL);
			e = stdio_exchange(u, -1, note, timeout_ms, NULL, NULL, NULL, err);
			free(note);
		}
		json_decref(res);
		json_decref(msg);
		if (!e)
			u->initialized = 1;
	}
	if (!e) {
		json_t *msg = NULL;
		json_int_t id = atomic_fetch_add(&u->next_id, 1);
		char *line = mcp_request_line(id, method, params);
		const char *token = json_string_value(
			json_object_get(json_object_get(params, "_meta"), "progressToken"));
		e = line ? stdio_exchange(u, id, line, timeout_ms, peer, token, &msg, err)
			 : AW_E_NOMEM;
		free(line);
		if (!e)
			e = mcp_answer_of(msg, result, rpc_error, err);
		json_decref(msg);
	}
	pthread_mutex_unlock(&u->mu);
	return e;
}
