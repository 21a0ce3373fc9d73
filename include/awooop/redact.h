/*
 * redact.h - PII and secret redaction for everything awooop stores, logs or
 * returns: "[REDACTED:<class>]" replaces each finding.
 *
 * One pass finds every class at once (Hyperscan multi-pattern scan), each
 * candidate is confirmed by its exact PCRE2-JIT pattern and validator (Luhn for
 * cards, inet_pton for IPv6), and only the secret part is replaced where a
 * pattern names one (the value of "password=...", the user:pass of a URL).
 * docs/internals/redact.md says why this design and how it was measured.
 *
 * Thread-safe: the compiled engine is immutable and shared; per-thread scratch
 * is kept internally. Returned buffers are malloc'd; the caller frees them.
 */
#ifndef AWOOOP_REDACT_H
#define AWOOOP_REDACT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "awooop/err.h"

/* X(enum, label) - the label appears in the replacement text. Personal data
 * first; every class from AW_RC_AWS_KEY_ID on is a credential (nocred.c).
 * AW_RC_CUSTOM is a project's own pattern (below): "[REDACTED:custom:<name>]". */
#define AW_REDACT_CLASSES(X)                         \
	X(AW_RC_EMAIL, "email")                      \
	X(AW_RC_PHONE, "phone")                      \
	X(AW_RC_CARD, "card")                        \
	X(AW_RC_IPV4, "ipv4")                        \
	X(AW_RC_IPV6, "ipv6")                        \
	X(AW_RC_SSN, "us_ssn")                       \
	X(AW_RC_IBAN, "iban")                        \
	X(AW_RC_CUSTOM, "custom")                    \
	X(AW_RC_AWS_KEY_ID, "aws_access_key_id")     \
	X(AW_RC_AWS_SECRET, "aws_secret_key")        \
	X(AW_RC_GITHUB, "github_token")              \
	X(AW_RC_SLACK, "slack_token")                \
	X(AW_RC_SLACK_WEBHOOK, "slack_webhook")      \
	X(AW_RC_JWT, "jwt")                          \
	X(AW_RC_PEM, "private_key")                  \
	X(AW_RC_AUTH_HEADER, "authorization")        \
	X(AW_RC_URL_CREDS, "url_credentials")        \
	X(AW_RC_ASSIGNMENT, "secret_assignment")     \
	X(AW_RC_AWOOOP_KEY, "awooop_key")            \
	X(AW_RC_AWS_SESSION, "aws_session_token")    \
	X(AW_RC_BEDROCK, "aws_bedrock_key")          \
	X(AW_RC_OPENAI, "openai_key")                \
	X(AW_RC_ANTHROPIC, "anthropic_key")          \
	X(AW_RC_GOOGLE_API, "google_api_key")        \
	X(AW_RC_GOOGLE_OAUTH, "google_oauth")        \
	X(AW_RC_HUGGINGFACE, "huggingface_token")    \
	X(AW_RC_GROQ, "groq_key")                    \
	X(AW_RC_PERPLEXITY, "perplexity_key")        \
	X(AW_RC_REPLICATE, "replicate_token")        \
	X(AW_RC_XAI, "xai_key")                      \
	X(AW_RC_OPENROUTER, "openrouter_key")        \
	X(AW_RC_LANGSMITH, "langsmith_key")          \
	X(AW_RC_AZURE_SECRET, "azure_client_secret") \
	X(AW_RC_AZURE_STORAGE, "azure_storage_key")  \
	X(AW_RC_GITLAB, "gitlab_token")              \
	X(AW_RC_BITBUCKET, "bitbucket_token")        \
	X(AW_RC_ATLASSIAN, "atlassian_token")        \
	X(AW_RC_DISCORD, "discord_token")            \
	X(AW_RC_DISCORD_WEBHOOK, "discord_webhook")  \
	X(AW_RC_TELEGRAM, "telegram_bot_token")      \
	X(AW_RC_STRIPE, "stripe_key")                \
	X(AW_RC_SQUARE, "square_token")              \
	X(AW_RC_BRAINTREE, "braintree_token")        \
	X(AW_RC_NPM, "npm_token")                    \
	X(AW_RC_PYPI, "pypi_token")                  \
	X(AW_RC_TWILIO, "twilio_key")                \
	X(AW_RC_SENDGRID, "sendgrid_key")            \
	X(AW_RC_MAILGUN, "mailgun_key")              \
	X(AW_RC_DATADOG, "datadog_key")              \
	X(AW_RC_NEWRELIC, "newrelic_key")            \
	X(AW_RC_SENTRY_DSN, "sentry_dsn")            \
	X(AW_RC_SENTRY_TOKEN, "sentry_token")        \
	X(AW_RC_SHOPIFY, "shopify_token")            \
	X(AW_RC_DOPPLER, "doppler_token")            \
	X(AW_RC_VAULT, "vault_token")                \
	X(AW_RC_ONEPASSWORD, "onepassword_token")    \
	X(AW_RC_AGE, "age_secret_key")               \
	X(AW_RC_DIGITALOCEAN, "digitalocean_token")  \
	X(AW_RC_LINEAR, "linear_key")                \
	X(AW_RC_POSTMAN, "postman_key")              \
	X(AW_RC_GRAFANA, "grafana_token")            \
	X(AW_RC_DATABRICKS, "databricks_token")      \
	X(AW_RC_SUPABASE, "supabase_token")          \
	X(AW_RC_PULUMI, "pulumi_token")              \
	X(AW_RC_SENSITIVE_FIELD, "sensitive_field")

