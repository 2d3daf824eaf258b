// Validate Kubernetes objects against the API's schemas with the npm
// package kubernetes-models (its validators are generated from the
// Kubernetes OpenAPI definitions): types, required fields, enumerations,
// formats.  Used by deploy_static.py:
//   node k8s_schema.mjs MODULES_DIR < documents.json
// where documents.json is [[file, object], ...].  Prints one line per
// object, "ok FILE KIND NAME" or "bad FILE KIND NAME: reason"; exits 1
// when any is bad, 2 when the validator cannot be loaded.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(process.argv[2] || '', 'node_modules', 'kubernetes-models');
if (!existsSync(join(root, 'package.json'))) {
  console.log(`no kubernetes-models in ${root} (scripts/deps.sh installs it)`);
  process.exit(2);
}
const docs = JSON.parse(readFileSync(0, 'utf8'));
let bad = 0;
for (const [file, obj] of docs) {
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : [null, obj.apiVersion];
  const mod = join(root, ...(group ? [group, version] : [version]), obj.kind + '.js');
  const what = `${file} ${obj.kind} ${obj.metadata && obj.metadata.name}`;
  if (!existsSync(mod)) {
    console.log(`bad ${what}: no schema for ${obj.apiVersion} ${obj.kind}`);
    bad++;
    continue;
  }
  try {
    const m = await import(pathToFileURL(mod).href);
    new m[obj.kind](obj).validate();
    console.log(`ok ${what}`);
  } catch (e) {
    console.log(`bad ${what}: ${String(e.message || e).split('\n').slice(0, 3).join(' ')}`);
    bad++;
  }
}
process.exit(bad ? 1 : 0);
