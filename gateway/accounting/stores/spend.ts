// The spend lookup budgets need (gateway/limits/budget.ts SpendLookup): USD a tenant spent since
// an instant, from the usage ledger. SQLite answers with one indexed SUM over (tenant, time);
// other stores scan their records for that tenant and range.
import { NANO_PER_USD } from '../types/money.ts';
import type { UsageLedger } from '../types/ledger.ts';

export function createSpendLookup(ledger: UsageLedger): (tenant: string, sinceMs: number) => Promise<number> {
  return async (tenant, sinceMs) => {
    if (ledger.spendNusd) return (await ledger.spendNusd(tenant, sinceMs)) / NANO_PER_USD;
    await ledger.flush();
    let n = 0;
    for await (const r of ledger.query({ tenant, since: sinceMs })) n += r.costNusd;
    return n / NANO_PER_USD;
  };
}
