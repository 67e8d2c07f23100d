/**
 * Injected first into the relay's and the task shim's ESM bundles (esbuild `--inject`): some
 * dependencies are CommonJS that `require` Node built-ins (`yaml` does
 * `require('process')`), which an ES module cannot do by itself. A global
 * `require` made for this file lets esbuild's require shim find them.
 */
import { createRequire } from 'node:module';

const scope = globalThis as { require?: NodeJS.Require };
scope.require ??= createRequire(import.meta.url);
