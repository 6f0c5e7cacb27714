// The one-tool declaration (`bash` with a required `cmd`) the render and pipeline tests send.
import type { ToolDef } from '../../middleware/types.ts';

export const bashTools: ToolDef[] = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'run',
      parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
    },
  },
];
