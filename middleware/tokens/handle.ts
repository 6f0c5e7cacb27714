// The tokenizer handle every middleware part uses: engine-exact encoding (special-token strings in
// the text are recognised, nothing like BOS is added), decoding, and chat-template rendering as
// vLLM/SGLang do it (@huggingface/jinja, same variables). Pure types plus the shared render helper.
import { Template } from '@huggingface/jinja';
import type { ChatMessage, ToolDef } from '../types.ts';
import { CheckedNative, nativeRenderFor } from './native-render.ts';
import {
  templateParsesArguments,
  toTemplateMessages,
  toTemplateTools,
  type TemplateMessage,
} from './template-input.ts';

export interface RenderOptions {
  tools?: ToolDef[];
  /** Default true: the prompt ends with the assistant header, as in a chat completion. */
  addGenerationPrompt?: boolean;
  /** Extra template variables (vLLM's chat_template_kwargs, e.g. enable_thinking). */
  extra?: Record<string, unknown>;
  /** JSON.stringify(tools) when the caller already has it (tokens/tools-key.ts): a native rendering
   * that remembers its tool block per array checks it against this instead of serialising again. */
  toolsJson?: string;
}

export interface TokenizerHandle {
  name: string;
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  renderChat(messages: ChatMessage[], opts?: RenderOptions): string;
  /** Strings the tokenizer never merges with neighbours (added tokens split before BPE). */
  specialTokens: readonly string[];
  bosToken?: string;
  eosToken?: string;
  templateSource: string;
  countTokens(text: string): number;
  /** encode() memoised by content hash (lru-cache); the returned array must not be mutated. */
  encodeCached(text: string): readonly number[];
}

/**
 * Compiles a chat template once and renders it with vLLM's variables; a bundled template with a
 * native rendering (native-render.ts) is rendered by that, cross-checked against the interpreter.
 */
export class ChatRenderer {
  private readonly template: Template;
  private readonly parseArgs: boolean;
  private readonly native: CheckedNative | undefined;

  constructor(
    readonly source: string,
    private readonly bosToken: string | undefined,
    private readonly eosToken: string | undefined,
  ) {
    this.template = new Template(source);
    this.parseArgs = templateParsesArguments(source);
    const native = nativeRenderFor(source);
    this.native = native ? new CheckedNative(native) : undefined;
  }

  render(messages: ChatMessage[], opts: RenderOptions = {}): string {
    const msgs = toTemplateMessages(messages, this.parseArgs);
    const tools = toTemplateTools(opts.tools);
    const gen = opts.addGenerationPrompt ?? true;
    // Inline closures, not named consts: tsx's keepNames names each named one per call (~1 µs).
    return (
      this.native?.render(msgs, tools, gen, opts.extra, () => this.run(msgs, tools, gen, opts.extra), opts.toolsJson) ??
      this.run(msgs, tools, gen, opts.extra)
    );
  }

  /** Renders with the jinja interpreter only (tests compare the native rendering with it). */
  interpret(messages: ChatMessage[], opts: RenderOptions = {}): string {
    return this.run(
      toTemplateMessages(messages, this.parseArgs),
      toTemplateTools(opts.tools),
      opts.addGenerationPrompt ?? true,
      opts.extra,
    );
  }

  private run(
    messages: TemplateMessage[],
    tools: ToolDef[] | undefined,
    gen: boolean,
    extra: Record<string, unknown> | undefined,
  ): string {
    return this.template.render({
      messages,
      tools,
      add_generation_prompt: gen,
      bos_token: this.bosToken ?? '',
      eos_token: this.eosToken ?? '',
      ...(extra ?? {}),
    });
  }
}
