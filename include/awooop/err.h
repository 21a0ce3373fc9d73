/*
 * err.h - the one catalogue of stable error codes.
 *
 * Every fallible function returns an aw_err (AW_OK == 0) and, when the caller
 * passes one, fills an aw_error with a human message. The code string
 * ("E-TENANT-001") and HTTP status of every aw_err live in AW_ERROR_LIST below and
 * nowhere else; docs/errors.md documents the same list and a test keeps the two
 * in step. Codes are stable: never renumber, only add.
 */
#ifndef AWOOOP_ERR_H
#define AWOOOP_ERR_H

#include <stddef.h>

/* X(enum name, stable code, HTTP status, title) */
#define AW_ERROR_LIST(X)                                                                   \
	X(AW_OK, "OK", 200, "OK")                                                          \
	X(AW_E_REQ_JSON, "E-REQ-001", 400, "Malformed JSON body")                          \
	X(AW_E_REQ_TOO_BIG, "E-REQ-002", 413, "Request body too large")                    \
	X(AW_E_REQ_MEDIA, "E-REQ-003", 415, "Unsupported media type")                      \
	X(AW_E_REQ_UNKNOWN_FIELD, "E-REQ-004", 400, "Unknown field")                       \
	X(AW_E_REQ_INVALID, "E-REQ-005", 400, "Invalid field value")                       \
	X(AW_E_REQ_METHOD, "E-REQ-006", 405, "Method not allowed")                         \
	X(AW_E_REQ_ROUTE, "E-REQ-007", 404, "No such route")                               \
	X(AW_E_REQ_ID, "E-REQ-008", 400, "Malformed identifier")                           \
	X(AW_E_REQ_PATH, "E-REQ-009", 400, "Malformed path")                               \
	X(AW_E_REQ_URI_LONG, "E-REQ-010", 414, "Path too long")                            \
	X(AW_E_REQ_HEADER, "E-REQ-011", 400, "Malformed request header")                   \
	X(AW_E_REQ_BUSY, "E-REQ-012", 503, "Server at its request memory limit")           \
	X(AW_E_REQ_SHUTDOWN, "E-REQ-013", 503, "Server shutting down")                     \
	X(AW_E_REQ_PROJECT_MEMORY, "E-REQ-014", 429, "Project's request bodies at bound")  \
	X(AW_E_REQ_ANON_MEMORY, "E-REQ-015", 429, "Keyless request bodies at bound")       \
	X(AW_E_AUTH_MISSING, "E-AUTH-001", 401, "Missing credentials")                     \
	X(AW_E_AUTH_INVALID, "E-AUTH-002", 401, "Invalid or revoked API key")              \
	X(AW_E_AUTH_SCOPE, "E-AUTH-003", 403, "Insufficient scope")                        \
	X(AW_E_AUTH_EXPIRED, "E-AUTH-004", 401, "API key expired")                         \
	X(AW_E_TENANT_NOT_FOUND, "E-TENANT-001", 404, "Project not found")                 \
	X(AW_E_TENANT_SLUG, "E-TENANT-002", 400, "Invalid project id")                     \
	X(AW_E_TENANT_EXISTS, "E-TENANT-003", 409, "Project already exists")               \
	X(AW_E_TENANT_RESERVED, "E-TENANT-004", 400, "Reserved project id")                \
	X(AW_E_KEY_NOT_FOUND, "E-KEY-001", 404, "API key not found")                       \
	X(AW_E_KEY_SCOPE, "E-KEY-002", 400, "Invalid key scope")                           \
	X(AW_E_KEY_EXISTS, "E-KEY-003", 409, "Active key with this name exists")           \
	X(AW_E_KEY_REVOKED, "E-KEY-004", 409, "API key already revoked")                   \
	X(AW_E_KEY_LIMITS, "E-KEY-005", 422, "Invalid key limits")                         \
	X(AW_E_KEY_MODEL, "E-KEY-006", 403, "Model not allowed for this key")              \
	X(AW_E_KEY_RPM, "E-KEY-007", 429, "Key's requests per minute reached")             \
	X(AW_E_KEY_TPM, "E-KEY-008", 429, "Key's tokens per minute reached")               \
	X(AW_E_KEY_BUDGET, "E-KEY-009", 429, "Key's budget spent")                         \
	X(AW_E_STORE_UNAVAILABLE, "E-STORE-001", 503, "Store unavailable")                 \
	X(AW_E_STORE_SCHEMA, "E-STORE-002", 503, "Store schema out of date")               \
	X(AW_E_STORE_BUSY, "E-STORE-003", 503, "Store busy")                               \
	X(AW_E_STORE_CONFLICT, "E-STORE-004", 409, "Conflicting write")                    \
	X(AW_E_STORE_QUERY, "E-STORE-005", 500, "Store query failed")                      \
	X(AW_E_STORE_DENIED, "E-STORE-006", 403, "Row-level security refused write")       \
	X(AW_E_STORE_PROJECT, "E-STORE-007", 429, "Project's store connections at bound")  \
	X(AW_E_CONTRACT_SCHEMA, "E-CONTRACT-001", 422, "Contract body is invalid")         \
	X(AW_E_CONTRACT_NOT_FOUND, "E-CONTRACT-002", 404, "Contract revision not found")   \
	X(AW_E_CONTRACT_STATE, "E-CONTRACT-003", 409, "Illegal lifecycle transition")      \
	X(AW_E_CONTRACT_FAMILY, "E-CONTRACT-004", 404, "Unknown contract family")          \
	X(AW_E_CONTRACT_APPROVALS, "E-CONTRACT-005", 409, "Not enough approvals")          \
	X(AW_E_CONTRACT_SELF_APPROVAL, "E-CONTRACT-006", 403, "Publisher cannot approve")  \
	X(AW_E_CONTRACT_DUP_APPROVAL, "E-CONTRACT-007", 409, "Already approved")           \
	X(AW_E_CONTRACT_APPROVER, "E-CONTRACT-008", 403, "Not an allowed approver")        \
	X(AW_E_CONTRACT_ID, "E-CONTRACT-009", 400, "Invalid contract id")                  \
	X(AW_E_CONTRACT_NO_KEY, "E-CONTRACT-010", 503, "No publish key configured")        \
	X(AW_E_CONTRACT_SECRET, "E-CONTRACT-011", 422, "Secret inside a contract")         \
	X(AW_E_CONTRACT_RB_TARGET, "E-CONTRACT-012", 409, "Not a rollback target")         \
	X(AW_E_CONTRACT_RB_INVALID, "E-CONTRACT-013", 422, "Rollback body now invalid")    \
	X(AW_E_CONTRACT_RB_STALE, "E-CONTRACT-014", 409, "Rollback no longer applies")     \
	X(AW_E_CONTRACT_SIG, "E-CONTRACT-SIG", 409, "Signature or body hash mismatch")     \
	X(AW_E_MIGRATE_ROLE, "E-MIGRATE-001", 500, "Unsafe application role")              \
	X(AW_E_CONFIG, "E-CONFIG-001", 400, "Invalid configuration")                       \
	X(AW_E_USAGE, "E-CLI-001", 400, "Invalid command line")                            \
	X(AW_E_CLIENT, "E-CLI-002", 502, "Server unreachable")                             \
	X(AW_E_BUS_UNAVAILABLE, "E-BUS-001", 503, "Bus unavailable")                       \
	X(AW_E_KEYS_COMPONENT, "E-KEYS-001", 400, "Invalid key component")                 \
	X(AW_E_KEYS_PATTERN, "E-KEYS-002", 404, "Unknown key pattern")                     \
	X(AW_E_KEYS_GATE, "E-KEYS-003", 409, "Migration gate not met")                     \
	X(AW_E_KEYS_PHASE, "E-KEYS-004", 409, "Illegal migration phase change")            \
	X(AW_E_RUN_NOT_FOUND, "E-RUN-001", 404, "Run not found")                           \
	X(AW_E_RUN_STATE, "E-RUN-002", 409, "Illegal run state transition")                \
	X(AW_E_RUN_WORKFLOW, "E-RUN-003", 422, "Invalid workflow")                         \
	X(AW_E_RUN_ATTEMPTS, "E-RUN-004", 409, "Run failed after max attempts")            \
	X(AW_E_RUN_STEP, "E-RUN-005", 502, "Step failed")                                  \
	X(AW_E_RUN_TIMEOUT, "E-RUN-006", 504, "Run timed out")                             \
	X(AW_E_RUN_CANCELLED, "E-RUN-007", 409, "Run cancelled")                           \
	X(AW_E_RUN_IDEMPOTENCY, "E-RUN-IDEMPOTENCY", 409, "Idempotency-Key reused")        \
	X(AW_E_RUN_SECRET, "E-RUN-008", 422, "Secret inside a workflow")                   \
	X(AW_E_RUN_REJECTED, "E-RUN-009", 409, "Run rejected by an approver")              \
	X(AW_E_RUN_APPROVAL_EXPIRED, "E-RUN-010", 409, "Approval window closed")           \
	X(AW_E_RUN_REF, "E-RUN-011", 422, "Step reference does not resolve")               \
	X(AW_E_RUN_EGRESS, "E-RUN-012", 403, "Step's address refused by egress policy")    \
	X(AW_E_RUN_REFUSED, "E-RUN-013", 422, "Step's request refused by its server")      \
	X(AW_E_RUN_TURNS, "E-RUN-014", 422, "Agent out of turns")                          \
	X(AW_E_SECRET_REF, "E-SECRET-001", 422, "Invalid secret reference")                \
	X(AW_E_SECRET_UNRESOLVED, "E-SECRET-002", 502, "Secret reference unresolvable")    \
	X(AW_E_LIMIT, "E-LIMIT-001", 422, "Size limit exceeded")                           \
	X(AW_E_LLM_POLICY, "E-LLM-001", 403, "No active routing policy")                   \
	X(AW_E_LLM_ROUTE, "E-LLM-002", 404, "No route for the model")                      \
	X(AW_E_LLM_UPSTREAMS, "E-LLM-003", 502, "No upstream answered")                    \
	X(AW_E_LLM_BROKEN, "E-LLM-004", 502, "Upstream stream broken")                     \
	X(AW_E_LLM_CAP, "E-LLM-005", 429, "Emergency cloud cap reached")                   \
	X(AW_E_LLM_REFUSED, "E-LLM-006", 400, "Upstream refused the request")              \
	X(AW_E_LLM_UNAVAILABLE, "E-LLM-007", 503, "LLM gateway unavailable")               \
	X(AW_E_LLM_PROMPT, "E-LLM-008", 400, "Prompt over the route's input limit")        \
	X(AW_E_LLM_BUSY, "E-LLM-009", 429, "Project's model calls in flight at its bound") \
	X(AW_E_LLM_WIRE, "E-LLM-010", 400, "Request not expressible to the upstream")      \
	X(AW_E_SCHEMA_OUTPUT, "E-SCHEMA-001", 502, "Model output failed its schema")       \
	X(AW_E_BUDGET_SUSPENDED, "E-BUDGET-001", 402, "Project suspended")                 \
	X(AW_E_BUDGET_EXHAUSTED, "E-BUDGET-002", 429, "Token budget spent")                \
	X(AW_E_BUDGET_RUN, "E-BUDGET-003", 429, "Run token budget spent")                  \
	X(AW_E_BUDGET_PRICE, "E-BUDGET-004", 409, "Model has no price")                    \
	X(AW_E_BUDGET_UNPRICED, "E-BUDGET-005", 400, "Billing the budget cannot price")    \
	X(AW_E_BUDGET_PLATFORM, "E-BUDGET-006", 403, "Suspended by the platform")          \
	X(AW_E_BUDGET_NO_RUN, "E-BUDGET-007", 403, "Model call outside a live run")        \
	X(AW_E_TLS_CLIENT, "E-TLS-001", 401, "Client certificate required")                \
	X(AW_E_MCP_KEY, "E-MCP-GATE-001", 401, "No or unknown key")                        \
	X(AW_E_MCP_TOOL, "E-MCP-GATE-002", 404, "Tool not visible to this project")        \
	X(AW_E_MCP_POLICY, "E-MCP-GATE-003", 403, "Tool refused by policy")                \
	X(AW_E_MCP_PIN, "E-MCP-GATE-004", 409, "Tool definition changed")                  \
	X(AW_E_MCP_ARGS, "E-MCP-GATE-005", 422, "Tool arguments refused")                  \
	X(AW_E_MCP_RATE, "E-MCP-GATE-006", 429, "Tool rate limit reached")                 \
	X(AW_E_MCP_BUDGET, "E-MCP-GATE-007", 402, "Budget refuses tool calls")             \
	X(AW_E_MCP_APPROVAL, "E-MCP-GATE-008", 403, "Tool call needs approval")            \
	X(AW_E_MCP_UPSTREAM, "E-MCP-GATE-009", 502, "Tool upstream failed")                \
	X(AW_E_MCP_PROTOCOL, "E-MCP-001", 400, "Invalid MCP message")                      \
	X(AW_E_MCP_SESSION, "E-MCP-002", 404, "Unknown MCP session")                       \
	X(AW_E_MCP_UNAVAILABLE, "E-MCP-003", 503, "MCP gateway unavailable")               \
	X(AW_E_MCP_CANCELLED, "E-MCP-004", 409, "MCP request cancelled by its client")     \
	X(AW_E_MCP_ORIGIN, "E-MCP-005", 403, "Origin may not call the MCP endpoint")       \
	X(AW_E_MCP_STDIO, "E-MCP-006", 403, "stdio upstream not allowed by the operator")  \
	X(AW_E_MCP_SANDBOX, "E-MCP-007", 503, "stdio upstream sandbox cannot be set up")   \
	X(AW_E_MCP_BUSY, "E-MCP-008", 429, "Project's MCP queue full")                     \
	X(AW_E_APPROVAL_TOKEN, "E-APPROVAL-001", 401, "Malformed approval token")          \
	X(AW_E_APPROVAL_ALG, "E-APPROVAL-002", 401, "Token algorithm refused")             \
	X(AW_E_APPROVAL_KID, "E-APPROVAL-003", 401, "Token key unknown")                   \
	X(AW_E_APPROVAL_SIGNATURE, "E-APPROVAL-004", 401, "Token signature invalid")       \
	X(AW_E_APPROVAL_TIME, "E-APPROVAL-005", 401, "Token expired or not yet valid")     \
	X(AW_E_APPROVAL_AUDIENCE, "E-APPROVAL-006", 403, "Token for another audience")     \
	X(AW_E_APPROVAL_REPLAY, "E-APPROVAL-007", 409, "Token already used")               \
	X(AW_E_APPROVAL_KEY, "E-APPROVAL-008", 503, "No approval key configured")          \
	X(AW_E_APPROVAL_APPROVER, "E-APPROVAL-009", 403, "Not an approver of this run")    \
	X(AW_E_APPROVAL_STATE, "E-APPROVAL-010", 409, "Run is not waiting for approval")   \
	X(AW_E_APPROVAL_DUP, "E-APPROVAL-011", 409, "Approver already decided")            \
	X(AW_E_APPROVAL_OTHER, "E-APPROVAL-012", 403, "Decision for another principal")    \
	X(AW_E_CHANNEL_FENCED, "E-CHANNEL-001", 409, "Channel leader was replaced")        \
	X(AW_E_CHANNEL_UPSTREAM, "E-CHANNEL-002", 502, "Telegram Bot API failed")          \
	X(AW_E_CHANNEL_UNKNOWN, "E-CHANNEL-003", 404, "No such channel")                   \
	X(AW_E_CHANNEL_UPDATE, "E-CHANNEL-004", 400, "Malformed Telegram update")          \
	X(AW_E_CHANNEL_WEBHOOK, "E-CHANNEL-005", 401, "Webhook secret mismatch")           \
	X(AW_E_REDACT_PATTERN, "E-REDACT-001", 400, "Invalid custom redaction pattern")    \
	X(AW_E_CRON, "E-CRON-001", 422, "Invalid cron expression")                         \
	X(AW_E_CRON_ZONE, "E-CRON-002", 422, "Unknown time zone")                          \
	X(AW_E_SCHEDULE_NOT_FOUND, "E-SCHEDULE-001", 404, "Schedule not found")            \
	X(AW_E_SCHEDULE_EXISTS, "E-SCHEDULE-002", 409, "Schedule name taken")              \
	X(AW_E_NOMEM, "E-INTERNAL-002", 500, "Out of memory")                              \
	X(AW_E_INTERNAL, "E-INTERNAL-001", 500, "Internal error")

typedef enum {
#define AW_X_ENUM(name, code, status, title) name,
	AW_ERROR_LIST(AW_X_ENUM)
#undef AW_X_ENUM
		AW_ERR__COUNT
} aw_err;

/* Details of a failure. Fixed-size, caller-owned, never needs freeing. */
typedef struct aw_error {
	aw_err err;
	char msg[256];	 /* human text; never contains secrets or other tenants' data */
	char where[128]; /* optional: JSON pointer or field name the error is about */
	/* a refusal that ends at a known time (a budget period's reset): the
	 * seconds until then, for the answer's Retry-After; 0 when unknown
	 * (aw_fail sets 0) */
	int retry_after_s;
} aw_error;

const char *aw_err_code(aw_err e);  /* "E-TENANT-001"; static storage */
const char *aw_err_title(aw_err e); /* static storage */
int aw_err_http_status(aw_err e);
/* Returns AW_E_INTERNAL for an unknown string. */
int aw_err_from_code(const char *code, aw_err *out);

/* Sets err (if non-NULL) and returns e, so callers can `return aw_fail(...)`. */
aw_err aw_fail(aw_error *err, aw_err e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
aw_err aw_fail_at(aw_error *err, aw_err e, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
