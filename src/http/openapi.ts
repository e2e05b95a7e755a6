/**
 * The OpenAPI 3.1 document of the API, generated from the same zod schemas that validate requests,
 * so the description cannot drift from what the daemon accepts.
 */
import { z } from "zod";
import { serverDocument } from "../schema.ts";

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ content: { "application/json": { schema } } });
const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: ref("Problem") } },
});
const pathParam = (name: string) => ({
  name,
  in: "path",
  required: true,
  schema: { type: "string", pattern: "^[A-Za-z0-9._-]{1,64}$" },
});

export function openApiDocument(version: string): Record<string, unknown> {
  const serverInput = z.toJSONSchema(serverDocument, { io: "input", unrepresentable: "any" });
  const { $schema: _, ...serverSchema } = serverInput as Record<string, unknown>;
  return {
    openapi: "3.1.0",
    info: { title: "healthd", version, description: "Self-hosted website health-check daemon." },
    // Applies when the daemon runs with --token; /healthz is always open.
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: {
        ServerDocument: serverSchema,
        Problem: {
          type: "object",
          required: ["type", "title", "status", "detail"],
          properties: {
            type: { type: "string" },
            title: { type: "string" },
            status: { type: "integer" },
            detail: { type: "string" },
            errors: {
              type: "array",
              items: {
                type: "object",
                required: ["path", "message"],
                properties: { path: { type: "string", description: "JSON Pointer" }, message: { type: "string" } },
              },
            },
          },
        },
      },
    },
    paths: {
      "/services": {
        get: {
          summary: "List servers with counts of services up, down and unknown",
          responses: { "200": { description: "The servers" } },
        },
      },
      "/services/{serverId}": {
        parameters: [pathParam("serverId")],
        get: {
          summary: "A server with its services and each service's state",
          responses: { "200": { description: "The server" }, "404": problem("No such server") },
        },
        put: {
          summary: "Create or replace a server and its whole set of services",
          requestBody: { required: true, ...json(ref("ServerDocument")) },
          responses: {
            "200": { description: "Replaced" },
            "201": { description: "Created" },
            "400": problem("Invalid document; every problem is listed in errors"),
            "413": problem("Body over 1 MiB"),
            "415": problem("Body is not JSON"),
          },
        },
        delete: {
          summary: "Delete a server with its services, checks, entries and state",
          responses: { "204": { description: "Deleted" }, "404": problem("No such server") },
        },
      },
      "/services/{serverId}/{serviceId}": {
        parameters: [pathParam("serverId"), pathParam("serviceId")],
        delete: {
          summary: "Delete one service with everything that references it",
          responses: { "204": { description: "Deleted" }, "404": problem("No such server or service") },
        },
      },
      "/healthz": {
        get: { summary: "Liveness of the daemon", security: [], responses: { "200": { description: "{status, version}" } } },
      },
      "/openapi.json": {
        get: { summary: "This document", responses: { "200": { description: "OpenAPI 3.1" } } },
      },
    },
  };
}
