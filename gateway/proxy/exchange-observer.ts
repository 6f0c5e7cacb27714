// The request's side of its upstream attempts (AttemptObserver for handle.ts's UpstreamCall):
// worker, routing choice and attempt count on the Exchange, the answer's ctxgate headers (worker,
// attempts, session, prefix diagnostics, receipts) and the upstream headers configured to pass.
import type { FastifyReply } from 'fastify';
import { parseSimTiming } from '../accounting/record/extract.ts';
import type { GatewayContext } from '../context.ts';
import type { Attempt, AttemptObserver } from './attempt.ts';
import type { Exchange } from './finish.ts';

/** The request's view of its attempts: worker, routing choice, attempt count, headers, waits.
 *  A class: one object per request, its methods shared (an object literal made three closures). */
export class ExchangeObserver implements AttemptObserver {
  constructor(
    private readonly gw: GatewayContext,
    private readonly ex: Exchange,
    private readonly reply: FastifyReply,
  ) {}

  onBegin(a: Attempt): void {
    const ex = this.ex;
    ex.worker = a.worker;
    ex.choice = a.choice;
    ex.attempts = a.n;
    ex.attemptList.push(a);
  }

  onHeaders(a: Attempt): void {
    const { ex, reply } = this;
    setResponseHeaders(reply, ex);
    if (a.statusCode >= 500) return;
    const h = a.responseHeaders;
    const timing = h['x-sim-timing'];
    if (timing !== undefined) ex.timing = parseSimTiming(Array.isArray(timing) ? timing[0] : timing);
    for (const name of this.gw.config.upstream.forward_response_headers) {
      const v = h[name];
      if (v !== undefined) reply.header(name, v);
    }
  }

  onEnd(a: Attempt): void {
    // Waiting for the status line; the body's wait is the relay's (it knows its own processing).
    this.ex.upstreamWaitMs += (a.headersAt ?? a.endedAt ?? a.startedAt) - a.startedAt;
  }
}

export function setResponseHeaders(reply: FastifyReply, ex: Exchange): void {
  if (ex.worker) reply.header('x-ctxgate-worker', ex.worker.id);
  reply.header('x-ctxgate-attempts', String(ex.attempts));
  const r = ex.result;
  if (!r) return;
  if (r.sessionId) reply.header('x-ctxgate-session', r.sessionId);
  if (r.prefix) {
    const p = r.prefix;
    const brk =
      p.break_cause === 'none' ? 'none' : `${p.break_cause}@${p.break_token_index ?? p.break_message_index ?? '?'}`;
    reply.header('x-ctxgate-prefix', `cached=${p.predicted_cached_tokens}; break=${brk}`);
  }
  if (r.receipts.length) reply.header('x-ctxgate-receipt', receiptHeader(r.receipts));
}

/** Receipt header budget: proxies commonly cap one header line at 4–8 KiB. */
export const RECEIPT_HEADER_MAX = 1024;

export function receiptHeader(receipts: { stage: string; action: string }[]): string {
  let s = '';
  for (const r of receipts) {
    const item = `${r.stage}:${r.action}`.replace(/[^\x21-\x7e]/g, '_');
    if (s.length + item.length + 1 > RECEIPT_HEADER_MAX) break;
    s += s ? `,${item}` : item;
  }
  return s;
}
