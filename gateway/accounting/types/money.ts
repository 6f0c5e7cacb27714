// Money as integers. Costs are kept in nano-dollars (1e-9 USD) so that every per-request cost,
// every ledger row and every report total is an exact integer sum: a price of $0.10 per million
// tokens is 0.1 micro-dollars per token, which micro-dollars cannot hold but nano-dollars can.
// Prices are held as pico-dollars per token (USD per Mtok × 1e6): any list price with up to six
// decimals per Mtok is exact, and tokens × pico stays below 2^53 for 10M tokens at $900/Mtok.

export const NANO_PER_USD = 1_000_000_000;
const PICO_PER_NANO = 1_000;

/** USD per million tokens -> integer pico-dollars per token. */
export function picoPerToken(usdPerMtok: number): number {
  return Math.round(usdPerMtok * 1e6);
}

/** Cost of `tokens` at `pico` pico-dollars per token, in integer nano-dollars (half up). */
export function tokenCostNusd(tokens: number, pico: number): number {
  if (tokens <= 0 || pico <= 0) return 0;
  return Math.floor((tokens * pico + PICO_PER_NANO / 2) / PICO_PER_NANO);
}

/** $/GPU-hour held as integer micro-dollars per hour. */
export function microPerHour(usdPerHour: number): number {
  return Math.round(usdPerHour * 1e6);
}

/** Cost of `ms` GPU milliseconds at `microPerHour` µUSD/hour, in integer nano-dollars.
 *  nUSD = µUSD/h × 1e3 × ms / 3.6e6 = µUSD/h × ms / 3600. */
export function gpuCostNusd(ms: number, microHour: number): number {
  if (!(ms > 0) || microHour <= 0) return 0;
  return Math.round((microHour * ms) / 3600);
}

/** Exact decimal USD string of a nano-dollar amount, trailing zeros trimmed ("0.0001234"). */
export function formatUsdExact(nusd: number): string {
  const neg = nusd < 0;
  const abs = Math.abs(Math.trunc(nusd));
  const whole = Math.floor(abs / NANO_PER_USD);
  const frac = String(abs % NANO_PER_USD)
    .padStart(9, '0')
    .replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole}${frac ? '.' + frac : ''}`;
}

/** Nano-dollars as a JSON number in USD (9 decimals is exact for any realistic total). */
export function nusdToUsd(nusd: number): number {
  return Number((nusd / NANO_PER_USD).toFixed(9));
}

/** Human money for tables: "$12.34", small amounts keep significant digits ("$0.000123"). */
export function formatUsd(nusd: number): string {
  const usd = nusd / NANO_PER_USD;
  const abs = Math.abs(usd);
  if (abs === 0) return '$0.00';
  if (abs >= 0.01) return `${usd < 0 ? '-' : ''}$${abs.toFixed(2)}`;
  return `${usd < 0 ? '-' : ''}$${abs.toPrecision(3)}`;
}
