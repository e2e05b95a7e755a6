/** healthd's exit codes: 0 ok, 1 a check failed, 2 bad usage or configuration, 3 an internal error. */
export const exitCodes = { ok: 0, checkFailed: 1, usage: 2, internal: 3 } as const;
