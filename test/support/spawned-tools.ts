import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import ts from 'typescript';

/**
 * The programs and Python modules source code starts, found statically, so
 * test/integration/prerequisites.test.ts can hold them against
 * bin/prerequisites/sets.ts.
 *
 * What counts as starting a program: a call of spawn, spawnSync, execFile,
 * execFileSync, execSync or exec (and promisified aliases), or of a helper in
 * the same file that passes one of its parameters on as the program
 * (`asPostgres(bin, 'initdb')`). The program argument is followed through
 * literals, `??`/`||`/`?:`, `join(…, name)`, same-file constants, parameters'
 * defaults, destructuring of an array literal, functions that return it, and
 * imported constants; wrappers are looked through (`sh -c SCRIPT` gives the
 * script's commands, `runuser … -- CMD`, `unshare CMD`, `flock FILE CMD`).
 * `python3 -m MOD` and `python3 -c 'import MOD'` give modules. Shell scripts
 * give their `command -v NAME` checks. What cannot be followed (a value read
 * at run time) yields nothing: the test names those places in its exemptions.
 *
 * @example
 * const { commands } = scanSources([{ path: 'a.ts', text: "execFileSync('jq', ['.'])" }]);
 * // commands: Map { 'jq' => ['a.ts:1'] }
 */

export interface Scan {
  /** Program name → where it is started (`file:line`). */
  readonly commands: Map<string, string[]>;
  /** Python module (top-level name) → where it is imported or run with -m. */
  readonly modules: Map<string, string[]>;
}

const SPAWNERS = new Set(['spawn', 'spawnSync', 'execFile', 'execFileSync', 'exec', 'execSync']);
/** Shell words that are not programs on PATH. */
const SHELL_WORDS = new Set(
  'if then else elif fi for do done while until case esac in exit trap printf echo cd set export exec test [ [[ command wait read local return shift unset : . eval'.split(
    ' ',
  ),
);
const NAME = /^[a-z][a-z0-9_.+-]*$/;

type Token = { readonly text?: string; readonly expr?: ts.Expression };

interface File {
  readonly path: string;
  readonly source: ts.SourceFile;
}

