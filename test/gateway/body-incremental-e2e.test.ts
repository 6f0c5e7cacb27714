// The gateway's JSON body parser, over a real socket: a body that extends an earlier one is parsed
// incrementally (gateway/body/) and still gives exactly JSON.parse's value, and exactly the
// gateway's errors for a tail that is invalid or nests too deep.
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type TestRig } from '../helpers/gateway.ts';

let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

interface Echo {
  body: unknown;
  /** Whether the first message is the same object as in an earlier request's body. */
  reused: boolean;
}

async function post(
  body: string,
): Promise<{ status: number; json: Echo & { error?: { code: string; message: string } } }> {
  const r = await fetch(`${rig!.gw.url}/test/echo`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: r.status, json: (await r.json()) as Echo & { error?: { code: string; message: string } } };
}

const message = (i: number): string =>
  JSON.stringify({
    role: i % 2 ? 'assistant' : 'user',
    content: `turn ${i}: ${'résumé "quoted" \\ line\n'.repeat(40)}`,
  });
const body = (n: number, tail = ''): string =>
  `{"model":"m1","messages":[${Array.from({ length: n }, (_, i) => message(i)).join(',')}${tail}],"max_tokens":16}`;

describe('incremental body parse through the gateway', () => {
  it('equals JSON.parse call after call, reusing the earlier call objects, with the same errors', async () => {
    const firsts = new Set<unknown>();
    rig = await startRig({
      deps: {
        registerRoutes: (app) => {
          app.post('/test/echo', async (req) => {
            // A route that accepted its body lets the memo keep it, as the proxy does.
            rig!.gw.ctx.bodies.keep(req.pendingBody);
            const b = req.body as { messages?: unknown[] };
            const reused = firsts.has(b.messages?.[0]);
            firsts.add(b.messages?.[0]);
            return { body: b, reused };
          });
        },
      },
    });
    const first = body(6);
    expect(first.length).toBeGreaterThan(4096);
    const a = await post(first);
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ body: JSON.parse(first), reused: false });
    const next = body(8);
    const b = await post(next);
    expect(b.json).toEqual({ body: JSON.parse(next), reused: true });
    // A second top-level "messages" after the shared bytes: the last one wins, as in JSON.parse.
    const dup = `${next.slice(0, -1)},"messages":[{"role":"user","content":"x"}]}`;
    const c = await post(dup);
    expect(c.status).toBe(200);
    expect(c.json.body).toEqual(JSON.parse(dup));
    const cut = await post(body(8, `,{"role":`));
    expect([cut.status, cut.json.error?.code]).toEqual([400, 'invalid_json']);
    const deep = await post(body(8, `,{"role":"user","content":${'['.repeat(200)}${']'.repeat(200)}}`));
    expect(deep.status).toBe(400);
    expect(deep.json.error?.message).toMatch(/max_json_depth/);
    // and the body after those still parses against the good ones
    const after = body(9);
    expect((await post(after)).json).toEqual({ body: JSON.parse(after), reused: true });
  });
});
