#!/usr/bin/env node
// ctxgate runs its TypeScript sources directly through tsx (no build step):
// `npm ci` is all a fresh clone needs before `npx ctxgate`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
const code = await main(process.argv.slice(2));
if (typeof code === 'number') process.exitCode = code;
