/**
 * The options of `healthd check`'s ad-hoc kinds other than http and the databases (check-kinds.ts builds the
 * check from them; check-flags.ts says which go together).
 */
import { Option } from "commander";
import { parsePositiveInt } from "../platform/config.ts";
import { recordTypes } from "../domain/schema/dns.ts";
import { starttlsProtocols } from "../domain/schema/tls.ts";
import { argument } from "./options.ts";

export const kindOptions = () => [
  new Option("--websocket <url>", "run an ad-hoc WebSocket check of this ws:// or wss:// URL instead"),
  new Option("--grpc <host:port>", "run an ad-hoc gRPC health check (grpc.health.v1.Health/Check) of this target instead"),
  new Option("--service <name>", 'ad-hoc gRPC: the service asked about (default "", the server as a whole)'),
  // One flag, two uses that cannot meet: bare it qualifies --grpc (as grpcs:// would), with a port it is a kind.
  new Option("--tls [host:port]", "with --grpc and no value: gRPC over TLS; with HOST:PORT: run an ad-hoc tls check of that port instead (the handshake, the chain, the certificate's days)"),
  new Option("--starttls <protocol>", `ad-hoc --tls: ask for TLS in the protocol's plain text first (${starttlsProtocols.join(", ")})`),
  new Option("--servername <name>", "ad-hoc --tls: the name asked for (SNI) and verified, when HOST is an address"),
  new Option("--icmp <host>", "run an ad-hoc icmp check (echo requests, as ping) of this host instead"),
  new Option("--count <n>", "ad-hoc --icmp: echoes sent, each of which must come back (1 to 10, default 3)").argParser(argument(parsePositiveInt("--count", 10))),
  new Option("--udp <host:port>", "run an ad-hoc UDP check of this port instead: send --send or --send-hex, any answer passes without --expect"),
  new Option("--tcp <host:port>", "run an ad-hoc TCP check of this port instead: connecting passes without --expect"),
  new Option("--send <text>", "ad-hoc --websocket, --udp, --tcp: what to send once connected (\\r \\n \\t read as such for udp and tcp); the first answer is judged"),
  new Option("--send-hex <hex>", "ad-hoc --udp: the datagram as hex bytes (0d0a, DEADBEEF) instead of --send"),
  new Option("--dns <name>", "run an ad-hoc DNS check of this name instead (passes on NOERROR with an answer without --expect)"),
  new Option("--server <host[:port]>", "ad-hoc --dns: the DNS server asked (default: the system's first resolver)"),
  new Option("--type <record>", `ad-hoc --dns: the record type asked for (${recordTypes.join(", ")}; default A)`),
];
