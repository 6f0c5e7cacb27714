import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCapture } from '../../gateway/capture/index.ts';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import type { ChatRequest } from '../../middleware/types.ts';

const body = (n: number): ChatRequest => ({
  model: 'm',
  messages: [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'deploy with OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123 please' },
    ...Array.from({ length: n }, (_, i) => ({ role: 'user', content: `turn ${i}` })),
  ],
});

describe('traffic capture', () => {
  it('writes replayable request-stream JSONL per tenant/session with secrets redacted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cap-'));
    const cap = createCapture({ dir, sampleRate: 1, maxBytes: 1_000_000 });
    for (let i = 0; i < 3; i++)
      cap.record('acme', 'sess/1', body(i), {
        recorded_usage: { prompt_tokens: 10 + i, cached_tokens: i, completion_tokens: 1 },
      });
    cap.record('other', 'sess-2', body(0));
    await cap.close();
    expect(readdirSync(dir).sort()).toEqual(['acme', 'other']);
    const file = cap.pathFor('acme', 'sess/1');
    expect(file.startsWith(join(dir, 'acme'))).toBe(true);
    const raw = readFileSync(file, 'utf8');
    expect(raw).not.toContain('sk-proj-abcdefghijklmnopqrstuvwxyz0123');
    expect(raw).toContain('[REDACTED');
    const lines = raw
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l._meta.turn)).toEqual([0, 1, 2]);
    expect(lines[0]._meta.session).toBe('sess/1');
    const [s] = await readSessions([file]);
    expect(s.id).toBe('sess/1');
    expect(s.calls).toHaveLength(3);
    expect(s.calls[2].body.messages).toHaveLength(4);
    expect(s.calls[2].body).not.toHaveProperty('_meta');
    expect(s.calls[1].recordedUsage).toEqual({ prompt_tokens: 11, cached_tokens: 1, completion_tokens: 1 });
    expect(cap.stats().recorded).toBe(4);
  });

  it('samples whole sessions and respects the byte cap', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cap-'));
    const cap = createCapture({ dir, sampleRate: 0.5, maxBytes: 1_000_000 });
    for (let s = 0; s < 40; s++) for (let t = 0; t < 3; t++) cap.record('t', `s${s}`, body(t));
    await cap.close();
    const files = readdirSync(join(dir, 't'));
    expect(files.length).toBeGreaterThan(5);
    expect(files.length).toBeLessThan(35);
    for (const f of files)
      expect(
        readFileSync(join(dir, 't', f), 'utf8')
          .trim()
          .split('\n'),
      ).toHaveLength(3);
    expect(cap.stats().skipped_sampling).toBe((40 - files.length) * 3);

    const dir2 = mkdtempSync(join(tmpdir(), 'cap-'));
    const small = createCapture({ dir: dir2, sampleRate: 1, maxBytes: 600 });
    for (let t = 0; t < 10; t++) small.record('t', 's', body(t));
    await small.close();
    const written = readFileSync(small.pathFor('t', 's'), 'utf8');
    expect(Buffer.byteLength(written)).toBeLessThanOrEqual(600);
    expect(small.stats().dropped_size).toBeGreaterThan(0);
    const none = createCapture({ dir: join(dir2, 'none'), sampleRate: 0, maxBytes: 1000 });
    none.record('t', 's', body(0));
    await none.close();
    expect(existsSync(join(dir2, 'none'))).toBe(false);
  });
});