export function scanSources(files: readonly { path: string; text: string }[]): Scan {
  const parsed: File[] = files.map((f) => ({
    path: f.path,
    source: ts.createSourceFile(f.path, f.text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS),
  }));
  const byPath = new Map(parsed.map((f) => [f.path, f]));
  const commands = new Map<string, string[]>();
  const modules = new Map<string, string[]>();
  const add = (map: Map<string, string[]>, name: string, where: string) =>
    map.set(name, [...(map.get(name) ?? []), where]);

  for (const file of parsed) {
    const at = (node: ts.Node) =>
      `${file.path}:${file.source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;

    /**
     * Declarations of `name` seen from `site`: the innermost enclosing
     * function that declares it wins, then the file, then an import.
     * Initializers, parameters' defaults and assignments count.
     */
    const definitions = (name: string, seen: Set<string>, site?: ts.Node): ts.Expression[] => {
      const scopes: ts.Node[] = [];
      for (let n: ts.Node | undefined = site; n !== undefined; n = n.parent) {
        if (ts.isFunctionLike(n)) scopes.push(n);
      }
      scopes.push(file.source);
      for (const scope of scopes) {
        const { declared, found } = declarationsIn(scope, name, seen);
        if (declared) return found;
      }
      return imported(name);
    };

    const declarationsIn = (scope: ts.Node, name: string, seen: Set<string>) => {
      const found: ts.Expression[] = [];
      let declared = false;
      const visit = (node: ts.Node) => {
        if (ts.isVariableDeclaration(node)) {
          if (ts.isIdentifier(node.name) && node.name.text === name) {
            declared = true;
            if (node.initializer) found.push(node.initializer);
          }
          if (ts.isArrayBindingPattern(node.name)) {
            const first = node.name.elements[0];
            if (
              first &&
              ts.isBindingElement(first) &&
              ts.isIdentifier(first.name) &&
              first.name.text === name
            ) {
              declared = true;
              if (node.initializer) found.push(...firstElements(node.initializer, seen));
              if (first.initializer) found.push(first.initializer);
            }
          }
        }
        if (ts.isParameter(node) && ts.isIdentifier(node.name) && node.name.text === name) {
          declared = true;
          if (node.initializer) found.push(node.initializer);
        }
        if (
          ts.isBinaryExpression(node) &&
          node.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
          ts.isIdentifier(node.left) &&
          node.left.text === name
        ) {
          found.push(node.right);
        }
        ts.forEachChild(node, visit);
      };
      visit(scope);
      return { declared, found };
    };

    /** An imported constant, from a scanned file. */
    const imported = (name: string): ts.Expression[] => {
      for (const statement of file.source.statements) {
        if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
        const names = statement.importClause?.namedBindings;
        if (!names || !ts.isNamedImports(names) || !names.elements.some((e) => e.name.text === name))
          continue;
        const target = byPath.get(join(file.path, '..', statement.moduleSpecifier.text));
        if (!target) continue;
        for (const s of target.source.statements) {
          if (!ts.isVariableStatement(s)) continue;
          for (const d of s.declarationList.declarations) {
            if (ts.isIdentifier(d.name) && d.name.text === name && d.initializer) return [d.initializer];
          }
        }
      }
      return [];
    };

    /** The first element of an array-valued expression (`const [file, ...args] = X`). */
    const firstElements = (expr: ts.Expression, seen: Set<string>): ts.Expression[] => {
      const e = unwrap(expr);
      if (ts.isArrayLiteralExpression(e)) {
        const first = e.elements[0];
        if (!first) return [];
        return ts.isSpreadElement(first) ? firstElements(first.expression, seen) : [first];
      }
      if (ts.isConditionalExpression(e))
        return [...firstElements(e.whenTrue, seen), ...firstElements(e.whenFalse, seen)];
      if (ts.isIdentifier(e) && !seen.has(e.text)) {
        const next = new Set(seen).add(e.text);
        return definitions(e.text, next, e).flatMap((d) => firstElements(d, next));
      }
      return [];
    };

    /** Function `name` in this file: its return expressions (arrow bodies included). */
    const returns = (name: string): ts.Expression[] => {
      const out: ts.Expression[] = [];
      const collect = (body: ts.Node) => {
        const visit = (node: ts.Node) => {
          if (ts.isReturnStatement(node) && node.expression) out.push(node.expression);
          if (!ts.isFunctionLike(node)) ts.forEachChild(node, visit);
        };
        ts.forEachChild(body, visit);
      };
      const visit = (node: ts.Node) => {
        if (ts.isFunctionDeclaration(node) && node.name?.text === name && node.body) collect(node.body);
        if (
          ts.isVariableDeclaration(node) &&
          ts.isIdentifier(node.name) &&
          node.name.text === name &&
          node.initializer &&
          ts.isArrowFunction(node.initializer)
        ) {
          const body = node.initializer.body;
          if (ts.isBlock(body)) collect(body);
          else out.push(body);
        }
        ts.forEachChild(node, visit);
      };
      visit(file.source);
      return out;
    };

    /** Every program name `expr` can be, as far as the source tells. */
    const programs = (expr: ts.Expression | undefined, seen = new Set<string>()): string[] => {
      if (!expr) return [];
      const e = unwrap(expr);
      if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e))
        return e.text ? [basename(e.text)] : [];
      if (ts.isIdentifier(e)) {
        if (seen.has(e.text)) return [];
        const next = new Set(seen).add(e.text);
        return definitions(e.text, next, e).flatMap((d) => programs(d, next));
      }
      if (ts.isBinaryExpression(e)) {
        const op = e.operatorToken.kind;
        if (op === ts.SyntaxKind.QuestionQuestionToken || op === ts.SyntaxKind.BarBarToken) {
          return [...programs(e.left, seen), ...programs(e.right, seen)];
        }
        return [];
      }
      if (ts.isConditionalExpression(e))
        return [...programs(e.whenTrue, seen), ...programs(e.whenFalse, seen)];
      if (ts.isCallExpression(e) && ts.isIdentifier(e.expression)) {
        const callee = e.expression.text;
        // join(dir, 'kubectl'), resolve(REPO, 'runners/…'): the program is the last part.
        if (callee === 'join' || callee === 'resolve')
          return programs(e.arguments[e.arguments.length - 1], seen);
        if (seen.has(`${callee}()`)) return [];
        const next = new Set(seen).add(`${callee}()`);
        return returns(callee).flatMap((r) => programs(r, next));
      }
      return [];
    };

    /** A string-valued expression's text, where the source holds it. */
    const text = (expr: ts.Expression, seen = new Set<string>()): string | undefined => {
      const e = unwrap(expr);
      if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return e.text;
      if (ts.isTemplateExpression(e))
        return [e.head.text, ...e.templateSpans.map((s) => s.literal.text)].join(' ');
      if (ts.isIdentifier(e) && !seen.has(e.text)) {
        const [d] = definitions(e.text, new Set(seen).add(e.text), e);
        return d === undefined ? undefined : text(d, new Set(seen).add(e.text));
      }
      // ['import json', '…'].join('\n')
      if (
        ts.isCallExpression(e) &&
        ts.isPropertyAccessExpression(e.expression) &&
        e.expression.name.text === 'join' &&
        ts.isArrayLiteralExpression(unwrap(e.expression.expression))
      ) {
        const parts = (unwrap(e.expression.expression) as ts.ArrayLiteralExpression).elements.map((x) =>
          text(x, seen),
        );
        return parts.every((p) => p !== undefined) ? parts.join('\n') : undefined;
      }
      return undefined;
    };

    /** An argv array as tokens; spreads of array constants are opened. */
    const tokens = (expr: ts.Expression | undefined, seen = new Set<string>()): Token[] => {
      if (!expr) return [];
      const e = unwrap(expr);
      if (ts.isIdentifier(e) && !seen.has(e.text)) {
        const next = new Set(seen).add(e.text);
        const [d] = definitions(e.text, next, e);
        return d === undefined ? [] : tokens(d, next);
      }
      // `cond ? ['-c', SCRIPT] : [file]`: both argvs' words, which is what the names are read from.
      if (ts.isConditionalExpression(e)) return [...tokens(e.whenTrue, seen), ...tokens(e.whenFalse, seen)];
      if (!ts.isArrayLiteralExpression(e)) return [];
      return e.elements.flatMap((el): Token[] => {
        if (ts.isSpreadElement(el)) return tokens(el.expression, seen);
        const t = text(el);
        return [t === undefined ? { expr: el } : { text: t, expr: el }];
      });
    };

    const namesOf = (token: Token | undefined): string[] =>
      token === undefined ? [] : token.expr ? programs(token.expr) : token.text ? [basename(token.text)] : [];

    /** Records `program` and whatever it runs in turn, from its argv. */
    const record = (names: readonly string[], argv: readonly Token[], where: string) => {
      for (const name of names) {
        if (!NAME.test(name)) continue;
        add(commands, name, where);
        const words = argv.map((t) => t.text);
        const after = (i: number) => argv.slice(i);
        const firstPositional = (skip: number) => {
          let i = 0;
          let skipped = 0;
          while (i < argv.length) {
            const w = words[i];
            if (w?.startsWith('-')) i++;
            else if (skipped < skip) {
              skipped++;
              i++;
            } else break;
          }
          return i;
        };
        if (name === 'sh' || name === 'bash') {
          const script = words[words.indexOf('-c') + 1];
          if (words.includes('-c') && script !== undefined) {
            for (const command of shellCommands(script)) add(commands, command, where);
          }
        } else if (name === 'runuser' || name === 'sudo') {
          const i = words.indexOf('--');
          if (i >= 0) record(namesOf(argv[i + 1]), after(i + 2), where);
        } else if (['unshare', 'setsid', 'env', 'nice', 'timeout', 'flock'].includes(name)) {
          const i = firstPositional(name === 'timeout' || name === 'flock' ? 1 : 0);
          record(namesOf(argv[i]), after(i + 1), where);
        } else if (/^python3?(\.\d+)?$/.test(name)) {
          const m = words.indexOf('-m');
          const c = words.indexOf('-c');
          const mod = words[m + 1];
          if (m >= 0 && mod !== undefined) add(modules, mod.split('.')[0] ?? mod, where);
          const script = words[c + 1];
          if (c >= 0 && script !== undefined)
            for (const mod of pythonImports(script)) add(modules, mod, where);
        }
      }
    };

    // Helpers that pass a parameter on as the program: name → that parameter's index.
    const helpers = new Map<string, number>();
    const spawnCalls: { call: ts.CallExpression; index: number }[] = [];
    const calleeName = (call: ts.CallExpression) =>
      ts.isIdentifier(call.expression) ? call.expression.text : undefined;
    const aliases = new Set<string>();
    const visitAliases = (node: ts.Node) => {
      // const execFileAsync = promisify(execFile)
      if (
        ts.isVariableDeclaration(node) &&
        ts.isIdentifier(node.name) &&
        node.initializer &&
        ts.isCallExpression(node.initializer) &&
        calleeName(node.initializer) === 'promisify' &&
        node.initializer.arguments[0] &&
        ts.isIdentifier(node.initializer.arguments[0]) &&
        SPAWNERS.has(node.initializer.arguments[0].text)
      ) {
        aliases.add(node.name.text);
      }
      ts.forEachChild(node, visitAliases);
    };
    visitAliases(file.source);
    const isSpawner = (name: string | undefined) =>
      name !== undefined && (SPAWNERS.has(name) || aliases.has(name) || helpers.has(name));

    /** The parameter a helper passes on as the program, directly or through a wrapper's argv. */
    const passedParameter = (fn: ts.SignatureDeclaration, program: Token[]): number | undefined => {
      const params = fn.parameters.map((p) => (ts.isIdentifier(p.name) ? p.name.text : ''));
      for (const token of program) {
        let e = token.expr === undefined ? undefined : unwrap(token.expr);
        if (e && ts.isCallExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === 'join') {
          e = e.arguments[e.arguments.length - 1];
        }
        if (e && ts.isIdentifier(e) && params.includes(e.text)) return params.indexOf(e.text);
      }
      return undefined;
    };

    // Two passes: a helper found in the first is a spawner in the second.
    for (let pass = 0; pass < 2; pass++) {
      spawnCalls.length = 0;
      const visit = (node: ts.Node, fn: ts.SignatureDeclaration | undefined, fnName: string | undefined) => {
        if (ts.isCallExpression(node) && isSpawner(calleeName(node))) {
          const index = helpers.get(calleeName(node) ?? '') ?? 0;
          spawnCalls.push({ call: node, index });
          if (fn && fnName && !helpers.has(fnName)) {
            const first = node.arguments[index];
            const argv = tokens(node.arguments[index + 1]);
            const words = argv.map((t) => t.text);
            // The program itself, or what `runuser … --` runs.
            const candidates: Token[] = first ? [{ expr: first }] : [];
            const dashes = words.indexOf('--');
            if (dashes >= 0 && argv[dashes + 1]) candidates.push(argv[dashes + 1]!);
            const param = passedParameter(fn, candidates);
            if (param !== undefined) helpers.set(fnName, param);
          }
        }
        let nextFn = fn;
        let nextName = fnName;
        if (ts.isFunctionDeclaration(node) && node.name) {
          nextFn = node;
          nextName = node.name.text;
        } else if (
          ts.isVariableDeclaration(node) &&
          ts.isIdentifier(node.name) &&
          node.initializer &&
          (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))
        ) {
          nextFn = node.initializer;
          nextName = node.name.text;
        }
        ts.forEachChild(node, (child) => visit(child, nextFn, nextName));
      };
      visit(file.source, undefined, undefined);
    }
    for (const { call, index } of spawnCalls) {
      record(programs(call.arguments[index]), tokens(call.arguments[index + 1]), at(call));
    }
  }
  return { commands, modules };
}

const unwrap = (e: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e)
    ? unwrap(e.expression)
    : e;

/** The first word of each command in a shell script (`"$1/pg_ctl"` is pg_ctl). */
export function shellCommands(script: string): string[] {
  const out: string[] = [];
  for (const segment of script.split(/[;\n|&()]+|\$\(|`/)) {
    const words = segment.trim().split(/\s+/);
    // Assignments before the command (`LANG=C cmd`) are not it.
    let word = words.find((w) => !/^\w+=/.test(w) && w !== '!') ?? '';
    word = word.replace(/^["']|["']$/g, '');
    if (word.startsWith('$') && word.includes('/')) word = word.slice(word.lastIndexOf('/') + 1);
    word = word.replace(/["']/g, '');
    if (word === '' || word.startsWith('$') || word.startsWith('>') || word.startsWith('<')) continue;
    if (SHELL_WORDS.has(word) || !NAME.test(word)) continue;
    out.push(word);
  }
  return out;
}

/** Top-level module names a Python snippet imports. */
export function pythonImports(script: string): string[] {
  const out: string[] = [];
  for (const line of script.split(/[\n;]/)) {
    const from = /^\s*from\s+([\w.]+)\s+import\b/.exec(line);
    if (from?.[1]) out.push(from[1].split('.')[0]!);
    const imp = /^\s*import\s+(.+)$/.exec(line);
    if (imp?.[1]) {
      for (const part of imp[1].split(',')) {
        const name = part.trim().split(/\s+/)[0]?.split('.')[0];
        if (name) out.push(name);
      }
    }
  }
  return out;
}

/** Every .ts, .sh and .py file under `dirs` (relative to `root`). */
export function scanTree(root: string, dirs: readonly string[]): Scan {
  const ts: { path: string; text: string }[] = [];
  const shell: { path: string; text: string }[] = [];
  // Python the suite runs as a file (test/support/moto_enforcing.py): its imports count as the suite's.
  const python: { path: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir))) {
      if (name === 'node_modules') continue;
      const path = join(dir, name);
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (name.endsWith('.ts')) ts.push({ path, text: readFileSync(join(root, path), 'utf8') });
      else if (name.endsWith('.sh')) shell.push({ path, text: readFileSync(join(root, path), 'utf8') });
      else if (name.endsWith('.py')) python.push({ path, text: readFileSync(join(root, path), 'utf8') });
    }
  };
  for (const dir of dirs) walk(dir);
  const scan = scanSources(ts);
  for (const file of shell) {
    file.text.split('\n').forEach((line, i) => {
      for (const m of line.matchAll(/command -v "?([a-z][a-z0-9_.+-]*)"?/g)) {
        const name = m[1]!;
        scan.commands.set(name, [...(scan.commands.get(name) ?? []), `${relative('.', file.path)}:${i + 1}`]);
      }
    });
  }
  for (const file of python) {
    for (const mod of pythonImports(file.text)) {
      scan.modules.set(mod, [...(scan.modules.get(mod) ?? []), file.path]);
    }
  }
  // A module that is one of the scanned files (moto_enforcing.py imports moto_server.py beside it) is the
  // suite's own, not something to install.
  for (const file of python) scan.modules.delete(basename(file.path, '.py'));
  return scan;
}
