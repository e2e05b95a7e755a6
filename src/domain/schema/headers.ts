/**
 * Headers that healthd sends on someone's behalf: a check's request headers and a webhook channel's. One rule
 * for both, checked when they are saved, because a header that breaks the request (CR or LF in a value, a
 * hop-by-hop name) would otherwise fail every check or every notification after a 201.
 */
import { z } from "zod";
import { limits } from "./common.ts";

/** An HTTP field name (RFC 9110 5.1: a token). */
export const headerName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/, "must be an HTTP header name such as content-type");

/**
 * Headers healthd sends itself, or that only make sense between two hops: set by hand they would break every
 * request (undici refuses several outright), so they are refused when they are saved.
 */
const reservedHeaders = ["connection", "content-length", "expect", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"];

/** What an HTTP/1.1 field value may hold (RFC 9110 5.5): visible characters, spaces and tabs, Latin-1 at most. */
const fieldValue = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * The headers healthd sends for `sender` ("a check", "a channel"): each one named where it is refused (a
 * reserved or hop-by-hop name, a control character in its value, a Host that is no host), at most
 * limits.headersPerCheck of them, each name once whatever its case.
 */
export const sentHeaders = (sender: string) =>
  z.record(headerName, z.string().max(limits.headerValueBytes)).superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      if (reservedHeaders.includes(lower)) {
        ctx.addIssue({ code: "custom", path: [name], message: `is set by healthd itself (or is hop-by-hop) and cannot be sent by ${sender}; remove it` });
      } else if (!fieldValue.test(value)) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: "must not contain control characters (CR, LF, NUL, ...) or characters beyond Latin-1; percent-encode or remove them",
        });
      } else if (lower === "host" && !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$/.test(value)) {
        ctx.addIssue({ code: "custom", path: [name], message: "must be a host name with an optional port, such as example.org:8080" });
      }
    }
    const names = Object.keys(headers).map((n) => n.toLowerCase());
    const repeated = names.find((n, i) => names.indexOf(n) !== i);
    if (repeated) ctx.addIssue({ code: "custom", message: `names ${repeated} twice (header names are case-insensitive); give it once` });
    if (names.length > limits.headersPerCheck) ctx.addIssue({ code: "custom", message: `holds at most ${limits.headersPerCheck} headers` });
  });
