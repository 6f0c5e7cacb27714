// The tenant and the gateway's key that one request's signature checks (Anthropic thinking) or seal
// openings (Responses reasoning) read: the one input of a memoised translation beyond the message
// itself, so a memo records it and is made again under another. Derived once per request, and only
// when a check needs it (one MAC).
import type { ParseContext } from './types.ts';

export class KeyRead {
  private keyed: string | undefined;
  constructor(
    protected readonly ctx: ParseContext,
    private readonly label: string,
  ) {}

  /** `tenant NUL mac(label)`; '' without a key (every signature or seal is foreign then). */
  keyedBy(): string {
    const { ctx } = this;
    this.keyed ??= ctx.mac ? `${ctx.tenant}\u0000${ctx.mac(this.label)}` : '';
    return this.keyed;
  }
}
