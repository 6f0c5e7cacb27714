// The overhead bench's chat bodies in the two other ingress APIs, so the same growing sessions can
// go through /v1/messages (Anthropic) and /v1/responses (OpenAI Responses) and be compared with the
// chat path in one run. Each conversion is what an agent of that API would send for the same
// conversation: system prompt, tool calls and tool results in that API's shape.
type Obj = Record<string, unknown>;
interface ChatMsg {
  role: string;
  content?: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}
interface ChatBody {
  model: string;
  messages: ChatMsg[];
  tools?: { function: { name: string; description?: string; parameters?: unknown } }[];
  max_tokens?: number;
  temperature?: number;
  stream?: boolean;
}

export function chatToAnthropic(json: string): string {
  const b = JSON.parse(json) as ChatBody;
  const system = b.messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content ?? '')
    .join('\n');
  const messages: Obj[] = [];
  for (const m of b.messages) {
    if (m.role === 'system') continue;
    if (m.role === 'tool') {
      const block = { type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content ?? '' };
      const last = messages.at(-1);
      if (last?.role === 'user' && Array.isArray(last.content)) (last.content as Obj[]).push(block);
      else messages.push({ role: 'user', content: [block] });
    } else if (m.role === 'assistant') {
      const content: Obj[] = m.content ? [{ type: 'text', text: m.content }] : [];
      for (const c of m.tool_calls ?? [])
        content.push({
          type: 'tool_use',
          id: c.id,
          name: c.function.name,
          input: JSON.parse(c.function.arguments) as unknown,
        });
      messages.push({ role: 'assistant', content });
    } else messages.push({ role: 'user', content: m.content ?? '' });
  }
  const tools = b.tools?.map((t) => ({
    name: t.function.name,
    description: t.function.description,
    input_schema: t.function.parameters,
  }));
  return JSON.stringify({
    model: b.model,
    system,
    messages,
    tools,
    max_tokens: b.max_tokens ?? 16,
    temperature: b.temperature,
    stream: b.stream,
  });
}

export function chatToResponses(json: string): string {
  const b = JSON.parse(json) as ChatBody;
  const instructions = b.messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content ?? '')
    .join('\n');
  const input: Obj[] = [];
  for (const m of b.messages) {
    if (m.role === 'system') continue;
    if (m.role === 'tool')
      input.push({ type: 'function_call_output', call_id: m.tool_call_id, output: m.content ?? '' });
    else if (m.role === 'assistant') {
      if (m.content)
        input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: m.content }] });
      for (const c of m.tool_calls ?? [])
        input.push({ type: 'function_call', call_id: c.id, name: c.function.name, arguments: c.function.arguments });
    } else input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: m.content ?? '' }] });
  }
  const tools = b.tools?.map((t) => ({
    type: 'function',
    name: t.function.name,
    description: t.function.description,
    parameters: t.function.parameters,
  }));
  return JSON.stringify({
    model: b.model,
    instructions,
    input,
    tools,
    max_output_tokens: b.max_tokens ?? 16,
    temperature: b.temperature,
    stream: b.stream,
    store: false,
  });
}
