// Google's gcp-metadata (npm; tests/lib/gcp/package.json pins it) against the sidecar, for
// tests/integration/lifecycle_clients.sh. GCE_METADATA_HOST=127.0.0.1:PORT points it there.
// gcp-metadata sends Metadata-Flavor: Google and throws a RangeError on an answer without
// that header (build/src/index.js, metadataAccessor), so every answer it returns had it.
//
//   node tests/lib/gcp_client.mjs --modules DIR read
//       one JSON line: {"maintenance", "name", "id", "zone"} through gcpMetadata.instance()
//   node tests/lib/gcp_client.mjs --modules DIR wait [TIMEOUT_SEC]
//       instance({property: "maintenance-event", params: {wait_for_change: true}}): GCE's own
//       long poll (no last_etag); prints {"maintenance", "at"} (at: Date.now() / 1000) when
//       answered
// Exit status 1 (with the error on stderr) when the client throws.
import { createRequire } from "node:module";
import path from "node:path";

const argv = process.argv.slice(2);
let modules = "";
const rest = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--modules") modules = argv[++i];
  else rest.push(argv[i]);
}
if (!modules || !rest.length) {
  console.error("usage: gcp_client.mjs --modules DIR read|wait [TIMEOUT_SEC]");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modules), "x.js"));
const gcp = require("gcp-metadata");

try {
  if (rest[0] === "read") {
    const out = {
      maintenance: await gcp.instance("maintenance-event"),
      name: await gcp.instance("name"),
      id: await gcp.instance("id"),
      zone: await gcp.instance("zone"),
    };
    console.log(JSON.stringify(out));
  } else if (rest[0] === "wait") {
    const m = await gcp.instance({
      property: "maintenance-event",
      params: { wait_for_change: true, timeout_sec: rest[1] || "30" },
    });
    console.log(JSON.stringify({ maintenance: m, at: Date.now() / 1000 }));
  } else {
    console.error(`unknown command ${rest[0]}`);
    process.exit(2);
  }
} catch (e) {
  console.error(String(e && e.stack ? e.stack : e));
  process.exit(1);
}