typedef enum {
#define AW_X_RC(e, label) e,
	AW_REDACT_CLASSES(AW_X_RC)
#undef AW_X_RC
		AW_RC__COUNT
} aw_redact_class;

typedef struct {
	uint64_t count[AW_RC__COUNT];
	/* custom patterns stopped by their time budget or match limits before
	 * the end of a text (see "Project-level patterns" below) */
	uint64_t custom_limited;
} aw_redact_stats;

const char *aw_redact_class_label(aw_redact_class c);

/* Compiles the engine once per process (thread-safe); later calls are free.
 * AW_E_INTERNAL if the patterns cannot be compiled (a build defect). */
aw_err aw_redact_init(aw_error *err);

/* Redacts len bytes of text. *out is malloc'd and NUL-terminated (*outlen
 * excludes the NUL). stats may be NULL (counts are added to it). */
aw_err aw_redact_text(const char *in, size_t len, char **out, size_t *outlen,
		      aw_redact_stats *stats);
/* Convenience for small strings: a malloc'd redacted copy, or NULL on OOM. */
char *aw_redact_str(const char *in);

/* Redacts a JSON document in place: string values (and keys) are redacted as
 * text; the whole value under a sensitive key name (password, secret, token,
 * authorization, api_key, credential, cookie, ...) becomes the string
 * "[REDACTED:sensitive_field]". The result is always valid JSON. */
aw_err aw_redact_json(json_t *doc, aw_redact_stats *stats);
/* 1 if a JSON member name is one whose value is always redacted. */
int aw_redact_sensitive_key(const char *key);
/* Refuses a document that holds a credential in plain text (readers of the
 * project see it as written: a run's workflow, a contract's body): a string
 * the redactor finds a key, token, URL userinfo or assignment in, or a
 * non-empty string under a sensitive member name, fails with code and its
 * JSON pointer (where + the path). {"secret_ref": REF} is a reference, REF
 * checked as a tenant's (secret.h, AW_E_SECRET_REF); with ref_strings, a
 * string under a sensitive name that starts "env:" or "file:" is one too
 * (the caller checks its shape where the field is defined). */
aw_err aw_redact_refuse_credentials(const json_t *v, const char *where, aw_err code,
				    int ref_strings, aw_error *err);

/* Streaming: feed chunks of any size; redacted output goes to sink in order.
 * A secret split across chunks is still found (up to AW_REDACT_MAX_HOLD bytes
 * of one private-key block; beyond that the rest of the block is redacted). */
