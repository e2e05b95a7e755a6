import { run } from "./cli/program.ts";

// React (the status page, tail's view) runs its production build unless told otherwise: several times faster.
process.env.NODE_ENV ??= "production";

// A reader that goes away (healthd check --json | head -1) ends the command quietly, as it would a shell tool.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
}

process.exitCode = await run(process.argv);
