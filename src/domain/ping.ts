/**
 * What a ping may carry, known to the daemon that takes pings (src/http/ping.ts) and to the commands that send
 * them (healthd run, healthd ping), which load nothing else of healthd.
 */

/** What a ping's body may keep, in bytes (Healthchecks.io keeps as much). */
export const pingBodyLimit = 10_000;
