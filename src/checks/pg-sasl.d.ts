// pg's SCRAM-SHA-256 client (pg/lib/crypto/sasl.js), reachable through pg's "./lib/*" export; pg ships no types for it.
declare module "pg/lib/crypto/sasl.js" {
  interface ScramSession {
    mechanism: string;
    response: string;
  }
  export function startSession(mechanisms: string[]): ScramSession;
  export function continueSession(session: ScramSession, password: string, serverData: string): Promise<void>;
  export function finalizeSession(session: ScramSession, serverData: string): void;
}
