// One agent-like session for the replica tests: a growing conversation whose call i goes to the
// gateway at urlOf(i) through the official SDK, with the session id header; counts worker moves,
// the workers it met and the hit rate the workers reported.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';

export interface SessionRun {
  flips: number;
  homes: Set<string>;
  hitRate: number;
}

export async function agentSession(urlOf: (i: number) => string, model: string, calls: number): Promise<SessionRun> {
  const id = `agent-${randomUUID()}`;
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'You are a careful coding agent. Explain each step. '.repeat(30) },
  ];
  let last: string | undefined;
  let flips = 0;
  let prompt = 0;
  let cached = 0;
  const homes = new Set<string>();
  for (let i = 0; i < calls; i++) {
    messages.push({ role: 'user', content: `Step ${i}: inspect file_${i}.py and report what it does.` });
    const client = new OpenAI({
      baseURL: `${urlOf(i)}/v1`,
      apiKey: 'none',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': id },
    });
    const { data, response } = await client.chat.completions.create({ model, max_tokens: 8, messages }).withResponse();
    const worker = response.headers.get('x-ctxgate-worker') ?? '?';
    if (last !== undefined && worker !== last) flips++;
    last = worker;
    homes.add(worker);
    prompt += data.usage?.prompt_tokens ?? 0;
    cached += data.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    messages.push({ role: 'assistant', content: data.choices[0].message.content ?? '' });
  }
  return { flips, homes, hitRate: cached / prompt };
}
