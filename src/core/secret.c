/*
 * secret.c - resolves secret references (see secret.h): env:NAME and
 * file:/path, checked for shape at submission and read at execution. Errors
 * name the reference, never what it holds.
 */
#include "awooop/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

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
	int fd = open(ref + 5, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
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

void aw_secret_wipe(aw_buf *b)
{
	if (b->p)
		OPENSSL_cleanse(b->p, b->cap);
	aw_buf_free(b);
}
