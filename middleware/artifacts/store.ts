// Content-addressed artifact store for full evicted outputs: key = sha256 of the stored
// (already redacted) text, namespaced by tenant so one tenant can never read another's
// artifacts. Memory implementation is an LRU bounded by bytes; filesystem implementation
// writes <dir>/<tenant-digest>/<h[0..2]>/<h> atomically (write + rename).
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LRUCache } from 'lru-cache';
import { sha256Hex } from '../canonical-json.ts';
import { redact } from '../redaction/redact.ts';

export const DEFAULT_MEMORY_ARTIFACT_BYTES = 64 * 1024 * 1024;

export interface ArtifactStore {
  /** Redacts, stores and returns the sha256 (hex) of what was stored. */
  put(tenant: string, content: string): Promise<string>;
  get(tenant: string, hash: string): Promise<string | undefined>;
}

const HASH_RE = /^[0-9a-f]{64}$/;

export function isArtifactHash(h: string): boolean {
  return HASH_RE.test(h);
}

export class MemoryArtifactStore implements ArtifactStore {
  private readonly cache: LRUCache<string, string>;

  constructor(opts: { maxBytes?: number } = {}) {
    this.cache = new LRUCache<string, string>({
      maxSize: opts.maxBytes ?? DEFAULT_MEMORY_ARTIFACT_BYTES,
      sizeCalculation: (v) => Math.max(1, Buffer.byteLength(v)),
    });
  }

  async put(tenant: string, content: string): Promise<string> {
    const text = redact(content).text;
    const hash = sha256Hex(text);
    this.cache.set(`${tenant}\u0000${hash}`, text);
    return hash;
  }

  async get(tenant: string, hash: string): Promise<string | undefined> {
    if (!isArtifactHash(hash)) return undefined;
    return this.cache.get(`${tenant}\u0000${hash}`);
  }
}

export class FsArtifactStore implements ArtifactStore {
  constructor(private readonly dir: string) {}

  private path(tenant: string, hash: string): string {
    // Tenant names are hashed so no tenant string can traverse out of the store directory.
    return join(this.dir, sha256Hex(`tenant:${tenant}`).slice(0, 24), hash.slice(0, 2), hash);
  }

  async put(tenant: string, content: string): Promise<string> {
    const text = redact(content).text;
    const hash = sha256Hex(text);
    const p = this.path(tenant, hash);
    await mkdir(join(p, '..'), { recursive: true });
    const tmp = `${p}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await writeFile(tmp, text, 'utf8');
    await rename(tmp, p);
    return hash;
  }

  async get(tenant: string, hash: string): Promise<string | undefined> {
    if (!isArtifactHash(hash)) return undefined;
    try {
      const text = await readFile(this.path(tenant, hash), 'utf8');
      // A corrupted file must not be served as the artifact it claims to be.
      return sha256Hex(text) === hash ? text : undefined;
    } catch {
      return undefined;
    }
  }
}
