/** Kuma's values as its database and backups hold them: loosely typed, read into what healthd needs. */
export const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
export const num = (v: unknown, fallback: number) => (typeof v === "number" && Number.isFinite(v) ? v : typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : fallback);
export const bool = (v: unknown) => v === true || v === 1 || v === "1" || v === "true";
