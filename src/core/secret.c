/*
 * secret.c - resolves secret references (see secret.h): env:NAME and
 * file:/path, checked for shape at submission and read at execution. Errors
 * name the reference, never what it holds.
 */
#include "awooop/alloc.h"
#include "awooop/secret.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "awooop/log.h"
#include "awooop/str.h"

#define SECRET_FILE_MAX 65536

static int env_name_ok(const char *s)
{
	if (!*s || !((*s >= 'A' && *s <= 'Z') || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/* Reads the secret file fd (consumed) into out; ref names it in errors. */
static aw_err read_file_fd(int fd, const char *ref, aw_buf *out, aw_error *err)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > SECRET_FILE_MAX) {
		int en = fd < 0 ? errno : 0;
		if (fd >= 0)
			close(fd);
		return aw_fail(err, AW_E_SECRET_UNRESOLVED, "%s: %s", ref,
			       en ? strerror(en) : "not a regular file of at most 64 KiB");
	}
	char buf[4096];
	ssize_t n;
	size_t start = out->len;
	while ((n = read(fd, buf, sizeof buf)) > 0 && !aw_buf_add(out, buf, (size_t)n))
		;
	OPENSSL_cleanse(buf, sizeof buf);
	close(fd);
	if (n < 0 || aw_buf_err(out))
		return aw_fail(err, AW_E_SECRET_UNRESOLVED, "%s could not be read", ref);
	if (out->len > start && out->p[out->len - 1] == '\n')
		aw_buf_truncate(out, out->len - 1);
	if (out->len > start && out->p[out->len - 1] == '\r')
		aw_buf_truncate(out, out->len - 1);
	return AW_OK;
}

aw_err aw_secret_ref_check(const char *ref, aw_error *err)
{
	if (ref && strlen(ref) <= 1024) {
		if (!strncmp(ref, "env:", 4) && env_name_ok(ref + 4) && strlen(ref + 4) <= 128)
			return AW_OK;
		if (!strncmp(ref, "file:/", 6) && !strstr(ref, "/../") && !strchr(ref, '\n'))
			return AW_OK;
	}
	return aw_fail(err, AW_E_SECRET_REF,
		       "a secret reference is env:NAME ([A-Z_][A-Z0-9_]*) or file:/absolute/path");
}

aw_err aw_secret_resolve(const char *ref, aw_buf *out, aw_error *err)
{
	aw_err e = aw_secret_ref_check(ref, err);
	if (e)
		return e;
	if (!strncmp(ref, "env:", 4)) {
		const char *v = getenv(ref + 4);
		if (!v || !*v)
			return aw_fail(err, AW_E_SECRET_UNRESOLVED, "%s is not set", ref);
		return aw_buf_adds(out, v)
			       ? aw_fail(err, AW_E_SECRET_UNRESOLVED, "%s too long", ref)
			       : AW_OK;
	}
	return read_file_fd(open(ref + 5, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), ref, out, err);
}

void aw_secret_wipe(aw_buf *b)
{
	if (b->p)
		OPENSSL_cleanse(b->p, b->cap);
	aw_buf_free(b);
}

/* Values read from NAME_FILE live as long as the process (as getenv's). */
static struct {
	char name[64];
	char *value;
} env_files[16];
static pthread_mutex_t env_files_mu = PTHREAD_MUTEX_INITIALIZER;

aw_err aw_secret_env(const char *name, const char **out, aw_error *err)
{
	*out = NULL;
	char fname[80];
	snprintf(fname, sizeof fname, "%s_FILE", name);
	const char *v = getenv(name), *path = getenv(fname);
	if (v && *v && path && *path)
		return aw_fail(err, AW_E_CONFIG, "set %s or %s, not both", name, fname);
	if (v && *v) {
		*out = v;
		return AW_OK;
	}
	if (!path || !*path)
		return AW_OK;
	pthread_mutex_lock(&env_files_mu);
	int slot = -1;
	for (int i = 0; i < 16 && slot < 0; i++)
		if (!env_files[i].value || !strcmp(env_files[i].name, name))
			slot = i;
	aw_err e = AW_OK;
	if (slot >= 0 && env_files[slot].value) {
		*out = env_files[slot].value;
		goto done;
	}
	if (slot < 0 || AW_STR_COPY(env_files[slot].name, name) < 0) {
		e = aw_fail(err, AW_E_CONFIG, "too many *_FILE settings");
		goto done;
	}
	char ref[1100];
	aw_buf b = AW_BUF_INIT(SECRET_FILE_MAX);
	if ((size_t)snprintf(ref, sizeof ref, "file:%s", path) >= sizeof ref || /* not a prefix */
	    (e = aw_secret_resolve(ref, &b, err))) {
		aw_secret_wipe(&b);
		e = aw_fail(err, AW_E_CONFIG,
			    "%s: %.300s is not an absolute path to a readable regular file of at "
			    "most 64 KiB",
			    fname, path);
		goto done;
	}
	struct stat st;
	if (stat(path, &st) == 0 && (st.st_mode & 077))
		aw_log(AW_LOG_WARN, NULL, "a secret file is readable by its group or others",
		       "setting", fname, "path", path, NULL);
	env_files[slot].value = aw_strndup(b.p ? b.p : "", b.len);
	aw_secret_wipe(&b);
	if (!env_files[slot].value)
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	*out = env_files[slot].value;
done:
	pthread_mutex_unlock(&env_files_mu);
	return e;
}

/* ---------------------------------------------------------- a tenant's references
 * A tenant's contract names its credentials, but the gateway's environment and
 * file system hold every tenant's: a reference is resolved inside the
 * tenant's own namespace only, so no spelling of it reaches another's.
 *   env:NAME   -> the variable AWOOOP_T_<P>__NAME, <P> the project with a-z
 *                 upper-cased, '_' as "_U" and '-' as "_H" (so <P> never holds
 *                 "__" nor ends in '_': the first "__" splits project and NAME,
 *                 and no two projects share a variable)
 *   file:PATH  -> <root>/<project>/PATH, PATH relative, opened beneath that
 *                 directory (openat2 RESOLVE_BENEATH: no "..", no absolute
 *                 symlink escapes; Kubernetes' ..data symlinks inside work). */

static int tenant_path_ok(const char *p)
{
	if (!*p || *p == '/' || strlen(p) > 512)
		return 0;
	for (const char *s = p; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-' || *s == '/'))
			return 0;
	/* no "." or ".." segment, no empty one */
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		s += n;
		if (*s == '/')
			s++;
		else
			break;
	}
	return p[strlen(p) - 1] != '/';
}

aw_err aw_secret_tenant_check(const char *ref, aw_error *err)
{
	if (ref && !strncmp(ref, "env:", 4) && env_name_ok(ref + 4) && strlen(ref + 4) <= 128)
		return AW_OK;
	if (ref && !strncmp(ref, "file:", 5) && tenant_path_ok(ref + 5))
		return AW_OK;
	return aw_fail(err, AW_E_SECRET_REF,
		       "a tenant's secret reference is env:NAME ([A-Z_][A-Z0-9_]*) or "
		       "file:relative/path (beneath the tenant's secrets directory)");
}

int aw_secret_tenant_env_name(const char *project, const char *name, char *out, size_t cap)
{
	aw_buf b = AW_BUF_INIT(cap);
	aw_buf_adds(&b, "AWOOOP_T_");
	for (const char *s = project; *s; s++) {
		if (*s >= 'a' && *s <= 'z')
			aw_buf_add(&b, (char[]){(char)(*s - 'a' + 'A')}, 1);
		else if (*s == '_')
			aw_buf_adds(&b, "_U");
		else if (*s == '-')
			aw_buf_adds(&b, "_H");
		else
			aw_buf_add(&b, s, 1);
	}
	aw_buf_adds(&b, "__");
	aw_buf_adds(&b, name);
	int bad = aw_buf_err(&b) || b.len >= cap;
	if (!bad)
		memcpy(out, b.p, b.len + 1);
	aw_buf_free(&b);
	return bad ? -1 : 0;
}

aw_err aw_secret_tenant_resolve(const char *project, const char *root, const char *ref, aw_buf *out,
				aw_error *err)
{
	aw_err e = aw_secret_tenant_check(ref, err);
	if (e)
		return e;
	if (!project || !*project || strchr(project, '/') || !strcmp(project, ".") ||
	    !strcmp(project, ".."))
		return aw_fail(err, AW_E_SECRET_UNRESOLVED, "%s: no project to resolve it in", ref);
	if (!strncmp(ref, "env:", 4)) {
		char var[256];
		const char *v = NULL;
		if (aw_secret_tenant_env_name(project, ref + 4, var, sizeof var) == 0)
			v = getenv(var);
		if (!v || !*v)
			return aw_fail(err, AW_E_SECRET_UNRESOLVED,
				       "%s is not set for this project", ref);
		return aw_buf_adds(out, v)
			       ? aw_fail(err, AW_E_SECRET_UNRESOLVED, "%s too long", ref)
			       : AW_OK;
	}
	if (!root || !*root)
		return aw_fail(err, AW_E_SECRET_UNRESOLVED,
			       "%s: this process has no tenant secrets directory", ref);
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/%s", root, project);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return aw_fail(err, AW_E_SECRET_UNRESOLVED, "%s: the project has no secrets", ref);
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, dfd, ref + 5, &how, sizeof how);
	if (fd < 0 && errno == EXDEV)
		errno = EACCES; /* an escape attempt reads as "not allowed" */
	close(dfd);
	return read_file_fd(fd, ref, out, err);
}
