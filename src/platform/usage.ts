/**
 * The error of a bad flag, environment or configuration: the CLI exits 2 with its message. In a file of its
 * own, so that the light commands (run, ping: src/cli/fast.ts) can throw it without loading config.ts.
 */
export class UsageError extends Error {}
