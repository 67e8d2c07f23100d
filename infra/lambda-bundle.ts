import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { rolldown } from 'rolldown';
import { type BundleSpec, CHUNK_NAMES, esbuildOptionsFor } from './bundling.ts';

export interface LambdaBundle {
  /** The files written beside `outfile` (relative to its directory): the entry and its chunks. */
  readonly files: readonly string[];
  /** Of those, the ones Node loads up to the end of the first call (`firstCallOutputs`): the entry and at most two chunks. */
  readonly firstCallFiles: readonly string[];
}

/** A module of the function kind's composition: the handler imports it, with `import()`, on its first call. */
const COMPOSITION = /^shared\/composition\//;

/** The output files of an esbuild split build that a handler's cold start loads (metafile keys). */
export interface FirstCallOutputs {
  /** The entry file and what it imports statically: loaded with the handler module. */
  readonly atLoad: readonly string[];
  /**
   * The function kind's composition chunk (an `import()` of a module under
   * shared/composition/) and what it imports statically beyond `atLoad`:
   * loaded by the first call. Empty for a function whose entry imports its
   * composition statically (the bare routes). Every other chunk (an SDK
   * client, an adapter, task preparation) loads only when its code runs.
   */
  readonly onFirstCall: readonly string[];
}

export function firstCallOutputs(meta: Metafile, entry: string): FirstCallOutputs {
  const closure = (start: string, seen: ReadonlySet<string>): string[] => {
    const loaded = new Set<string>();
    const load = (output: string): void => {
      if (loaded.has(output) || seen.has(output)) return;
      loaded.add(output);
      for (const i of meta.outputs[output]?.imports ?? []) {
        if (i.kind === 'import-statement' && !i.external) load(i.path);
      }
    };
    load(start);
    return [...loaded];
  };
  const atLoad = closure(entry, new Set());
  const compositions = atLoad.flatMap((o) =>
    (meta.outputs[o]?.imports ?? []).filter(
      (i) => i.kind === 'dynamic-import' && COMPOSITION.test(meta.outputs[i.path]?.entryPoint ?? ''),
    ),
  );
  if (compositions.length > 1) {
    throw new Error(
      `expected at most one composition chunk, found ${compositions.map((c) => c.path).join(', ')}`,
    );
  }
  const composition = compositions[0];
  return { atLoad, onFirstCall: composition === undefined ? [] : closure(composition.path, new Set(atLoad)) };
}

/**
 * Build one Lambda handler's asset: `outfile` (`index.mjs`) and the chunks it
 * loads on demand under `chunks/` beside it. Two passes:
 *
 * 1. esbuild with the stack's options (infra/bundling.ts `esbuildOptionsFor`):
 *    TypeScript, CommonJS interop, tree-shaking, defines, minified, split at
 *    every `import()`, into a scratch directory.
 * 2. rolldown re-chunks that output — plain ES modules — so that a cold
 *    start loads three files: the entry, one chunk of what it imports
 *    statically, and one chunk of the function kind's composition, which
 *    the first call imports (`firstCallOutputs`). esbuild gives each
 *    distinct set of entry points (the entry and every `import()`) that
 *    reaches a module a chunk of its own, so a module the handler needs that
 *    an SDK client's or an adapter's chunk also uses lands in a small chunk
 *    of its own: a function over the whole composition loaded 32 files
 *    before its first call answered, and Node's ES module loader pays about
 *    0.35 ms a file beyond the code (resolve, read, compile, link; measured
 *    here with empty modules). Two rolldown groups take those files into
 *    their two chunks; the rest keep rolldown's own splitting and load on
 *    demand, as before, and what loads with the module and what with the
 *    first call is unchanged (PollBackends, with nothing to poll, still
 *    answers without its composition). rolldown, not esbuild alone: esbuild
 *    has no way to group chunks; rolldown is the bundler vite builds with.
 *
 * The second pass minifies whitespace and local names only (no compression
 * over what esbuild already compressed) and keeps every module's side
 * effects: it moves code between files and drops only declarations nothing
 * reads (a banner's unused `require` binding, rolldown's unused helpers). Each esbuild file's banner (`require`, `__rwDirname`) stays that
 * code's own binding, and every chunk still lives in `chunks/`, so a module
 * that reads its directory at load reads the same one.
 */
