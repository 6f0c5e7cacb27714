// The tokenizer handle every middleware part uses: engine-exact encoding (special-token strings in
// the text are recognised, nothing like BOS is added), decoding, and chat-template rendering as
// vLLM/SGLang do it (@huggingface/jinja, same variables). Pure types plus the shared render helper.
import { Template } from '@huggingface/jinja';
import type { ChatMessage, ToolDef } from '../types.ts';
import { templateParsesArguments, toTemplateMessages, toTemplateTools } from './template-input.ts';

export interface RenderOptions {
  tools?: ToolDef[];
  /** Default true: the prompt ends with the assistant header, as in a chat completion. */
  addGenerationPrompt?: boolean;
  /** Extra template variables (vLLM's chat_template_kwargs, e.g. enable_thinking). */
  extra?: Record<string, unknown>;
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

/** Compiles a chat template once and renders it with vLLM's variables. */
export class ChatRenderer {
  private readonly template: Template;
  private readonly parseArgs: boolean;

  constructor(
    readonly source: string,
    private readonly bosToken: string | undefined,
    private readonly eosToken: string | undefined,
  ) {
    this.template = new Template(source);
    this.parseArgs = templateParsesArguments(source);
  }

  render(messages: ChatMessage[], opts: RenderOptions = {}): string {
    return this.template.render({
      messages: toTemplateMessages(messages, this.parseArgs),
      tools: toTemplateTools(opts.tools),
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      bos_token: this.bosToken ?? '',
      eos_token: this.eosToken ?? '',
      ...(opts.extra ?? {}),
    });
  }
}
