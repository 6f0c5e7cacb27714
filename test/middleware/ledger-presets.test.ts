import { describe, expect, it } from 'vitest';
import { callEffects, parseExitCode, textModeCommand } from '../../middleware/ledger/semantics.ts';
import { shellEffects } from '../../middleware/ledger/shell.ts';

const fx = (cmd: string, cwd?: string): string[] => shellEffects(cmd, cwd).effects.map((e) => `${e.effect} ${e.uri}`);

describe('shell preset', () => {
  it('maps reads', () => {
    expect(fx('cat src/a.py')).toEqual(['read file://src/a.py']);
    expect(fx('head -n 20 src/a.py')).toEqual(['read file://src/a.py']);
    expect(fx('tail -5 ./b.txt')).toEqual(['read file://b.txt']);
    expect(fx("sed -n '10,20p' src/a.py")).toEqual(['read file://src/a.py']);
    expect(fx('grep -n "def foo" src/a.py')).toEqual(['read file://src/a.py']);
    expect(fx('grep -rn foo src/')).toEqual(['search dir://src']);
    expect(fx('ls -la src')).toEqual(['list dir://src']);
    expect(fx('nl -ba x.py')).toEqual(['read file://x.py']);
    expect(fx('less x.py')).toEqual(['read file://x.py']);
    expect(fx('cat -n src/a.py | sed -n 1,5p')).toEqual(['read file://src/a.py']);
  });
  it('maps writes', () => {
    expect(fx("sed -i 's/a/b/' src/a.py")).toEqual(['write file://src/a.py']);
    expect(fx('echo hi > out.txt')).toEqual(['write file://out.txt']);
    expect(fx('echo hi >> log.txt 2>&1')).toEqual(['write file://log.txt']);
    expect(fx('echo hi | tee a.txt')).toEqual(['write file://a.txt']);
    expect(fx('rm -f a.py')).toEqual(['write file://a.py']);
    expect(fx('mv a.py b.py')).toEqual(['write file://a.py', 'write file://b.py']);
    expect(fx('cp a.py b.py')).toEqual(['write file://b.py']);
    expect(fx('git checkout -- src/a.py')).toEqual(['write file://src/a.py']);
    expect(fx('patch -p1 <<EOF\n--- a/src/a.py\n+++ b/src/a.py\n@@\nEOF')).toEqual(['write file://src/a.py']);
    expect(fx('git apply fix.patch')).toEqual(['write dir://.']);
    expect(fx("cat <<'EOF' > src/new.py\nprint(1)\nEOF")).toEqual(['write file://src/new.py']);
  });
  it('resolves cwd and cd, ignores /dev/null', () => {
    expect(fx('cd /testbed && cat src/a.py 2>/dev/null')).toEqual(['read file:///testbed/src/a.py']);
    expect(fx('cat a.py', '/repo')).toEqual(['read file:///repo/a.py']);
  });
  it('python writes: named, via known script, or unknown', () => {
    expect(fx(`python -c "open('x.py','w').write('1')"`)).toEqual(['write file://x.py']);
    expect(shellEffects('python run.py').unknownWrite).toBe(true);
    expect(shellEffects('python -m pytest tests -x').unknownWrite).toBeUndefined();
    const made = shellEffects("cat > fix.py << 'EOF'\nwith open('src/a.py', 'w') as f:\n    f.write(s)\nEOF");
    expect(made.scripts).toEqual({ 'file://fix.py': ['file://src/a.py'] });
    expect(shellEffects('python fix.py', undefined, made.scripts).effects).toEqual([
      { uri: 'file://src/a.py', effect: 'write' },
    ]);
  });
  it('process state expires by TTL', () => {
    expect(shellEffects('ps aux').ttl?.calls).toBeGreaterThan(0);
    expect(fx('git status')).toEqual(['search dir://.']);
  });
});

describe('invalidation semantics', () => {
  it('file reads, listings (structural writes only) and searches (any write under the dir)', async () => {
    const { writeInvalidates } = await import('../../middleware/ledger/uri.ts');
    expect(writeInvalidates({ uri: 'file:///testbed/src/a.py' }, { uri: 'file://src/a.py', effect: 'read' })).toBe(
      true,
    );
    expect(writeInvalidates({ uri: 'file://src/b.py' }, { uri: 'file://src/a.py', effect: 'read' })).toBe(false);
    expect(writeInvalidates({ uri: 'file://src/a.py' }, { uri: 'dir://src', effect: 'list' })).toBe(false);
    expect(writeInvalidates({ uri: 'file://src/new.py', structural: true }, { uri: 'dir://src', effect: 'list' })).toBe(
      true,
    );
    expect(writeInvalidates({ uri: 'file://src/a.py' }, { uri: 'dir://src', effect: 'search' })).toBe(true);
    expect(writeInvalidates({ uri: 'file://docs/a.md' }, { uri: 'dir://src', effect: 'search' })).toBe(false);
    expect(writeInvalidates({ uri: 'dir://.', structural: true }, { uri: 'file://src/a.py', effect: 'read' })).toBe(
      true,
    );
  });
});

