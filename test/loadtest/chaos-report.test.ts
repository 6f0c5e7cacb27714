// bench chaos's "RSS back" verdict (#17's target): the end reading at rest within 10 % of the
// start's, a fall counting as back; the report says what the two readings are.
import { expect, it } from 'vitest';
import { RSS_BACK_WITHIN, rssBackOf } from '../../loadtest/chaos/report.ts';

it('RSS is back when the end reading is at most 10 % over the start, or below it', () => {
  expect(RSS_BACK_WITHIN).toBe(0.1);
  expect(rssBackOf(400, 440, 32, 10).back).toBe(true);
  expect(rssBackOf(400, 440.1, 32, 10).back).toBe(false);
  expect(rssBackOf(400, 300, 32, 10).back).toBe(true);
  expect(rssBackOf(400, 420, 32, 10).means).toMatch(
    /at rest after the run vs at rest after the warm-up, each read after 32 s idle/,
  );
});
