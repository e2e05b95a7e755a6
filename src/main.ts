import { fast } from "./cli/fast.ts";

// React (the status page, tail's view) runs its production build unless told otherwise: several times faster.
process.env.NODE_ENV ??= "production";

// A reader that goes away (healthd check --json | head -1) ends the command quietly, as it would a shell tool.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
}

// run and ping (crontab lines) first, with their light modules only; every other command, and anything they
// do not read for certain, loads the whole program (commander, the store, the daemon's modules).
process.exitCode = (await fast(process.argv)) ?? (await (await import("./cli/program.ts")).run(process.argv));