#define AW_REDACT_MAX_HOLD (1u << 20)
typedef int (*aw_redact_sink)(void *ud, const char *data, size_t len);
typedef struct aw_redact_stream aw_redact_stream;
aw_redact_stream *aw_redact_stream_new(aw_redact_sink sink, void *ud, aw_redact_stats *stats);
aw_err aw_redact_stream_feed(aw_redact_stream *s, const char *data, size_t len);
/* Flushes the rest and frees s. */
aw_err aw_redact_stream_finish(aw_redact_stream *s);

/* ---- project-level custom patterns ----
 * The platform (never the tenant) gives a project a short list of named
 * PCRE2 patterns (redaction.h stores them, audited); in that project's text a
 * match becomes "[REDACTED:custom:<name>]", after the built-in classes (a
 * built-in finding wins an overlap). The list, as JSON:
 *   [{"name": "employee_id", "pattern": "EMP-[0-9]{6}"}, ...]
 * at most AW_REDACT_CUSTOM_MAX entries; a name is [a-z][a-z0-9_]{0,31}, unique;
 * a pattern is 1..AW_PATTERN_MAX bytes of PCRE2 (UTF, invalid UTF-8 in the
 * text tolerated) that compiles, has no back reference or callout and cannot
 * match the empty string. Anything else is AW_E_REDACT_PATTERN with the
 * offending entry's JSON pointer.
 *
 * Matching is bounded three ways: a match limit per start position
 * (AW_REDACT_CUSTOM_MATCH_LIMIT; depth and heap limits as pattern.h for the
 * interpreter), a horizon (a match of up to AW_REDACT_CUSTOM_SPAN bytes is
 * whole; a longer one is redacted up to where the matcher stopped looking,
 * the rest searched like any text), and a CPU budget per call (10 ms plus
 * 50 ns per byte and pattern). A pattern that hits a limit stops for the rest of
 * that text, the call's set stops when the budget is spent; both are counted
 * (stats->custom_limited, awooop_redact_custom_limited_total). */
#define AW_REDACT_CUSTOM_MAX 16
#define AW_REDACT_CUSTOM_NAME_MAX 32
#define AW_REDACT_CUSTOM_MATCH_LIMIT 10000
#define AW_REDACT_CUSTOM_SPAN 3072

/* A compiled list: immutable, reference-counted, shareable across threads. */
typedef struct aw_redact_custom aw_redact_custom;
/* Validates and compiles list (borrowed); *out is the caller's
 * (aw_redact_custom_free). An empty array gives a set of 0 patterns. */
aw_err aw_redact_custom_compile(const json_t *list, aw_redact_custom **out, aw_error *err);
/* Drops one reference (NULL is fine). */
void aw_redact_custom_free(aw_redact_custom *c);
int aw_redact_custom_count(const aw_redact_custom *c);

/* The process's registry, project -> (version, set): filled by the service
 * that reads the store (redaction.h), read by the *_for entry points. Takes
 * set (NULL or 0 patterns: the project has none) and installs it when version
 * is newer than the installed one; an older or equal version is dropped (a
 * late reader never rolls a newer list back). 1 installed, 0 dropped. */
int aw_redact_custom_install(const char *project, int64_t version, aw_redact_custom *set);
/* The installed version of project's list (0: none installed). */
int64_t aw_redact_custom_version(const char *project);
/* Empties the registry (tests, shutdown). */
void aw_redact_custom_reset(void);

/* The entry points above, for the text of project: the built-in classes and
 * the project's custom patterns. project NULL or without patterns: exactly
 * the built-in engine (one atomic load when no project has any). */
aw_err aw_redact_text_for(const char *project, const char *in, size_t len, char **out,
			  size_t *outlen, aw_redact_stats *stats);
char *aw_redact_str_for(const char *project, const char *in);
aw_err aw_redact_json_for(const char *project, json_t *doc, aw_redact_stats *stats);
/* The set is taken when the stream is made: a list changed meanwhile applies
 * to the next stream. */
aw_redact_stream *aw_redact_stream_new_for(const char *project, aw_redact_sink sink, void *ud,
					   aw_redact_stats *stats);

#endif
