// One call that wires usage accounting into the gateway: prices (config + pricing table,
// validated at load), the ledger from config, the recorder as onUsage, the budget spend lookup,
// the report route, the cost/savings metrics, and ledger flush at shutdown.
//   const reporting = createReporting(config);
//   const gw = await startGateway(config, { ...reporting.deps });
import type { FastifyInstance } from 'fastify';
import type { Principal } from '../../auth.ts';
import type { GatewayConfig } from '../../config/schema.ts';
import type { GatewayContext, GatewayDeps } from '../../context.ts';
import { openLedger } from '../stores/open.ts';
import { createSpendLookup } from '../stores/spend.ts';
import type { UsageLedger } from '../types/ledger.ts';
import { reportRoutes } from './report.ts';
import { createPricingLookup, loadPricingTable, type Pricing, type PricingTable } from '../record/pricing.ts';
import { buildUsageRecord, usageHeaders } from '../record/record.ts';
import { createUsageRecorder, type UsageRecorder } from '../record/recorder.ts';
import type { UsageInput } from '../types/usage.ts';

export interface ReportingOptions {
  /** Pricing fallback table; default configs/pricing.yaml. `null`: explicit prices only. */
  pricingTable?: PricingTable | null;
  /** Reject unpriced models at load (default true). */
  costReporting?: boolean;
  /** Use this ledger instead of opening the one the config names. */
  ledger?: UsageLedger;
  onLedgerError?: (err: unknown) => void;
}

export interface Reporting {
  ledger: UsageLedger;
  recorder: UsageRecorder;
  pricingFor(model: string): Pricing | undefined;
  /** `x-ctxgate-cached-tokens` / `x-ctxgate-cost-usd` for a non-stream response, before it is sent. */
  headersFor(ev: UsageInput): Record<string, string>;
  deps: Required<Pick<GatewayDeps, 'onUsage' | 'spendSince' | 'registerRoutes'>>;
  close(): Promise<void>;
}

/** Throws PricingError (load-time) when cost reporting is on and a model has no price. */
export function createReporting(config: GatewayConfig, o: ReportingOptions = {}): Reporting {
  const table = o.pricingTable === undefined ? loadPricingTable() : o.pricingTable;
  const pricingFor = createPricingLookup(config, { table, costReporting: o.costReporting });
  const ledger = o.ledger ?? openLedger(config, { onError: o.onLedgerError });
  const recorder = createUsageRecorder({ ledger, pricingFor });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      await recorder.close();
      await ledger.close();
    })());
  return {
    ledger,
    recorder,
    pricingFor,
    headersFor: (ev) => usageHeaders(buildUsageRecord(ev, pricingFor(ev.model))),
    deps: {
      onUsage: recorder.onUsage,
      spendSince: createSpendLookup(ledger),
      registerRoutes(app: FastifyInstance, ctx: GatewayContext) {
        recorder.attachMetrics(ctx.metrics);
        void app.register(reportRoutes, {
          ledger,
          authorize: (req) => req.principal as Principal,
          settle: () => ctx.afterAnswer.drain(),
        });
        // After in-flight requests finish and the after-answer queue is drained, so their records are in the last flush.
        ctx.onShutdown(
          () => new Promise<void>((resolve) => setImmediate(() => void close().then(resolve))),
          'usage-ledger',
        );
      },
    },
    close,
  };
}
