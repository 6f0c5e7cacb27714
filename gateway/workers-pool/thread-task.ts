// What a render pool thread runs: the pipeline's own render + tokenise + block-hash job
// (middleware/tokens/render-tokens.ts) with this thread's tokenizer handle, loaded once per
// tokenizer and template and kept (with its id caches) for the thread's life.
import { Piscina } from 'piscina';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { runOffloadJob, type OffloadJob, type OffloadReply } from '../../middleware/tokens/render-tokens.ts';
import type { TokenizerHandle } from '../../middleware/tokens/handle.ts';

const handles = new Map<string, Promise<TokenizerHandle>>();

export default async function task(job: OffloadJob): Promise<OffloadReply> {
  const key = `${job.tokenizer}\u0000${job.chatTemplateFile ?? ''}`;
  let h = handles.get(key);
  if (!h) handles.set(key, (h = loadTokenizer(job.tokenizer, { chatTemplateFile: job.chatTemplateFile })));
  const reply = runOffloadJob(await h, job);
  if (!reply.ok) return reply;
  // The ids' buffer goes back without a copy (a Piscina transferable wrapper).
  const movable = { [Piscina.transferableSymbol]: [reply.ids.buffer], [Piscina.valueSymbol]: reply };
  return Piscina.move(movable as never) as unknown as OffloadReply;
}
