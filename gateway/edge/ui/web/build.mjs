// Builds the dashboard into ../dist: one script and one stylesheet with
// content hashes in their names (cached for good by the gateway), and the
// page that loads them. `make build` runs it before `go build`, which
// embeds ../dist.
import * as esbuild from "esbuild";
import { mkdirSync, rmSync, writeFileSync, readdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "dist");
for (const f of readdirSync(out, { withFileTypes: true })) {
  if (f.name !== "README.md") rmSync(join(out, f.name), { recursive: true, force: true });
}
mkdirSync(join(out, "assets"), { recursive: true });

const result = await esbuild.build({
  entryPoints: { app: join(here, "src", "main.jsx") },
  bundle: true,
  minify: true,
  sourcemap: false,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  jsx: "automatic",
  jsxImportSource: "preact",
  entryNames: "assets/[name]-[hash]",
  outdir: out,
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
});

const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => f.endsWith(".js"));
const css = outputs.find((f) => f.endsWith(".css"));
if (!js || !css) throw new Error("esbuild wrote no script or stylesheet: " + outputs.join(", "));

writeFileSync(
  join(out, "index.html"),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>voxgate</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/assets/${css}">
<script type="module" src="/ui/assets/${js}"></script>
</head>
<body>
<div id="app"></div>
<noscript>The voxgate dashboard needs JavaScript.</noscript>
</body>
</html>
`,
);
console.log(`dashboard: ${js}, ${css}`);