describe('tool presets', () => {
  const eff = (tool: string, args: Record<string, unknown>) =>
    callEffects({ tool, args }).effects.map((e) => `${e.effect} ${e.uri}`);
  it('str_replace_editor', () => {
    expect(eff('str_replace_editor', { command: 'view', path: '/r/a.py' })).toEqual(['read file:///r/a.py']);
    expect(eff('str_replace_editor', { command: 'view', path: '/r/src' })).toEqual(['list dir:///r/src']);
    for (const c of ['create', 'str_replace', 'insert', 'undo_edit'])
      expect(eff('str_replace_editor', { command: c, path: '/r/a.py' })).toEqual(['write file:///r/a.py']);
  });
  it('Claude Code', () => {
    expect(eff('Read', { file_path: '/r/a.ts' })).toEqual(['read file:///r/a.ts']);
    expect(eff('Edit', { file_path: '/r/a.ts' })).toEqual(['write file:///r/a.ts']);
    expect(eff('MultiEdit', { file_path: '/r/a.ts' })).toEqual(['write file:///r/a.ts']);
    expect(eff('Write', { file_path: '/r/b.ts' })).toEqual(['write file:///r/b.ts']);
    expect(eff('Bash', { command: 'cat /r/a.ts' })).toEqual(['read file:///r/a.ts']);
  });
  it('Codex apply_patch and shell', () => {
    const patch = '*** Begin Patch\n*** Update File: src/x.rs\n@@\n-a\n+b\n*** Add File: src/y.rs\n+c\n*** End Patch';
    expect(eff('apply_patch', { input: patch })).toEqual(['write file://src/x.rs', 'write file://src/y.rs']);
    expect(eff('shell', { command: ['bash', '-lc', 'cat src/x.rs'] })).toEqual(['read file://src/x.rs']);
    expect(eff('shell', { command: ['apply_patch', patch] })).toHaveLength(2);
  });
  it('mini-swe-agent bash tool and exit codes', () => {
    expect(eff('bash', { command: "sed -n '1,5p' pkg/m.py" })).toEqual(['read file://pkg/m.py']);
    expect(parseExitCode('<returncode>1</returncode>\n<output>\nboom</output>')).toBe(1);
    expect(parseExitCode('no code')).toBeNull();
  });
  it('reads every exit-code form, the first form present winning', () => {
    expect(parseExitCode('out\n[Command finished with exit code -2]')).toBe(-2);
    expect(parseExitCode('log\nExit code: 3\nmore')).toBe(3);
    expect(parseExitCode('log Exit code: 3')).toBeNull(); // only at a line start
    expect(parseExitCode('{"stdout": "", "exit_code" : 127}')).toBe(127);
    expect(parseExitCode('Exit code: 4\n<returncode> 0 </returncode>')).toBe(0);
    expect(parseExitCode('<returncode>x</returncode>\nExit code: 5')).toBe(5);
  });
  it('config rules', () => {
    const r = callEffects(
      { tool: 'fetch_doc', args: { target: { paths: ['docs/a.md', 'docs/b.md'] } } },
      { rules: [{ tool: 'fetch_doc', path: '$.target.paths', effect: 'read' }] },
    );
    expect(r.effects.map((e) => e.uri)).toEqual(['file://docs/a.md', 'file://docs/b.md']);
  });
  it('text mode: command from the fenced block, SWE-agent editor commands', () => {
    expect(textModeCommand('Let me look.\n```bash\ncat a.py\n```')).toBe('cat a.py');
    expect(callEffects({ tool: 'swe-agent', args: { command: 'open src/a.py' } }).openFile).toBe('file://src/a.py');
    expect(
      callEffects({ tool: 'swe-agent', args: { command: 'edit 1:2\nx\nend_of_edit' } }, { openFile: 'file://src/a.py' })
        .effects,
    ).toEqual([{ uri: 'file://src/a.py', effect: 'write' }]);
  });
});

describe('common file tools (Cline, Qwen Code, Cursor, the synthetic agent)', () => {
  const fx = (tool: string, args: Record<string, unknown>): string[] =>
    callEffects({ tool, args }).effects.map((e) => `${e.effect} ${e.uri}`);
  it('read_file reads, write_file and edit_file without a command write', () => {
    expect(fx('read_file', { path: 'src/a.py', start: 1, end: 20 })).toEqual(['read file://src/a.py']);
    expect(fx('read_file', { absolute_path: '/repo/a.py' })).toEqual(['read file:///repo/a.py']);
    expect(fx('write_file', { file_path: 'b.py', content: 'x' })).toEqual(['write file://b.py']);
    expect(callEffects({ tool: 'write_file', args: { file_path: 'b.py' } }).effects[0].structural).toBe(true);
    expect(fx('edit_file', { path: 'src/a.py', old: 'a', new: 'b' })).toEqual(['write file://src/a.py']);
    // edit_file with a command is the str_replace_editor shape, as before
    expect(fx('edit_file', { command: 'view', path: 'src/a.py' })).toEqual(['read file://src/a.py']);
  });
});
