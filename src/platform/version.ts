import pkg from "../../package.json" with { type: "json" };

/** healthd's version, from package.json (inlined into the bundle at build time). */
export const version: string = pkg.version;
