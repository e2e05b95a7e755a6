/**
 * Reading the file `healthd apply` or `healthd import` parses, within limits.fileBytes and limits.nesting,
 * refused (exit 2, naming the limit) before anything parses it: a 50 MB file used to cost 42 s and 2.9 GB
 * before validation refused it, and deep enough nesting overflows parsers that recurse.
 */
import { closeSync, openSync, readSync } from "node:fs";
import { UsageError } from "../platform/config.ts";
import { isSqlite } from "../import/index.ts";
import { tooDeepAt } from "../domain/nesting.ts";
import { limits } from "../domain/schema/common.ts";

const mib = (bytes: number) => `${bytes / (1024 * 1024)} MiB`;

/**
 * The bytes of `file` (with `stdin`, `-` is standard input), read no further than one byte past the limit.
 * With `sqlite`, a SQLite database (Kuma's kuma.db) is answered by its 16-byte header alone: it is read table
 * by table, never parsed whole, so neither limit applies to it.
 */
export function readInputFile(file: string, { stdin = false, sqlite = false } = {}): Buffer {
  const fromStdin = stdin && file === "-";
  let fd: number;
  try {
    fd = fromStdin ? 0 : openSync(file, "r");
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1024 * 1024, limits.fileBytes + 1 - size));
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      chunks.push(chunk.subarray(0, read));
      size += read;
      if (sqlite && chunks.length === 1 && isSqlite(chunk)) return chunk.subarray(0, 16);
      if (size > limits.fileBytes) {
        throw new UsageError(`${fromStdin ? "<stdin>" : file} is larger than ${mib(limits.fileBytes)}, the limit of a file for apply or import; it was not parsed: split it into several files`);
      }
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  } finally {
    if (!fromStdin) closeSync(fd);
  }
  return Buffer.concat(chunks);
}

/** Refuse `text` (what `label` names: the file, or <stdin>) when it nests deeper than limits.nesting, naming the line. */
export function refuseTooDeep(text: string, label: string): void {
  const line = tooDeepAt(text, limits.nesting);
  if (line !== undefined) {
    throw new UsageError(
      `${label}:${line}: nests deeper than ${limits.nesting} levels, the limit of a file for apply or import (a servers file needs about 8); it was not parsed: look there for brackets or indentation that run away`,
    );
  }
}
