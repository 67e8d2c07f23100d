import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cruise, type IForbiddenRuleType, type IReporterOutput } from 'dependency-cruiser';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '../..');
const { default: config } = (await import(pathToFileURL(join(REPO, '.dependency-cruiser.mjs')).href)) as {
  default: { forbidden: IForbiddenRuleType[] };
};
const SOURCE = ['shared', 'functions', 'runners', 'bin', 'infra', 'tools'];

/** The rule names each violation breaks, as `rule: from → to`. */
async function violationsIn(baseDir: string, folders: string[]): Promise<string[]> {
  const result: IReporterOutput = await cruise(folders, {
    baseDir,
    validate: true,
    ruleSet: { forbidden: config.forbidden },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
  });
  if (typeof result.output === 'string') throw new Error('expected the JSON result');
  return result.output.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
}

const trees: string[] = [];
afterAll(() => {
  for (const t of trees) rmSync(t, { recursive: true, force: true });
});

/** A throwaway source tree: path → content. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'rw-layers-'));
  trees.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

describe('the dependency direction (.dependency-cruiser.mjs)', () => {
  it('holds for the project: no wrong-way import and no cycle', async () => {
    expect(await violationsIn(REPO, SOURCE)).toEqual([]);
  });

  it('fails a domain module that imports an adapter', async () => {
    const root = tree({
      'shared/domain/run.ts':
        "import { store } from '../adapters/sqlite/store.ts';\nexport const run = store;\n",
      'shared/adapters/sqlite/store.ts': 'export const store = 1;\n',
    });

    expect(await violationsIn(root, ['shared'])).toEqual([
      'domain-is-pure: shared/domain/run.ts → shared/adapters/sqlite/store.ts',
    ]);
  });

  it('fails shared code that imports an entry point, and an adapter that calls a use case', async () => {
    const root = tree({
      'shared/app/runs.ts': 'export const submit = 1;\n',
      'shared/adapters/relay/launcher.ts':
        "import { submit } from '../../app/runs.ts';\nexport const l = submit;\n",
      'shared/composition/aws.ts':
        "import { h } from '../../functions/api/handler.ts';\nexport const c = h;\n",
      'functions/api/handler.ts': 'export const h = 1;\n',
    });

    expect((await violationsIn(root, ['shared', 'functions'])).sort()).toEqual([
      'adapters-on-ports: shared/adapters/relay/launcher.ts → shared/app/runs.ts',
      'composition-inside-shared: shared/composition/aws.ts → functions/api/handler.ts',
      'shared-not-on-entry-points: shared/composition/aws.ts → functions/api/handler.ts',
    ]);
  });

  it('fails an import cycle', async () => {
    const root = tree({
      'shared/app/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
      'shared/app/b.ts': "import { a } from './a.ts';\nexport const b = () => a;\n",
    });

    // One violation names the cycle, from whichever module the cruise reached first.
    expect(await violationsIn(root, ['shared'])).toEqual([
      expect.stringMatching(
        /^no-circular: shared\/app\/(a\.ts → shared\/app\/b|b\.ts → shared\/app\/a)\.ts$/,
      ),
    ]);
  });
});
