// What can be checked of the deployment without a container engine or a cluster: the Dockerfile's shape, the
// Helm chart's templates rendered by a small renderer for the template subset they use (value lookups,
// toYaml | indent/nindent, sha256sum) and parsed as YAML, every `.Values.config.*` they read present in the
// config schema, and the chart's config accepted by the gateway's own config loader.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TSchema } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments, stringify } from 'yaml';
import { parseConfig } from '../../gateway/config/load.ts';
import { ConfigSchema } from '../../gateway/config/schema.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = join(ROOT, 'deploy/helm/ctxgate');
const values = parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
const templates = readdirSync(join(CHART, 'templates')).filter((f) => f.endsWith('.yaml'));
const text = (f: string) => readFileSync(join(CHART, 'templates', f), 'utf8');

function lookup(path: string, scope: Record<string, unknown>): unknown {
  let v: unknown = scope;
  for (const k of path.split('.').filter(Boolean)) {
    if (!v || typeof v !== 'object' || !(k in (v as object))) throw new Error(`template reads .${path}: not in values`);
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** Renders the subset of Go templates the chart uses. */
function render(src: string): string {
  const scope = { Values: values, Release: { Name: 'rel' } };
  return src.replace(
    /^([ \t]*)\{\{(-?) *(.*?) *\}\}$|\{\{-? *(.*?) *-?\}\}/gm,
    (_m, lead: string | undefined, _dash, whole: string | undefined, inline: string | undefined) => {
      const expr = (whole ?? inline)!;
      const [head, ...pipes] = expr.split('|').map((s) => s.trim());
      let out: string;
      let value: unknown;
      if (head.startsWith('toYaml ')) value = stringify(lookup(head.slice(7).replace(/^\./, ''), scope)).trimEnd();
      else value = lookup(head.replace(/^\./, ''), scope);
      out = String(value);
      for (const p of pipes) {
        const [fn, arg] = p.split(/\s+/);
        if (fn === 'sha256sum') out = createHash('sha256').update(out).digest('hex');
        else if (fn === 'indent' || fn === 'nindent') {
          const pad = ' '.repeat(Number(arg));
          out =
            (fn === 'nindent' ? '\n' : '') +
            out
              .split('\n')
              .map((l) => pad + l)
              .join('\n');
        } else throw new Error(`template function '${fn}' not supported by the test renderer`);
      }
      // a line that is only `{{- ... }}` joins the previous line (the dash eats the newline before it)
      return whole !== undefined && _dash ? out : (lead ?? '') + out;
    },
  );
}

/** Reads a dotted path; a leading `name.yaml` is one key, and `\u0000` stands for a dot inside a key. */
function dig(o: unknown, path: string): unknown {
  const m = /^([a-z]+\.yaml)\.?(.*)$/.exec(path);
  const keys = m ? [m[1], ...(m[2] ? m[2].split('.') : [])] : path.split('.');
  let v = o;
  for (const k of keys)
    v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k.replace('\u0000', '.')] : undefined;
  return v;
}

function schemaHas(path: string[]): boolean {
  let s: TSchema | undefined = ConfigSchema;
  for (const k of path) {
    const props: Record<string, TSchema> | undefined = (s as { properties?: Record<string, TSchema> } | undefined)
      ?.properties;
    if (!props || !(k in props)) return false;
    s = props[k];
  }
  return true;
}

describe('deployment on paper', () => {
  it('Dockerfile: Node 20 slim, production dependencies only, not root, serves the mounted config', () => {
    const d = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(d).toMatch(/^FROM node:20-slim$/m);
    expect(d).toMatch(/npm ci --omit=dev/);
    expect(d).toMatch(/^USER node$/m);
    expect(d).toContain('"serve", "--config", "/etc/ctxgate/config.yaml"');
  });

  it('the chart config is a valid ctxgate config (the gateway loader accepts it)', () => {
    const env = { CTXGATE_ADMIN_KEY: 'sk-admin-0123456789', CTXGATE_TEAM_A_KEY: 'sk-team-a-0123456789' };
    const cfg = parseConfig(values.config, 'values.yaml#config', env);
    expect(cfg.redis?.url).toMatch(/^redis:\/\//);
    expect(cfg.models[0].policy).toBe('ctxgate');
  });

  it('every .Values.config.* a template reads exists in the config schema', () => {
    const refs = templates.flatMap((f) =>
      [...text(f).matchAll(/\.Values\.config\.([A-Za-z0-9_.]+)/g)].map((m) => m[1]),
    );
    expect(refs.length).toBeGreaterThan(0);
    for (const r of refs) expect(schemaHas(r.split('.')), r).toBe(true);
  });

  it('templates render to YAML: N replicas, config from a ConfigMap, readiness on /ready, Prometheus annotations', () => {
    const docs: Record<string, unknown> = Object.fromEntries(
      templates.map((f) => {
        const parsed = parseAllDocuments(render(text(f)));
        for (const d of parsed) expect(d.errors, f).toEqual([]);
        return [f, parsed[0].toJSON() as unknown];
      }),
    );
    const dep = dig(docs, 'deployment.yaml');
    expect(dig(dep, 'kind')).toBe('Deployment');
    expect(dig(dep, 'spec.replicas')).toBe(values.replicaCount);
    const pod = dig(dep, 'spec.template');
    expect(dig(pod, 'metadata.annotations')).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/path': '/metrics',
      'prometheus.io/port': '8080',
    });
    expect(dig(pod, 'spec.containers.0.readinessProbe.httpGet.path')).toBe('/ready');
    expect(dig(pod, 'spec.securityContext.runAsNonRoot')).toBe(true);
    const cm = dig(docs, 'configmap.yaml');
    expect(dig(cm, 'kind')).toBe('ConfigMap');
    const volumes = dig(pod, 'spec.volumes') as { name: string; configMap?: { name: string } }[];
    expect(volumes.find((v) => v.name === 'config')?.configMap?.name).toBe(dig(cm, 'metadata.name'));
    // the mounted file is the values' config, byte for byte as YAML
    expect(parseYaml(dig(cm, 'data.config\u0000yaml') as string)).toEqual(values.config);
    expect(dig(docs, 'service.yaml.kind')).toBe('Service');
  });
});