export async function buildLambdaBundle(
  entry: string,
  outfile: string,
  spec: BundleSpec,
  options: { readonly absWorkingDir: string; readonly nodePaths?: string[] },
): Promise<LambdaBundle> {
  const scratch = mkdtempSync(join(tmpdir(), 'rw-lambda-'));
  try {
    const staged = join(scratch, 'index.mjs');
    const { metafile } = await build({
      ...esbuildOptionsFor(entry, staged, spec),
      absWorkingDir: options.absWorkingDir,
      ...(options.nodePaths === undefined ? {} : { nodePaths: options.nodePaths }),
      metafile: true,
    });
    const entryKey = Object.keys(metafile.outputs).find(
      (key) => resolve(options.absWorkingDir, key) === staged,
    );
    if (entryKey === undefined) throw new Error(`esbuild wrote no ${staged} for ${entry}`);
    const cold = firstCallOutputs(metafile, entryKey);
    const paths = (keys: readonly string[]) =>
      new Set(keys.map((key) => resolve(options.absWorkingDir, key)).filter((path) => path !== staged));
    const atLoad = paths(cold.atLoad);
    const onFirstCall = paths(cold.onFirstCall);

    const rechunk = await rolldown({
      input: { [basename(outfile).replace(/\.m?js$/, '')]: staged },
      platform: 'node',
      external: (id) => isBuiltin(id),
      treeshake: { moduleSideEffects: true },
      logLevel: 'warn',
    });
    try {
      const { output } = await rechunk.write({
        dir: dirname(outfile),
        format: 'es',
        entryFileNames: '[name].mjs',
        chunkFileNames: `${CHUNK_NAMES}.mjs`,
        minify: { compress: false, mangle: true, codegen: { removeWhitespace: true } },
        // rolldown's own helpers (its runtime module) load with the entry, which is always there first.
        codeSplitting: {
          groups: [
            { name: 'entry-deps', test: (id) => atLoad.has(id) || id.includes('rolldown/runtime') },
            { name: 'first-call', test: (id) => onFirstCall.has(id) },
          ],
        },
      });
      const chunks = output.flatMap((o) => (o.type === 'chunk' ? [o] : []));
      const entryChunk = chunks.find((c) => c.isEntry);
      if (entryChunk === undefined) throw new Error(`rolldown wrote no entry for ${entry}`);
      const composition = chunks.filter((c) => c.name === 'first-call');
      const loadedBy = (c: (typeof chunks)[number]) => [
        c.fileName,
        ...c.imports.filter((i) => !isBuiltin(i)),
      ];
      return {
        files: output.map((o) => o.fileName),
        firstCallFiles: [...new Set([...loadedBy(entryChunk), ...composition.flatMap(loadedBy)])],
      };
    } finally {
      await rechunk.close();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * `buildLambdaBundle` for a caller that cannot wait on a promise — the CDK's
 * local bundling (`tryBundle`) is synchronous, and rolldown has no
 * synchronous API — in a child process (infra/bin/bundle-lambda.ts) that
 * loads the TypeScript through tsx from the project root. Throws with the
 * child's output when the build fails.
 */
export function buildLambdaBundleSync(
  projectRoot: string,
  entry: string,
  outfile: string,
  spec: BundleSpec,
): void {
  const child = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      join(projectRoot, 'infra/bin/bundle-lambda.ts'),
      entry,
      outfile,
      JSON.stringify(spec),
    ],
    { cwd: projectRoot, encoding: 'utf8' },
  );
  if (child.status !== 0) {
    throw new Error(
      `bundling ${entry} failed (exit ${child.status ?? child.signal}):\n${child.stderr}${child.stdout}`,
    );
  }
}
