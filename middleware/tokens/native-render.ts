// Chat templates with a plain TypeScript rendering (the jinja interpreter allocates a value per
// node and message, the largest per-call cost of the pipeline), picked by the SHA-256 of the
// template source, so only the exact bundled text is ever rendered natively. Every native render
// of a renderer's first CROSS_CHECK_FIRST and one in CROSS_CHECK_EVERY after that is also rendered
// by the interpreter and compared; one difference switches the native rendering off for that
// renderer (the interpreter's text is returned) and is counted (nativeRenderStats).
// Cost: the native rendering's (O(prompt characters)) plus an interpreter render per cross-check.
import { createHash } from 'node:crypto';
import type { TemplateMessage } from './template-input.ts';
import type { ToolDef } from '../types.ts';
import { QWEN3_TEMPLATE_SHA256, renderQwen3 } from './qwen3-template.ts';

/** Native renders cross-checked against the interpreter first, per renderer. */
export const CROSS_CHECK_FIRST = 32;
/** After the first ones, one native render in this many is cross-checked. */
export const CROSS_CHECK_EVERY = 256;

export type NativeRender = (
  messages: readonly TemplateMessage[],
  tools: readonly ToolDef[] | undefined,
  addGenerationPrompt: boolean,
  extra: Record<string, unknown> | undefined,
  toolsJson?: string,
) => string | undefined;

const NATIVE: ReadonlyMap<string, NativeRender> = new Map([[QWEN3_TEMPLATE_SHA256, renderQwen3]]);

/** The native rendering of a template source, if it has one. */
export function nativeRenderFor(source: string): NativeRender | undefined {
  if (NATIVE.size === 0) return undefined;
  return NATIVE.get(createHash('sha256').update(source).digest('hex'));
}

const stats = { rendered: 0, checked: 0, mismatches: 0 };

/** Process-wide counts: native renders, those cross-checked, and differences found. */
export function nativeRenderStats(): Readonly<typeof stats> {
  return { ...stats };
}

/** Adds what another thread's native renders counted (a render pool thread has its own copy of this module). */
export function countNativeRendersFrom(d: Readonly<typeof stats>): void {
  stats.rendered += d.rendered;
  stats.checked += d.checked;
  stats.mismatches += d.mismatches;
}

/** Per renderer: the native rendering and its cross-check schedule. */
export class CheckedNative {
  private uses = 0;
  private off = false;

  constructor(private readonly native: NativeRender) {}

  /**
   * The prompt from the native rendering (cross-checked on schedule against `interpret`), or
   * undefined when the native rendering declines or is off (the caller interprets).
   */
  render(
    messages: readonly TemplateMessage[],
    tools: readonly ToolDef[] | undefined,
    gen: boolean,
    extra: Record<string, unknown> | undefined,
    interpret: () => string,
    toolsJson?: string,
  ): string | undefined {
    if (this.off) return undefined;
    const text = this.native(messages, tools, gen, extra, toolsJson);
    if (text === undefined) return undefined;
    stats.rendered++;
    const n = this.uses++;
    if (n < CROSS_CHECK_FIRST || n % CROSS_CHECK_EVERY === 0) {
      stats.checked++;
      let ref: string;
      try {
        ref = interpret();
      } catch (err) {
        // The interpreter rejects what the native rendering accepted: a difference too.
        stats.mismatches++;
        this.off = true;
        throw err;
      }
      if (ref !== text) {
        stats.mismatches++;
        this.off = true;
        return ref;
      }
    }
    return text;
  }

  get enabled(): boolean {
    return !this.off;
  }
}
