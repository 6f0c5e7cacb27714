// GET /v1/gateway/report?group_by=&since=&until=&format=&tenant= — the FinOps report over HTTP.
// An admin sees every tenant (and may narrow with ?tenant=); any other key sees only its own
// tenant's rows, whatever it asks for. Errors are OpenAI-shaped.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, toGatewayError } from '../../../middleware/errors.ts';
import type { UsageLedger } from '../types/ledger.ts';
import { CONTENT_TYPES, parseTime, produceReport } from '../report/render.ts';
import { GROUP_BY, REPORT_FORMATS, type GroupBy, type ReportFormat, type ReportQuery } from '../types/report.ts';

export const DEFAULT_ROUTE_FORMAT: ReportFormat = 'json';
export const DEFAULT_ROUTE_GROUP_BY: GroupBy = 'tenant';

export interface ReportCaller {
  tenant: string;
  admin: boolean;
}

export interface ReportRouteOptions {
  ledger: UsageLedger;
  /** Who is asking; throws a GatewayError (401) when the request carries no valid key. */
  authorize(req: FastifyRequest): ReportCaller;
  /** Files what the gateway still holds for the ledger (its after-answer queue) before reading. */
  settle?: () => void;
}

interface Query {
  group_by?: string;
  since?: string;
  until?: string;
  format?: string;
  tenant?: string;
  top?: string;
}

function oneOf<T extends string>(v: string | undefined, allowed: readonly T[], def: T, param: string): T {
  if (v === undefined || v === '') return def;
  if (!(allowed as readonly string[]).includes(v))
    throw new GatewayError('invalid_request', `${param} must be one of ${allowed.join(', ')}`, param);
  return v as T;
}

function time(v: string | undefined, param: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  try {
    return parseTime(v);
  } catch (err) {
    throw new GatewayError('invalid_request', (err as Error).message, param);
  }
}

export function parseReportQuery(q: Query, caller: ReportCaller): { query: ReportQuery; format: ReportFormat } {
  const query: ReportQuery = {
    groupBy: oneOf(q.group_by, GROUP_BY, DEFAULT_ROUTE_GROUP_BY, 'group_by'),
    since: time(q.since, 'since'),
    until: time(q.until, 'until'),
    // Scoping happens here, not in the ledger: a tenant key's own tenant overrides any ?tenant=.
    tenant: caller.admin ? q.tenant || undefined : caller.tenant,
  };
  if (q.top !== undefined) {
    const n = Number(q.top);
    if (!Number.isInteger(n) || n < 0 || n > 1000)
      throw new GatewayError('invalid_request', 'top must be an integer in 0..1000', 'top');
    query.top = n;
  }
  return { query, format: oneOf(q.format, REPORT_FORMATS, DEFAULT_ROUTE_FORMAT, 'format') };
}

export async function reportRoutes(app: FastifyInstance, opts: ReportRouteOptions): Promise<void> {
  app.get('/v1/gateway/report', async (req: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply) => {
    try {
      const caller = opts.authorize(req);
      opts.settle?.();
      const { query, format } = parseReportQuery(req.query ?? {}, caller);
      const text = await produceReport(opts.ledger, query, format);
      reply.header('content-type', CONTENT_TYPES[format]).header('cache-control', 'no-store');
      return reply.send(text);
    } catch (err) {
      const ge = toGatewayError(err);
      if (ge.code === 'internal_error') req.log.error({ err }, 'report failed');
      return reply.code(ge.status).send(ge.toBody());
    }
  });
}
