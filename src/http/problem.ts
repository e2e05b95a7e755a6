/**
 * Every HTTP error is an RFC 9457 problem document, made here and nowhere else.
 */
import { STATUS_CODES } from "node:http";
import type { FieldError } from "../domain/validate.ts";

export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors?: readonly FieldError[];
}

/** Thrown by a handler to answer with a problem document. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly errors?: readonly FieldError[],
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
  }

  toProblem(): Problem {
    return problem(this.status, this.detail, this.errors);
  }
}

export function problem(status: number, detail: string, errors?: readonly FieldError[]): Problem {
  return {
    type: errors ? "https://healthd.invalid/problems/invalid-input" : "about:blank",
    title: STATUS_CODES[status] ?? "Error",
    status,
    detail,
    ...(errors ? { errors } : {}),
  };
}

/** A 400 listing every problem of a document. */
export function invalid(errors: readonly FieldError[], what = "the request"): HttpError {
  const first = errors[0];
  const summary = first ? `${first.path || "/"}: ${first.message}` : "";
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more, listed in errors)` : "";
  return new HttpError(400, `${what} is invalid: ${summary}${more}`, errors);
}
