// Entry of a render pool thread. Worker threads do not inherit the main thread's tsx loader
// (registered programmatically by bin/ctxgate.js, or absent under vitest), so the thread
// registers its own before importing the TypeScript task.
import { register } from 'tsx/esm/api';

register();
const { default: task } = await import('./thread-task.ts');
export default task;
