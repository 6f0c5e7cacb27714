// The ingress routes: one POST per protocol adapter (gateway/ingress/), plus the read-side routes
// two APIs define: Anthropic's token counting and the stored Responses (GET/DELETE by id).
// Returns the error shaper of each route so server.ts answers errors in the caller's API.
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import type { ChatRequest } from '../../middleware/types.ts';
import type { Principal } from '../auth.ts';
import type { GatewayContext } from '../context.ts';
import { GatewayError } from '../../middleware/errors.ts';
import { anthropicErrorBody } from '../ingress/anthropic-answer.ts';
import { parseAnthropic } from '../ingress/anthropic-request.ts';
import { openaiErrorBody, requireObject } from '../ingress/openai-chat.ts';
import type { ResponseStore } from '../ingress/responses-store.ts';
import type { IngressAdapter, ShapedError } from '../ingress/types.ts';
import { handleProxy } from '../proxy/handle.ts';
import { engineOf } from '../upstream/engines.ts';
import type { ModelRoute } from '../upstream/fleet.ts';

export type ErrorShaper = (err: ShapedError) => unknown;

/** Token counting without an engine tokenizer: bytes / 4 of the canonical body (flagged). */
const BYTES_PER_TOKEN = 4;
const TOKENIZE_TIMEOUT_MS = 10_000;

async function countTokens(route: ModelRoute, body: ChatRequest): Promise<{ n: number; exact: boolean }> {
  const path = engineOf(route.config).tokenizePath;
  const worker = route.workers.find((w) => w.healthy);
  if (path && worker) {
    try {
      const res = await request(worker.url + path, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(worker.apiKey ? { authorization: `Bearer ${worker.apiKey}` } : {}),
        },
        body: JSON.stringify({
          model: route.config.upstream_model ?? body.model,
          messages: body.messages,
          tools: body.tools,
          add_generation_prompt: true,
        }),
        signal: AbortSignal.timeout(TOKENIZE_TIMEOUT_MS),
      });
      const out = (await res.body.json()) as { count?: unknown };
      if (res.statusCode < 300 && typeof out.count === 'number') return { n: out.count, exact: true };
    } catch {
      // the estimate below answers; counting must not fail on a busy worker
    }
  }
  return { n: Math.ceil(JSON.stringify(body.messages).length / BYTES_PER_TOKEN), exact: false };
}

export function registerIngressRoutes(
  app: FastifyInstance,
  gw: GatewayContext,
  adapters: IngressAdapter[],
  store: ResponseStore,
): Map<string, ErrorShaper> {
  const shapers = new Map<string, ErrorShaper>();
  for (const a of adapters) {
    app.post(a.path, (req, reply) => handleProxy(gw, a, req, reply));
    shapers.set(a.path, a.errorBody);
  }

  app.post('/v1/messages/count_tokens', async (req, reply) => {
    const p = req.principal as Principal;
    const b = requireObject(req.body);
    // count_tokens takes no max_tokens; the translation wants one.
    const parsed = parseAnthropic(
      { ...b, max_tokens: 1, stream: false },
      { tenant: p.tenant, maxMessages: gw.config.limits.max_messages },
    );
    const route = gw.fleet.get(parsed.model);
    if (!route)
      throw new GatewayError('model_not_found', `model '${parsed.model}' does not exist (see GET /v1/models)`, 'model');
    const { n, exact } = await countTokens(route, parsed.body);
    reply.header('x-ctxgate-token-count', exact ? 'engine' : 'estimate');
    return { input_tokens: n };
  });
  shapers.set('/v1/messages/count_tokens', anthropicErrorBody);

  app.get('/v1/responses/:id', async (req) => {
    const p = req.principal as Principal;
    const id = (req.params as { id: string }).id;
    const r = await store.get(p.tenant, id);
    if (!r) throw new GatewayError('not_found', `response '${id}' not found`, 'response_id');
    return r.response;
  });
  app.delete('/v1/responses/:id', async (req) => {
    const p = req.principal as Principal;
    const id = (req.params as { id: string }).id;
    if (!(await store.delete(p.tenant, id)))
      throw new GatewayError('not_found', `response '${id}' not found`, 'response_id');
    return { id, object: 'response', deleted: true };
  });
  shapers.set('/v1/responses/:id', openaiErrorBody);
  return shapers;
}
