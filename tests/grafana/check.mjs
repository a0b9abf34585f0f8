// Checks every dashboard in dashboards/ against @grafana/schema's types: the
// dashboard model (raw/dashboard/x), and each panel's options, its field
// config's `custom` part and every override property against that panel
// plugin's own types (raw/composable/<plugin>/panelcfg/x). The JSON is
// written into a TypeScript file as typed object literals and compiled with
// tsc --noEmit --strict, so a misspelled key, a wrong type, a missing
// required option or an unknown override property fails, naming the line.
//
// Options and field config are checked as deep partials: Grafana fills what
// a dashboard leaves out with the plugin's defaults, so only what is written
// must be right. Annotations and variables may carry their data source's
// own keys (a Prometheus annotation's `expr`, a query variable's
// `definition`), which the dashboard model leaves to the data source: their
// known keys are typed, the others allowed.
//
// The schema's enums are declared as TypeScript enums, which a JSON string
// can never be assigned to; they are rewritten as unions of their values
// (with a namespace of the same names, so `Mode.Auto` still names a type),
// which is what the JSON model carries.
//
//   node tests/grafana/check.mjs OUT_DIR [DASHBOARDS_DIR]
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const types = path.join(here, 'node_modules/@grafana/schema/dist/types');
const out = process.argv[2];
const dashboards = process.argv[3] ?? path.join(root, 'dashboards');
if (!out) {
  console.error('usage: node check.mjs OUT_DIR [DASHBOARDS_DIR]');
  process.exit(2);
}
if (!fs.existsSync(types)) {
  console.error(`${types} is missing: run npm ci --prefix tests/grafana`);
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });

// Panel types the dashboards may use, and the schema's folder of each.
const plugins = { table: 'table', timeseries: 'timeseries', stat: 'stat', 'state-timeline': 'statetimeline' };

function unenum(text) {
  const lines = text.split('\n');
  const result = [];
  for (let i = 0; i < lines.length; i++) {
    const head = lines[i].match(/^export declare enum (\w+) \{$/);
    if (!head) {
      result.push(lines[i]);
      continue;
    }
    const members = [];
    for (i++; lines[i] !== '}'; i++) {
      const m = lines[i].match(/^\s*(\w+) = ("[^"]*"|-?\d+),?$/);
      if (m) members.push([m[1], m[2]]);
    }
    result.push(`export type ${head[1]} = ${members.map((m) => m[1]).join(' | ')};`);
    result.push(`export declare namespace ${head[1]} {`);
    // A member named like a built-in type (VariableRefresh.never) cannot be
    // a type alias; nothing refers to one by name.
    const reserved = ['any', 'unknown', 'never', 'string', 'number', 'boolean', 'object', 'symbol', 'bigint', 'undefined', 'void'];
    for (const [name, value] of members) {
      if (!reserved.includes(name)) result.push(`  type ${name} = ${value};`);
    }
    result.push('}');
  }
  return result.join('\n').replaceAll("from '@grafana/schema'", "from './common'");
}

const copy = (from, to) => fs.writeFileSync(path.join(out, to), unenum(fs.readFileSync(path.join(types, from), 'utf8')));
copy('common/common.gen.d.ts', 'common.d.ts');
copy('raw/dashboard/x/types.gen.d.ts', 'dashboard.d.ts');
for (const [type, dir] of Object.entries(plugins)) {
  copy(`raw/composable/${dir}/panelcfg/x/types.gen.d.ts`, `panel_${dir}.d.ts`);
}

const lit = (v) => JSON.stringify(v, null, 2);
const exported = (dir, name) =>
  new RegExp(`^export (interface|type) ${name}\\b`, 'm').test(fs.readFileSync(path.join(out, `panel_${dir}.d.ts`), 'utf8'));
let ts = "import type { Dashboard, FieldConfig, AnnotationQuery, VariableModel } from './dashboard';\n";
for (const dir of Object.values(plugins)) ts += `import type * as ${dir} from './panel_${dir}';\n`;
ts += `type DeepPartial<T> = T extends (infer U)[] ? DeepPartial<U>[] : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;
type Open = { [key: string]: unknown };
`;
const files = fs.readdirSync(dashboards).filter((f) => f.endsWith('.json')).sort();
if (files.length === 0) throw new Error('no dashboards');
files.forEach((file, d) => {
  const dashboard = JSON.parse(fs.readFileSync(path.join(dashboards, file), 'utf8'));
  // Import metadata, not part of the model.
  const { __inputs, __requires, ...model } = dashboard;
  ts += `\n// ${file}\n`;
  ts += `const d${d}a: (AnnotationQuery & Open)[] = ${lit(model.annotations?.list ?? [])};\n`;
  ts += `const d${d}v: (VariableModel & Open)[] = ${lit(model.templating?.list ?? [])};\n`;
  const body = lit({ ...model, annotations: { list: '@ANNOTATIONS@' }, templating: { list: '@VARIABLES@' } })
    .replace('"@ANNOTATIONS@"', `d${d}a`)
    .replace('"@VARIABLES@"', `d${d}v`);
  ts += `const d${d}: Dashboard = ${body};\n`;
  for (const panel of dashboard.panels) {
    if (panel.type === 'row') continue;
    const plugin = plugins[panel.type];
    const at = `${file} panel ${panel.id} (${panel.title})`;
    if (!plugin) throw new Error(`${at}: panel type ${panel.type} is not checked; add it to plugins`);
    const custom = exported(plugin, 'FieldConfig') ? `DeepPartial<${plugin}.FieldConfig>` : 'Record<string, never>';
    ts += `// ${at}\n`;
    ts += `const d${d}p${panel.id}o: DeepPartial<${plugin}.Options> = ${lit(panel.options ?? {})};\n`;
    ts += `const d${d}p${panel.id}c: ${custom} = ${lit(panel.fieldConfig?.defaults?.custom ?? {})};\n`;
    (panel.fieldConfig?.overrides ?? []).forEach((o, n) => {
      o.properties.forEach((p, k) => {
        const name = `d${d}p${panel.id}o${n}_${k}`;
        const key = p.id.match(/^custom\.(\w+)$/);
        if (key && !exported(plugin, 'FieldConfig')) throw new Error(`${at}: ${p.id}, but ${panel.type} has no custom field config`);
        const type = key
          ? `DeepPartial<Required<${plugin}.FieldConfig>[${JSON.stringify(key[1])}]>`
          : `Required<FieldConfig>[${JSON.stringify(p.id)}]`;
        ts += `const ${name}: ${type} = ${lit(p.value)};\n`;
      });
    });
  }
});
const file = path.join(out, 'check.ts');
fs.writeFileSync(file, ts);
const tsc = path.join(here, 'node_modules/typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--noUnusedLocals', 'false', '--target', 'es2022',
    '--moduleResolution', 'node', file], { stdio: 'pipe' });
} catch (e) {
  console.error(`${file} does not type-check against @grafana/schema:\n${e.stdout}${e.stderr}`);
  process.exit(1);
}
console.log(`${files.length} dashboards match @grafana/schema (${file})`);
