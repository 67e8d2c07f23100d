import { describe, expect, it } from 'vitest';
import { jsonLineLogger } from '../../../shared/lib/logger.ts';

const recording = (level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT', env = {}) => {
  const lines: string[] = [];
  const logger = jsonLineLogger({ service: 'remote-worker', level, write: (l) => lines.push(l), env });
  return { logger, entries: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>), lines };
};

describe('jsonLineLogger', () => {
  it('writes one JSON line in the shape Powertools writes, with the fields merged in', () => {
    const { logger, entries } = recording('INFO', { _X_AMZN_TRACE_ID: 'Root=1-abc-def;Parent=1;Sampled=0' });
    logger.info('request refused', { code: 'unauthorized', path: '/runs' });
    const [entry] = entries();
    expect(entry).toMatchObject({
      level: 'INFO',
      message: 'request refused',
      service: 'remote-worker',
      xray_trace_id: '1-abc-def',
      code: 'unauthorized',
      path: '/runs',
    });
    expect(Number.isNaN(Date.parse(String(entry?.timestamp)))).toBe(false);
  });

  it('drops entries below its level and writes nothing at SILENT', () => {
    const info = recording('INFO');
    info.logger.debug('not shown');
    info.logger.warn('shown');
    expect(info.entries().map((e) => e.level)).toEqual(['WARN']);
    const silent = recording('SILENT');
    silent.logger.error('not shown either');
    expect(silent.lines).toEqual([]);
  });

  it('formats an error, given alone or as a field, with its name, message, location and cause', () => {
    const { logger, entries } = recording('DEBUG');
    const error = new TypeError('bad thing', { cause: new Error('underneath') });
    logger.error('request failed', error);
    logger.error('request failed', { path: '/runs', error });
    for (const entry of entries()) {
      expect(entry.error).toMatchObject({
        name: 'TypeError',
        message: 'bad thing',
        cause: { message: 'underneath' },
      });
      expect(String((entry.error as { location: string }).location)).toMatch(/logger\.test\.ts:\d+$/);
    }
  });

  it('survives a circular field and a bigint, and keeps a string field as `extra`', () => {
    const { logger, entries } = recording('INFO');
    const loop: Record<string, unknown> = { name: 'loop' };
    loop.self = loop;
    logger.info('odd fields', { loop, big: 10n }, 'free text');
    expect(entries()[0]).toMatchObject({ loop: { name: 'loop' }, big: '10', extra: 'free text' });
  });
});
