/**
 * The OpenAPI 3.1 document, made from the route table: every path and method, its summary, path and query
 * parameters, request body and answers come from the operations and their zod schemas, so it cannot drift
 * from what the daemon accepts and says. `npx @redocly/cli lint` finds no error in it (a test runs it).
 */
import { z } from "zod";
import { kindObjects, serverDocument } from "../domain/schema/index.ts";
import * as answers from "./answers.ts";
import type { Answer, Operation, Route } from "./router.ts";

/** Schemas given a name of their own in components (the rest are written in place). */
const named = new Map<z.ZodType, string>([
  [serverDocument, "ServerDocument"],
  [answers.serverAnswer, "Server"],
  [answers.serviceAnswer, "Service"],
  [answers.serverListAnswer, "ServerList"],
  [answers.entriesAnswer, "EntryPage"],
  [answers.statsAnswer, "Stats"],
  [answers.pushAnswer, "PushAnswer"],
  [answers.healthAnswer, "Health"],
  [answers.problemAnswer, "Problem"],
]);

type JsonSchema = Record<string, unknown>;

/** A zod schema as JSON Schema 2020-12 (OpenAPI 3.1's dialect), for a request (input) or an answer (output). */
function jsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const converted = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: ({ zodSchema, jsonSchema }) => {
      const type = kindObjects.get(zodSchema as unknown as z.ZodType);
      if (type === undefined) return;
      jsonSchema.additionalProperties = false;
      if (type === "http" && io === "input") jsonSchema.required = (jsonSchema.required ?? []).filter((key) => key !== "type");
    },
  }) as JsonSchema;
  const { $schema: _, $defs: defs, ...rest } = converted;
  // $defs would resolve nowhere once the schema sits inside the document (the schemas have no recursion).
  if (defs && Object.keys(defs).length > 0) throw new Error("a schema of the API has $defs; write its recursive part without recursion");
  return rest;
}

export function openApiDocument(version: string, routes: readonly Route[]): Record<string, unknown> {
  const components: Record<string, JsonSchema> = {};
  const ref = (schema: z.ZodType, io: "input" | "output"): JsonSchema => {
    const name = named.get(schema);
    if (!name) return jsonSchema(schema, io);
    components[name] ??= jsonSchema(schema, io);
    return { $ref: `#/components/schemas/${name}` };
  };
  const problem = ref(answers.problemAnswer, "output");

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const names = route.path.split("/").filter((s) => s.startsWith(":")).map((s) => s.slice(1));
    const path = route.path.replace(/:([A-Za-z]+)/g, "{$1}");
    const item: Record<string, unknown> = {};
    if (names.length > 0) {
      item.parameters = names.map((name) => ({
        name,
        in: "path",
        required: true,
        schema: name === "topic" ? { type: "string", pattern: "^[-_A-Za-z0-9]{1,64}$" } : { type: "string", pattern: "^[A-Za-z0-9._-]{1,64}$" },
      }));
    }
    for (const [method, operation] of Object.entries(route.methods) as [string, Operation][]) {
      item[method.toLowerCase()] = describe(operation, ref, problem);
    }
    paths[path] = item;
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "healthd",
      version,
      description: "Self-hosted website health-check daemon: servers, their services' HTTP checks, the results, notifications.",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "/", description: "This daemon" }],
    // Applies when the daemon runs with --token; open operations say security: [].
    security: [{ bearer: [] }],
    paths,
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } }, schemas: components },
  };
}

function describe(operation: Operation, ref: (schema: z.ZodType, io: "input" | "output") => JsonSchema, problem: JsonSchema): Record<string, unknown> {
  const described: Record<string, unknown> = { operationId: operation.operationId, summary: operation.summary };
  if (operation.open) described.security = [];
  if (operation.query) {
    const query = jsonSchema(operation.query, "input") as { properties?: Record<string, JsonSchema>; required?: string[] };
    described.parameters = Object.entries(query.properties ?? {}).map(([name, schema]) => {
      const { description, ...rest } = schema;
      return { name, in: "query", required: query.required?.includes(name) ?? false, schema: rest, ...(description ? { description } : {}) };
    });
  }
  if (operation.body) {
    const content: Record<string, unknown> = { "application/json": { schema: ref(operation.body.schema, "input") } };
    for (const type of operation.body.types ?? []) content[type] = { schema: { type: "string" } };
    described.requestBody = { required: operation.body.required, content };
  }
  const responses: Record<string, unknown> = {};
  const unauthorized: Answer = { description: "The API needs a token and the request has none, or one that is not known (revoked)" };
  const forbidden: Answer = { description: "The token's scope, or the servers it is limited to, do not allow this; `detail` names what is needed" };
  const all: Record<number, Answer> = operation.open ? { ...operation.responses } : { 401: unauthorized, 403: forbidden, ...operation.responses };
  for (const [status, answer] of Object.entries(all)) {
    if (Number(status) >= 400) responses[status] = { description: answer.description, content: { "application/problem+json": { schema: problem } } };
    else if (answer.schema) responses[status] = { description: answer.description, content: { "application/json": { schema: ref(answer.schema, "output") } } };
    else if (answer.contentType) responses[status] = { description: answer.description, content: { [answer.contentType]: { schema: {} } } };
    else responses[status] = { description: answer.description };
  }
  described.responses = responses;
  return described;
}
