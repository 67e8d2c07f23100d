import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadStaticSite } from '../../../bin/local-mode/static-site.ts';

function dist(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rw-site-'));
  mkdirSync(join(dir, 'static'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><script src="/static/app.js"></script>');
  writeFileSync(join(dir, 'static', 'app.js'), 'console.log("console");\n'.repeat(2000));
  return dir;
}

describe('loadStaticSite compression', () => {
  it('makes each file’s gzip and br forms when asked for, each decoding to the file and kept', () => {
    const site = loadStaticSite(dist());
    if (site === undefined) throw new Error('the fake console was not loaded');

    for (const path of ['/', '/static/app.js']) {
      const file = site.get(path);
      expect(file).toBeDefined();
      if (file === undefined) continue;
      expect(gunzipSync(file.gzip).equals(file.body)).toBe(true);
      expect(brotliDecompressSync(file.br).equals(file.body)).toBe(true);
      expect(file.br.length).toBeLessThan(file.body.length);
      expect(file.br).toBe(file.br); // made once, then the same buffer
    }
  });
});
