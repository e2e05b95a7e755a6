/**
 * `healthd token`: make, list and revoke scoped tokens of the API, in the database like `apply` (every node
 * sharing it follows at once: access is looked up per request).
 */
import { Command, Option } from "commander";
import { UsageError } from "../platform/config.ts";
import { hashToken, newSecret } from "../http/access.ts";
import { tokenJson } from "../http/views.ts";
import { scopes, tokenBody } from "../domain/schema/token.ts";
import { validate } from "../domain/validate.ts";
import { systemClock } from "../platform/clock.ts";
import { openForReading, openForWriting, withStore } from "./database.ts";
import { dbOption } from "./options.ts";
import { table } from "./output.ts";

interface Flags {
  readonly db: string;
  readonly json?: boolean;
}

export function tokenCommand(): Command {
  const token = new Command("token").description("make, list and revoke scoped tokens of the API");
  token
    .command("create")
    .description("make a token; its secret is printed this once")
    .argument("<name>", "what it is for, unique (ci-deploy, grafana)")
    .addOption(new Option("--scope <scope>", "read, write, ping or admin").choices(scopes).makeOptionMandatory())
    .option("--server <id>", "limit it to this server (repeat for several; default: all)", (id: string, ids: string[] = []) => [...ids, id])
    .addOption(dbOption())
    .option("--json", "print JSON")
    .addHelpText(
      "after",
      `
Scopes: read may GET; write may also change servers, services and silences; ping may only send pings
(/ping/SERVER/SERVICE with Authorization: Bearer TOKEN); admin may do everything, tokens included.
Once a token exists the API needs one, as with --token.

Examples:
  healthd token create grafana --scope read
  healthd token create deploy-web --scope write --server web-01
  healthd token create backups --scope ping --server db-01`,
    )
    .action(async (name: string, flags: Flags & { scope: string; server?: string[] }) => {
      const parsed = validate(tokenBody, { name, scope: flags.scope, servers: flags.server ?? null });
      if (!parsed.ok) {
        const flag = (path: string) => (path === "/name" ? "NAME" : path.startsWith("/servers") ? "--server" : "--scope");
        throw new UsageError(parsed.errors.map((e) => `${flag(e.path)} ${e.message}`).join("; "));
      }
      const secret = newSecret();
      const { scope, servers = null } = parsed.value;
      const made = await withStore(openForWriting(flags.db), (store) => store.createToken({ name, scope, servers, hash: hashToken(secret) }, systemClock.now()));
      if (made === "name taken") throw new UsageError(`a token is named ${name}; choose another name, or revoke it first (healthd token revoke ${name})`);
      if (flags.json) return void process.stdout.write(JSON.stringify({ ...tokenJson(made), token: secret }) + "\n");
      const where = servers === null ? "every server" : servers.join(", ");
      process.stdout.write(`${secret}\n`);
      process.stderr.write(`healthd: token ${name} (id ${made.id}, ${scope} on ${where}); the line above is its secret, shown this once: keep it now\n`);
    });
  token
    .command("list")
    .description("list the tokens (never their secrets)")
    .addOption(dbOption())
    .option("--json", "print JSON")
    .action(async (flags: Flags) => {
      const tokens = (await withStore(openForReading(flags.db), (store) => store.tokens())).map(tokenJson);
      if (flags.json) return void process.stdout.write(JSON.stringify({ tokens }) + "\n");
      if (tokens.length === 0) return void process.stdout.write("no tokens\n");
      process.stdout.write(table([["ID", "NAME", "SCOPE", "SERVERS", "CREATED"], ...tokens.map((t) => [t.id, t.name, t.scope, t.servers?.join(",") ?? "all", t.createdAt])]));
    });
  token
    .command("revoke")
    .description("revoke a token by id or name: every node refuses it at once")
    .argument("<token>", "its id or name (healthd token list)")
    .addOption(dbOption())
    .action(async (ref: string, flags: Flags) => {
      const revoked = await withStore(openForWriting(flags.db), async (store) => {
        const found = (await store.tokens()).find((t) => t.name === ref || String(t.id) === ref);
        return found !== undefined && (await store.revokeToken(found.id)) ? found : undefined;
      });
      if (!revoked) throw new UsageError(`no token ${JSON.stringify(ref)}; healthd token list shows them`);
      process.stdout.write(`revoked token ${revoked.name} (id ${revoked.id})\n`);
    });
  return token;
}
