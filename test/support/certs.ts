/** TLS certificates made at test time with openssl (on every machine this runs on). */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Cert {
  readonly key: string;
  readonly cert: string;
}

const subject = ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"];

/** A self-signed certificate for 127.0.0.1 valid from now for `days`. */
export function selfSigned(dir: string, days: number): Cert {
  const key = join(dir, `key-${days}.pem`);
  const cert = join(dir, `cert-${days}.pem`);
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", key, "-out", cert, "-days", String(days), ...subject,
  ], { stdio: "ignore" });
  return { key: readFileSync(key, "utf8"), cert: readFileSync(cert, "utf8") };
}

/** A self-signed certificate that expired in 2020 (`openssl ca` is the one tool that sets past dates). */
export function expired(dir: string): Cert {
  writeFileSync(join(dir, "index.txt"), "");
  writeFileSync(join(dir, "serial"), "01\n");
  writeFileSync(
    join(dir, "ca.cnf"),
    `[ca]\ndefault_ca = d\n[d]\ndatabase = ${join(dir, "index.txt")}\nnew_certs_dir = ${dir}\nserial = ${join(dir, "serial")}\n` +
      `default_md = sha256\npolicy = p\ncopy_extensions = copy\n[p]\ncommonName = supplied\n`,
  );
  const key = join(dir, "expired-key.pem");
  const csr = join(dir, "expired.csr");
  const cert = join(dir, "expired-cert.pem");
  execFileSync("openssl", [
    "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", csr, ...subject,
  ], { stdio: "ignore" });
  execFileSync("openssl", [
    "ca", "-batch", "-config", join(dir, "ca.cnf"), "-selfsign", "-keyfile", key, "-in", csr, "-out", cert,
    "-startdate", "20200101000000Z", "-enddate", "20200201000000Z", "-notext",
  ], { stdio: "ignore" });
  return { key: readFileSync(key, "utf8"), cert: readFileSync(cert, "utf8") };
}
