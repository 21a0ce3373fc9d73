/*
 * ident.h - validation of identifiers that reach keys, SQL parameters, URLs and
 * logs. Anything failing these never gets further than the entry point.
 */
#ifndef AWOOOP_IDENT_H
#define AWOOOP_IDENT_H

/* Project slug: [a-z0-9][a-z0-9_-]{1,62}. Does not reject reserved ids. */
int aw_ident_project_ok(const char *s);
/* 1 for ids no client may create ("__platform__"). */
int aw_ident_project_reserved(const char *s);
/* Principal / key name: [A-Za-z0-9][A-Za-z0-9._-]{0,62}. No '@': a name is
 * an identifier that appears as the actor of every log line and audit record,
 * so it must not be an email address (PII). */
int aw_ident_name_ok(const char *s);

#endif
