// The gateway writes a request's record right after its response ends: tests poll for it against
// a generous deadline (a loaded CI machine), never a fixed count of tries.
export const RECORD_DEADLINE_MS = 60_000;

/** The record of request `id` from `/v1/gateway/requests/:id`; throws when none appears in time. */
export async function requestRecord<T>(gwUrl: string, id: string | null, pollMs = 20): Promise<T> {
  for (const end = Date.now() + RECORD_DEADLINE_MS; ; ) {
    const res = await fetch(`${gwUrl}/v1/gateway/requests/${id}`);
    if (res.status === 200) return (await res.json()) as T;
    await res.body?.cancel();
    if (Date.now() > end) throw new Error(`no request record for ${id} within ${RECORD_DEADLINE_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
