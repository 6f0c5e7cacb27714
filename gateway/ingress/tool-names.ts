// Tool names, checked on the caller's own tools array so a 400 names the caller's index and field
// (a Responses or Anthropic request's hosted tools are dropped before translation, which shifts the
// indexes, and its names live at `tools[i].name`, not the chat shape's `tools[i].function.name`).
// A tool call names its tool: two tools of one name are ambiguous to the model, and the layout
// learns each tool's lines by name. O(tools).
import { GatewayError } from '../../middleware/errors.ts';

/** What engines' tool parsers and the major APIs accept in a tool name. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Checks each tool's name as it comes: the pattern, then that no earlier tool has it. */
export class ToolNames {
  private readonly firstAt = new Map<string, number>();

  /** `field` is the name's path below `tools[i]` in the caller's API (`name`, `function.name`). */
  check(name: unknown, i: number, field: string): string {
    const at = `tools[${i}].${field}`;
    if (typeof name !== 'string' || !TOOL_NAME_PATTERN.test(name))
      throw new GatewayError('invalid_request', `${at} must be 1-128 letters, digits, _ . : -`, at);
    const first = this.firstAt.get(name);
    if (first !== undefined)
      throw new GatewayError(
        'invalid_request',
        `${at} '${name}' is already the name of tools[${first}]: tool names must be unique`,
        at,
      );
    this.firstAt.set(name, i);
    return name;
  }
}
