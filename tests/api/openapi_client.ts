// A client of the API, written against the types openapi-typescript
// generates from docs/api/openapi.json (tests/api/openapi_client.sh): the
// free-form members - a step's args, a run's input, a contract's body, a
// step's result, usage - must hold what clients put in them and give back
// what they read, under --strict. A free-form object typed as an empty one
// (a schema of "type": "object" without additionalProperties) fails here.
import type { components, operations } from "./api";

type RunRequest = operations["submitRun"]["requestBody"]["content"]["application/json"];
type Run = components["schemas"]["Run"];
type Revision = components["schemas"]["Revision"];
type NewRevision = operations["createRevision"]["requestBody"]["content"]["application/json"];
type Chat = operations["chatCompletions"]["responses"]["200"]["content"]["application/json"];

const runs: RunRequest[] = [
  { workflow: [{ kind: "llm", args: { route: "main", prompt: "hi", max_tokens: 40 } }], input: { ticket: 42 } },
  { workflow: [{ kind: "approval", args: { summary: "deploy" } }, { kind: "noop" }], input: "a string" },
  { workflow: [{ kind: "sleep", args: { ms: 10 } }], input: [1, 2, 3], queue: "default" },
];
const draft: NewRevision = {
  body: { routes: [{ name: "main", match: { task: "chat" }, candidates: [{ provider: "ollama", model: "m" }] }] },
};

function readBack(run: Run, rev: Revision, chat: Chat): unknown[] {
  const steps = run.steps ?? [];
  return [
    run.input,
    run.workflow[0]?.["kind"],
    steps[0]?.result,
    rev.body["routes"],
    chat.usage?.["total_tokens"],
  ];
}

export { runs, draft, readBack };
