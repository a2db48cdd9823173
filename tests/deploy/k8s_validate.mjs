// Validates Kubernetes objects against the API's JSON schemas, with the
// kubernetes-models package (npm; pinned in package.json and its lock).
//
// Reads a JSON array of {"name": ..., "doc": {...}, "expect": "valid" |
// "invalid"} on stdin (tests/deploy/check.py turns the YAML into it) and
// prints one line per object: "ok NAME" or "FAIL NAME: why". Exits 1 if any
// object did not come out as expected. An "invalid" entry is a negative
// control: a validator that accepts it could not fail at all.
//
// It checks types, required fields and enums; it does not refuse unknown
// fields (the schemas allow them), which check.py's own cross-checks and a
// real API server's strict field validation cover.
//
// check.py copies this file next to the node_modules it installs, so that
// the bare "kubernetes-models" imports resolve there.
import { readFileSync } from "node:fs";

const items = JSON.parse(readFileSync(0, "utf8"));
let bad = 0;
for (const { name, doc, expect } of items) {
  let verdict;
  try {
    // "apps/v1" -> kubernetes-models/apps/v1/Deployment; "v1" -> .../v1/Service
    const mod = await import(`kubernetes-models/${doc.apiVersion}/${doc.kind}`);
    const Model = mod[doc.kind] ?? mod.default;
    new Model(doc).validate();
    verdict = { valid: true };
  } catch (e) {
    verdict = { valid: false, why: String(e.message || e).split("\n")[0] };
  }
  const good = (expect === "invalid") !== verdict.valid;
  if (!good) bad++;
  const what = verdict.valid ? "valid" : `invalid (${verdict.why})`;
  console.log(`${good ? "ok" : "FAIL"} ${name}: ${what}, expected ${expect}`);
}
process.exit(bad ? 1 : 0);
