// Agent traffic for `ctxgate loadtest`: recorded or synthetic sessions played turn by turn, each
// next body built from the recorded call with the answers this target actually returned put in
// place of the recorded assistant turns, so prompts grow the way the live agent's would and the
// engine's cache of its own answers is exercised. O(messages) per built body.
//
// A recorded call k's messages place the answer to call j (j < k) at index len(calls[j].messages)
// when the agent appends (all shipped formats do; agents that edit old outputs keep positions).
// Where the received answer cannot stand in without breaking the conversation (a tool-call count
// that differs from the recorded one, whose tool results follow), the received text is kept with
// the recorded tool calls, so the next body stays a valid request.
import type { ChatMessage, ChatRequest, ToolCall } from '../../middleware/types.ts';
import type { Session } from '../formats/types.ts';

/** What a target answered to one call, in chat form. */
export interface ReceivedAnswer {
  content: string | null;
  tool_calls?: ToolCall[];
}

export const PLAY_TAG_PREFIX = '[loadtest play ';

/**
 * Sessions handed to connections one after another. Play n ≥ 1 of the same recorded session
 * marks its first user message with a short tag so a replayed session is a new conversation to
 * the target's cache (a second play of identical text would hit the first play's prefix), while
 * the shared system prompt and tools still share a prefix as the same agent's would.
 */
export class SessionQueue {
  private next = 0;
  readonly sessions: Session[];
  constructor(sessions: Session[]) {
    if (!sessions.length) throw new Error('no sessions to play');
    this.sessions = sessions.map(internSession);
  }

  /** Sessions handed out so far. */
  get taken(): number {
    return this.next;
  }

  take(): SessionPlayer {
    const n = this.next++;
    const s = this.sessions[n % this.sessions.length];
    const play = Math.floor(n / this.sessions.length);
    return new SessionPlayer(s, play);
  }
}

/**
 * The same session with equal messages (and tool lists) as one object across its calls. Parsed
 * recordings hold a fresh copy of the whole history in every call; after interning, a body
 * serialiser that caches by object identity serialises each message once per run instead of once
 * per call. One JSON.stringify per message object, done before the load starts.
 */
export function internSession(s: Session): Session {
  const canon = new Map<string, object>();
  const intern = <T extends object>(v: T): T => {
    const key = JSON.stringify(v);
    const hit = canon.get(key);
    if (hit) return hit as T;
    canon.set(key, v);
    return v;
  };
  return {
    ...s,
    calls: s.calls.map((c) => ({
      ...c,
      body: {
        ...c.body,
        messages: c.body.messages.map(intern),
        ...(c.body.tools ? { tools: intern(c.body.tools) } : {}),
      },
    })),
  };
}

function tagged(m: ChatMessage, play: number): ChatMessage {
  const tag = `${PLAY_TAG_PREFIX}${play}]\n`;
  const content =
    typeof m.content === 'string'
      ? tag + m.content
      : Array.isArray(m.content)
        ? [{ type: 'text', text: tag }, ...m.content]
        : tag;
  return { ...m, content };
}

/**
 * One session's turns for one connection: body k, then the answer to it, then body k + 1.
 * Message objects are reused from one body to the next (recorded ones as recorded, substituted
 * ones made once), so serialisers may cache by object identity.
 */
export class SessionPlayer {
  readonly id: string;
  private turn = 0;
  /** The message that stands at position len(calls[j].messages) in place of the recorded answer j. */
  private readonly substituted: (ChatMessage | undefined)[] = [];
  private readonly idMap = new Map<string, string>();
  /** Recorded message → its stand-in (tool-call id remapped, play tag), made once. */
  private readonly standIns = new Map<ChatMessage, ChatMessage>();
  private readonly firstUser: ChatMessage | undefined;

  constructor(
    readonly session: Session,
    readonly play: number,
  ) {
    this.id = play === 0 ? session.id : `${session.id}#${play}`;
    if (play > 0) this.firstUser = session.calls[0]?.body.messages.find((m) => m.role === 'user');
  }

  get calls(): number {
    return this.session.calls.length;
  }

  get currentTurn(): number {
    return this.turn;
  }

  done(): boolean {
    return this.turn >= this.session.calls.length;
  }

  /** The chat body of the current turn, with earlier recorded answers replaced by received ones. */
  body(): ChatRequest {
    const calls = this.session.calls;
    const rec = calls[this.turn].body;
    const messages = rec.messages.slice();
    const replaced = new Set<number>();
    const firstUserAt = this.firstUser ? messages.findIndex((m) => m.role === 'user') : -1;
    for (let j = 0; j < this.turn; j++) {
      const at = calls[j].body.messages.length;
      const slot = messages[at];
      const sub = this.substituted[j];
      if (!sub || !slot || slot.role !== 'assistant') continue;
      messages[at] = sub;
      replaced.add(at);
    }
    for (let i = 0; i < messages.length; i++) {
      if (replaced.has(i)) continue;
      const m = messages[i];
      const remap = m.role === 'tool' && m.tool_call_id !== undefined && this.idMap.has(m.tool_call_id);
      const tag = i === firstUserAt;
      if (!remap && !tag) continue;
      let standIn = this.standIns.get(m);
      if (!standIn) {
        standIn = remap ? { ...m, tool_call_id: this.idMap.get(m.tool_call_id!) } : m;
        if (tag) standIn = tagged(standIn, this.play);
        this.standIns.set(m, standIn);
      }
      messages[i] = standIn;
    }
    return { ...rec, messages };
  }

  /** Records what the target answered to the current turn and moves to the next one. */
  advance(answer: ReceivedAnswer | undefined): void {
    const next = this.session.calls[this.turn + 1];
    const at = this.session.calls[this.turn].body.messages.length;
    const slot = next?.body.messages[at];
    if (answer && slot && slot.role === 'assistant') this.substituted[this.turn] = substitute(slot, answer, this.idMap);
    this.turn++;
  }
}

function substitute(recorded: ChatMessage, got: ReceivedAnswer, idMap: Map<string, string>): ChatMessage {
  const recCalls = recorded.tool_calls ?? [];
  const gotCalls = got.tool_calls ?? [];
  if (recCalls.length === 0) {
    // a text agent's turn: the next message is the agent's own (user) message, never a tool result
    return { role: 'assistant', content: got.content ?? '' };
  }
  if (gotCalls.length === recCalls.length) {
    recCalls.forEach((c, i) => idMap.set(c.id, gotCalls[i].id));
    return { role: 'assistant', content: got.content, tool_calls: gotCalls };
  }
  return { role: 'assistant', content: got.content ?? recorded.content ?? null, tool_calls: recCalls };
}
