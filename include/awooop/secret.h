/*
 * secret.h - secret references: how a workflow (and the gateways to come)
 * names a credential without holding it. A reference is
 *   env:NAME         an environment variable of the executing process
 *   file:/abs/path   a file's contents (Kubernetes / Docker secrets; one
 *                    trailing newline dropped; a regular file of at most 64 KiB)
 * and is resolved only at the moment of use; the value goes to where it is
 * used and nowhere else (never a journal, log, audit record or answer).
 */
#ifndef AWOOOP_SECRET_H
#define AWOOOP_SECRET_H

#include "awooop/buf.h"
#include "awooop/err.h"

/* AW_E_SECRET_REF unless ref is a well-formed reference. Pure (fuzzed). */
aw_err aw_secret_ref_check(const char *ref, aw_error *err);
/* Appends the value to out (which the caller frees, after wiping it with
 * aw_secret_wipe). AW_E_SECRET_UNRESOLVED when it cannot be had; the message
 * names the reference, never a value. */
aw_err aw_secret_resolve(const char *ref, aw_buf *out, aw_error *err);
/* A secret setting from the environment: NAME, or the contents of the file
 * NAME_FILE names (the Kubernetes and Docker secrets convention: an absolute
 * path, one trailing newline dropped; a file readable by its group or others
 * is used with a warning). *out NULL when neither is set; E-CONFIG-001 when
 * both are, or the file cannot be read. The value lives as long as the
 * process. */
aw_err aw_secret_env(const char *name, const char **out, aw_error *err);
/* A tenant's references (mcp_tool contracts): resolved only inside the
 * tenant's namespace, so no reference of project A reaches project B's secret.
 *   env:NAME    the variable AWOOOP_T_<PROJECT>__NAME (aw_secret_tenant_env_name:
 *               a-z upper-cased, '_' -> "_U", '-' -> "_H")
 *   file:PATH   <root>/<project>/PATH, PATH relative, opened beneath that
 *               directory (symlinks may not leave it)
 * aw_secret_tenant_check is pure (AW_E_SECRET_REF). */
aw_err aw_secret_tenant_check(const char *ref, aw_error *err);
/* The variable env:name of project reads; -1 when it does not fit cap. */
int aw_secret_tenant_env_name(const char *project, const char *name, char *out, size_t cap);
aw_err aw_secret_tenant_resolve(const char *project, const char *root, const char *ref, aw_buf *out,
				aw_error *err);
/* Overwrites and frees a buffer that held a secret. */
void aw_secret_wipe(aw_buf *b);

#endif
