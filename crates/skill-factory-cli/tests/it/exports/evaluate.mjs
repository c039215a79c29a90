// Runs a probe set's JavaScript or TypeScript export on test cases and prints one JSON line per
// case: {id, score, flags, verdict}, the score as its shortest round-trip text ("nan" for NaN).
//
//   node evaluate.mjs EXPORT CASES.json [TYPESCRIPT_MODULES]
//
// A .ts export is first type-checked (strict) and transpiled with the typescript package found
// in TYPESCRIPT_MODULES (a node_modules folder): Node 20 runs no TypeScript by itself.
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [file, casesFile, modules] = process.argv.slice(2);
let runnable = path.resolve(file);
if (file.endsWith('.ts')) {
  const ts = createRequire(path.join(path.resolve(modules), 'noop.js'))('typescript');
  const options = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, lib: ['lib.es2022.d.ts'] };
  const program = ts.createProgram([runnable], options);
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  if (problems.length) {
    console.error(`the TypeScript export does not type-check:\n${problems.join('\n')}`);
    process.exit(1);
  }
  const js = ts.transpileModule(readFileSync(runnable, 'utf8'), { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } }).outputText;
  runnable = path.join(mkdtempSync(path.join(tmpdir(), 'sf-export-')), 'export.mjs');
  writeFileSync(runnable, js);
}
const m = await import(pathToFileURL(runnable).href);
for (const c of JSON.parse(readFileSync(casesFile, 'utf8'))) {
  const score = m.score(c.answers);
  console.log(JSON.stringify({
    id: c.id,
    score: Number.isNaN(score) ? 'nan' : String(score),
    flags: m.flags(c.answers),
    verdict: typeof m.verdict === 'function' ? m.verdict(c.answers, c.example) : null,
  }));
}
